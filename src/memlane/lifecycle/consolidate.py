"""Consolidation: for a new candidate and related memories, decide ADD, NOOP, MERGE or SUPERSEDE with validity in time."""

from __future__ import annotations

import enum
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from memlane.errors import LLMError
from memlane.extraction.base import Candidate
from memlane.extraction.parsing import complete_structured
from memlane.extraction.prompts import consolidate as consolidate_prompt
from memlane.lifecycle.dedup import DedupThresholds, is_similar, normalise_text
from memlane.llm.base import ChatModel
from memlane.models import TYPED_KINDS, MemoryItem, MemoryKind, as_utc

log = logging.getLogger(__name__)

#: Metadata keys of a typed memory's structured claim ("Maya" / "residence" / "Denver").
SUBJECT, ATTRIBUTE, VALUE = "subject", "attribute", "value"


class Action(enum.StrEnum):
    """What to do with a new candidate."""

    ADD = "ADD"
    NOOP = "NOOP"
    MERGE = "MERGE"
    SUPERSEDE = "SUPERSEDE"


class Decision(BaseModel):
    """A consolidation decision and why.

    ``targets``: for NOOP the existing duplicate, for MERGE the one memory to merge into, for SUPERSEDE the memories
    that stop being valid when the candidate is stored. An ADD of a claim that is already outdated (it is older
    than a stored contradicting one) carries ``valid_until`` and ``superseded_by`` for the new memory itself.
    """

    model_config = ConfigDict(extra="forbid")

    action: Action
    targets: list[str] = Field(default_factory=list)
    reason: str = ""
    valid_until: datetime | None = None
    superseded_by: str | None = None
    decided_by: str = "rules"


@dataclass(frozen=True)
class Related:
    """An existing memory related to the candidate, with its cosine similarity to it (0 if unknown)."""

    item: MemoryItem
    similarity: float = 0.0


@runtime_checkable
class Consolidator(Protocol):
    """Decides how a new candidate relates to existing memories; never raises for a bad model reply."""

    def decide(self, candidate: Candidate, related: Sequence[Related], *, at: datetime) -> Decision:
        """The decision for ``candidate``, said at ``at`` (its source message's time), given ``related``."""
        ...


def _fold(value: object) -> str | None:
    """Case-folded, whitespace collapsed, trailing punctuation dropped ("Boston." and "boston" agree)."""
    if value is None:
        return None
    return " ".join(str(value).casefold().split()).rstrip(".!;,") or None


def claim_of(item: MemoryItem) -> tuple[str | None, str | None, str | None]:
    """The ``(subject, attribute, value)`` a typed memory states, case-folded, from its metadata."""
    meta = item.metadata
    return _fold(meta.get(SUBJECT)), _fold(meta.get(ATTRIBUTE)), _fold(meta.get(VALUE))


def valid_until(item: MemoryItem) -> datetime | None:
    """When a memory stopped being true, or ``None`` while it still is."""
    return item.valid_until


def is_valid_at(item: MemoryItem, when: datetime) -> bool:
    """Whether a memory held at ``when``: from its validity start (event time, else timestamp) until ``valid_until``."""
    when = as_utc(when)
    start = item.valid_from or item.event_time or item.timestamp
    end = item.valid_until
    return as_utc(start) <= when and (end is None or when < as_utc(end))


def is_current(item: MemoryItem) -> bool:
    """Whether a memory has not been superseded (what current-state searches should prefer)."""
    return item.valid_until is None


def supersede(old: MemoryItem, new_id: str, at: datetime) -> MemoryItem:
    """A copy of ``old`` closed at ``at`` and pointing to the memory that replaced it; nothing is deleted."""
    closed = old.model_copy(deep=True)
    closed.valid_until = as_utc(at)
    closed.superseded_by = new_id
    closed.updated_at = max(as_utc(at), old.updated_at)
    return closed


Claim = tuple[str | None, str | None, str | None]


def contradicts(new: Claim, old: Claim) -> bool:
    """Whether claim ``new`` replaces claim ``old`` (both folded) of the same subject.

    The same attribute with another value does ("residence Denver" -> "residence Austin"); so does a negated
    preference of the thing an old favourite names ("preference coffee = dislikes" closes "favourite drink =
    coffee"), and a favourite of a thing that was disliked ("favourite drink = tea" closes "preference tea =
    dislikes").
    """
    subject, attribute, value = new
    if not subject or not attribute or subject != old[0]:
        return False
    if attribute == old[1]:
        return value != old[2]
    old_attribute, old_value = old[1] or "", old[2]
    if attribute.startswith("preference ") and value == "dislikes":
        return old_attribute.startswith("favourite ") and old_value == attribute.removeprefix("preference ")
    if attribute.startswith("favourite ") and value:
        return old_attribute == f"preference {value}" and old_value == "dislikes"
    return False


def _dated(kind: MemoryKind, event_time: datetime | None) -> bool:
    """Whether a claim says when it became true (a move last month), not only when it was said ("I live in X")."""
    return kind is not MemoryKind.PLAN and event_time is not None


def _replaces(candidate: Candidate, said: datetime, when: datetime, old: MemoryItem) -> bool:
    """Whether ``candidate`` (said at ``said``, true from ``when``) replaces the contradicting memory ``old``.

    By the time each became true (its event time, else when it was said), except for a dated claim and an undated
    one said at the same time (one message, one ``add``): the dated one, a change, wins. "I live in Boston ... I
    moved to Denver last month" leaves Denver current although the move's date lies before the message.
    """
    candidate_dated = _dated(candidate.kind, candidate.event_time)
    if candidate_dated != _dated(old.kind, old.event_time) and as_utc(old.timestamp) == as_utc(said):
        return candidate_dated
    return _time_of(old) <= when


def _time_of(item: MemoryItem) -> datetime:
    """When a memory's claim was true from: its event time, except for a plan, whose event lies ahead of it."""
    if item.kind is MemoryKind.PLAN:
        return as_utc(item.timestamp)
    return as_utc(item.event_time or item.timestamp)


class RuleConsolidator:
    """The offline decision rules, in order.

    1. NOOP when a related typed memory of the same kind has the same normalised text.
    2. Same subject and attribute (from the candidate and the memory's metadata): the same value is a MERGE; a
       contradicting claim (``contradicts``: another value, or a negated preference of an old favourite) from a candidate whose event time (else its message time) is not older is a SUPERSEDE of
       every such memory; an older candidate is ADDed already closed (``valid_until`` = the newer memory's time).
       A dated claim and an undated one said at the same time: the dated one, a change, wins (``_replaces``).
    3. A near-duplicate (similarity and entity overlap over ``thresholds``) is a MERGE into the most similar one.
    4. Otherwise ADD. Messages and already superseded memories are never targets.
    """

    def __init__(self, thresholds: DedupThresholds | None = None) -> None:
        self.thresholds = thresholds or DedupThresholds()

    def decide(self, candidate: Candidate, related: Sequence[Related], *, at: datetime) -> Decision:
        live = [r for r in related if r.item.kind in TYPED_KINDS and is_current(r.item)]
        text = normalise_text(candidate.text)
        for r in live:
            if r.item.kind == candidate.kind and normalise_text(r.item.text) == text:
                return Decision(action=Action.NOOP, targets=[r.item.id], reason="same text already stored")
        subject, attribute, value = _fold(candidate.subject), _fold(candidate.attribute), _fold(candidate.value)
        if subject and attribute:
            same = [r for r in live if claim_of(r.item)[:2] == (subject, attribute)]
            agreeing = [r for r in same if claim_of(r.item)[2] == value]
            if agreeing:
                best = max(agreeing, key=lambda r: r.similarity)
                return Decision(
                    action=Action.MERGE, targets=[best.item.id], reason=f"restates {attribute} of {subject}"
                )
            conflicting = [r for r in live if contradicts((subject, attribute, value), claim_of(r.item))]
            if conflicting:
                when = as_utc(at if candidate.kind is MemoryKind.PLAN else candidate.event_time or at)
                older = [r for r in conflicting if _replaces(candidate, at, when, r.item)]
                newer = [r for r in conflicting if not _replaces(candidate, at, when, r.item)]
                if older:
                    return Decision(
                        action=Action.SUPERSEDE,
                        targets=[r.item.id for r in older],
                        reason=f"new value of {attribute} of {subject}: {candidate.value}",
                    )
                latest = min(newer, key=lambda r: _time_of(r.item))
                return Decision(
                    action=Action.ADD,
                    reason=f"older value of {attribute} of {subject}, already replaced",
                    valid_until=_time_of(latest.item),
                    superseded_by=latest.item.id,
                )
        near = [r for r in live if is_similar(r.similarity, candidate.entities, r.item.entities, self.thresholds)]
        if near:
            best = max(near, key=lambda r: r.similarity)
            return Decision(
                action=Action.MERGE, targets=[best.item.id], reason=f"near-duplicate ({best.similarity:.2f})"
            )
        return Decision(action=Action.ADD, reason="new information")


class LLMConsolidator:
    """Decides with a ``ChatModel`` through the ``consolidate`` prompt; falls back to ``RuleConsolidator``.

    Exact duplicates and candidates with nothing related are decided by the rules without a call. A failed call,
    an unusable reply, or a reply naming unknown targets falls back to the rules (logged), so a decision is
    always made.
    """

    def __init__(
        self,
        chat: ChatModel,
        *,
        fallback: RuleConsolidator | None = None,
        reasks: int = 1,
        max_tokens: int = 256,
        related_limit: int = 10,
    ) -> None:
        self.chat = chat
        self.fallback = fallback or RuleConsolidator()
        self.reasks = reasks
        self.max_tokens = max_tokens
        self.related_limit = related_limit

    def decide(self, candidate: Candidate, related: Sequence[Related], *, at: datetime) -> Decision:
        live = [r for r in related if r.item.kind in TYPED_KINDS and is_current(r.item)]
        live = sorted(live, key=lambda r: -r.similarity)[: self.related_limit]
        ruled = self.fallback.decide(candidate, live, at=at)
        if not live or ruled.action is Action.NOOP:
            return ruled
        labels = {f"e{i + 1}": r.item.id for i, r in enumerate(live)}
        existing = [
            (label, r.item.kind.value, r.item.text, _time_of(r.item).date().isoformat())
            for label, r in zip(labels, live, strict=True)
        ]
        when = (candidate.event_time or at).date().isoformat()
        messages = consolidate_prompt.render((candidate.kind.value, candidate.text, when), existing)
        try:
            done = complete_structured(
                self.chat, messages, consolidate_prompt.PROMPT, max_tokens=self.max_tokens, reasks=self.reasks
            )
        except LLMError as e:
            log.warning("LLM consolidation failed, deciding by rules: %s", e)
            return ruled
        out = done.output
        targets = [labels.get(t.strip(), t.strip()) for t in out.targets]
        known = set(labels.values())
        action = Action(out.action)
        if (
            any(t not in known for t in targets)
            or (action in (Action.MERGE, Action.NOOP) and len(targets) != 1)
            or (action is Action.SUPERSEDE and not targets)
        ):
            log.warning("LLM consolidation named targets %s that do not fit %s; deciding by rules", out.targets, action)
            return ruled
        if action is Action.ADD:
            targets = []
        return Decision(action=action, targets=targets, reason=out.reason, decided_by="llm")
