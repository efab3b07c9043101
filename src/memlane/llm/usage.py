"""``UsageCounter``: thread-safe token, latency and cost accounting over every language-model call."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from memlane.errors import ConfigError
from memlane.llm.base import Usage


class CallRecord(BaseModel):
    """One recorded call: which model, what it consumed, how long it took and what it cost."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    usage: Usage
    latency: float
    cost: float = Field(description="in the currency of the configured prices; 0 when the model has no price")
    ok: bool = True


class Price(BaseModel):
    """Price of a model per million prompt and completion tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_per_million: float = Field(default=0.0, ge=0.0)
    completion_per_million: float = Field(default=0.0, ge=0.0)

    def cost(self, usage: Usage) -> float:
        """The cost of ``usage`` at this price."""
        return (
            usage.prompt_tokens * self.prompt_per_million + usage.completion_tokens * self.completion_per_million
        ) / 1_000_000


class UsageCounter:
    """Counts tokens, latency and cost per call; share one between clients to total a whole pipeline.

    ``prices`` maps a model name to its ``Price``; models without a price cost 0 (local models).
    ``keep`` bounds how many per-call records are kept (totals are always exact).
    """

    def __init__(self, prices: Mapping[str, Price] | None = None, *, keep: int = 1000) -> None:
        if keep < 0:
            raise ConfigError(f"keep must not be negative, got {keep}")
        self._prices = dict(prices or {})
        self._keep = keep
        self._lock = threading.Lock()
        self._records: list[CallRecord] = []
        self._usage = Usage()
        self._cost = 0.0
        self._calls = 0
        self._failures = 0
        self._latency = 0.0

    def record(self, model: str, usage: Usage, latency: float, *, ok: bool = True) -> CallRecord:
        """Add one call; returns its record (with its cost)."""
        price = self._prices.get(model)
        rec = CallRecord(model=model, usage=usage, latency=latency, cost=price.cost(usage) if price else 0.0, ok=ok)
        with self._lock:
            self._calls += 1
            self._failures += 0 if ok else 1
            self._usage = self._usage + usage
            self._cost += rec.cost
            self._latency += latency
            if self._keep:
                self._records.append(rec)
                del self._records[: max(0, len(self._records) - self._keep)]
        return rec

    @property
    def calls(self) -> int:
        """How many calls were recorded."""
        return self._calls

    @property
    def failures(self) -> int:
        """How many recorded calls failed."""
        return self._failures

    @property
    def usage(self) -> Usage:
        """Tokens over all recorded calls."""
        return self._usage

    @property
    def cost(self) -> float:
        """Cost over all recorded calls."""
        return self._cost

    @property
    def latency(self) -> float:
        """Seconds spent in calls, summed."""
        return self._latency

    def records(self) -> list[CallRecord]:
        """The most recent per-call records, oldest first."""
        with self._lock:
            return list(self._records)
