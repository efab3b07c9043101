"""What every route shares: settings, the open ``Memory``, the key database, authentication, rate limits, and the
one helper that runs a library call on a worker thread and writes its audit line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread
from fastapi import HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials

from memlane import telemetry
from memlane.engine import Memory
from memlane.errors import (
    ConfigError,
    EmbedderMismatchError,
    JobTimeoutError,
    MemlaneError,
    MissingDependencyError,
    NotFoundError,
    StoreError,
    ValidationError,
)
from memlane.scope import DEFAULT_TENANT
from memlane.server.admin_store import ADMIN_DB_NAME, AdminStore
from memlane.server.keys import ApiKey, Scope
from memlane.server.limits import retry_after
from memlane.server.metrics import Metrics
from memlane.server.ratelimit import RateLimiter, open_rate_limiter

log = logging.getLogger(__name__)
T = TypeVar("T")

INSECURE_WARNING = "authentication is OFF (--insecure-dev): every caller is admin of tenant 'default'"


@dataclass(frozen=True)
class ServerSettings:
    """How ``memlane serve`` runs: where its data lives and the limits it enforces."""

    data_dir: Path
    store: str | Path | None = None
    embedder: str | None = None
    insecure_dev: bool = False
    rate_per_second: float = 50.0
    burst: int = 100
    max_body_bytes: int = 4_000_000
    body_timeout: float = 10.0
    max_receiving: int = 256
    max_inflight: int = 64
    threads: int = 8
    queue_timeout: float = 10.0
    redis_url: str | None = field(default=None, repr=False)  # shared rate limits (memlane.server.ratelimit)

    @property
    def admin_db(self) -> Path:
        return self.data_dir / ADMIN_DB_NAME


@dataclass(frozen=True)
class Principal:
    """Who is calling: the tenant their key is bound to, its scopes and its public prefix."""

    tenant: str
    scopes: frozenset[Scope]
    key: str | None

    @property
    def admin(self) -> bool:
        return Scope.ADMIN in self.scopes


DEV_PRINCIPAL = Principal(DEFAULT_TENANT, frozenset(Scope), None)


class ServerBusyError(MemlaneError):
    """A request waited longer than ``queue_timeout`` for a worker thread: refused (503) rather than left to hang."""


def status_of(exc: MemlaneError) -> int:
    """The HTTP status of a library error."""
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, ValidationError):
        return 400
    if isinstance(exc, ConfigError) and not isinstance(exc, MissingDependencyError):
        return 400  # a request naming something unavailable, e.g. an unknown retrieval preset
    if isinstance(exc, EmbedderMismatchError):
        return 409
    if isinstance(exc, JobTimeoutError):
        return 504
    if isinstance(exc, StoreError | ServerBusyError):
        return 503
    return 500


def public_detail(exc: MemlaneError) -> str:
    """What a caller is told: a not-found never says whether the id exists elsewhere."""
    return "not found" if isinstance(exc, NotFoundError) else str(exc)[:1000]


@dataclass
class Service:
    """The state of one running server."""

    settings: ServerSettings
    admin: AdminStore
    memory: Memory | None = None
    metrics: Metrics = field(default_factory=Metrics)
    buckets: RateLimiter = field(init=False)
    workers: anyio.CapacityLimiter = field(init=False)

    def __post_init__(self) -> None:
        self.buckets = open_rate_limiter(self.settings.rate_per_second, self.settings.burst, self.settings.redis_url)
        # CPU-bound calls (embedding, scoring) gain nothing from more threads than cores can run; a small pool and a
        # bounded wait keep latency predictable and turn overload into 503s instead of a growing queue.
        self.workers = anyio.CapacityLimiter(self.settings.threads)

    def start_telemetry(self) -> None:
        """Count and time the library's operations into this server's metrics, and watch the job queue."""
        telemetry.add_recorder(self.metrics)
        self.metrics.watch_queue(self._queue_depth)

    def stop_telemetry(self) -> None:
        telemetry.remove_recorder(self.metrics)

    def _queue_depth(self) -> float:
        """Jobs queued or running (at most the library's list limit); NaN while the store is closed or failing."""
        memory = self.memory
        if memory is None:
            return float("nan")
        try:
            return float(len(memory.pending_jobs(limit=memory.limits.list_limit)))
        except MemlaneError as exc:
            log.warning("job queue depth not read: %s", exc)
            return float("nan")

    def open_memory(self) -> Memory:
        if self.memory is None:
            raise HTTPException(503, "the memory store is not open yet", headers={"Retry-After": "1"})
        return self.memory

    # -- auth --------------------------------------------------------------------------------------
    def authenticate(self, request: Request, creds: HTTPAuthorizationCredentials | None, need: Scope) -> Principal:
        """The caller behind a bearer key holding scope ``need``: 401 without a valid key, 403 without the scope,
        429 once the key's rate is spent.
        """
        if self.settings.insecure_dev:
            who = DEV_PRINCIPAL
            self._throttle(request.client.host if request.client else "local")
            return who
        key = self.identify(None if creds is None else creds.credentials)
        who = Principal(key.tenant, key.scopes, key.prefix)
        if need not in key.scopes and Scope.ADMIN not in key.scopes:
            self.admin.record(
                key_prefix=key.prefix, tenant=key.tenant, action="auth", status=403, detail=f"needs {need}"
            )
            raise HTTPException(403, f"this key lacks the '{need}' scope")
        self._throttle(key.prefix)
        return who

    def identify(self, presented: str | None) -> ApiKey:
        """The active key ``presented`` names: 401 (with the reason) when missing, unknown or revoked. Called from
        the request's headers before its body is read (``memlane.server.edge``), and again by each route.
        """
        challenge = {"WWW-Authenticate": "Bearer"}
        if not presented:
            raise HTTPException(401, "missing API key: send 'Authorization: Bearer ml_...'", headers=challenge)
        key = self.admin.verify(presented)
        if key is None:
            raise HTTPException(401, "invalid API key", headers=challenge)
        if key.revoked:
            self.admin.record(key_prefix=key.prefix, tenant=key.tenant, action="auth", status=401, detail="revoked")
            raise HTTPException(401, "API key revoked", headers=challenge)
        return key

    def _throttle(self, bucket: str) -> None:
        wait = self.buckets.take(bucket)
        if wait > 0:
            raise HTTPException(429, "rate limit exceeded for this key", headers={"Retry-After": retry_after(wait)})

    # -- calls -------------------------------------------------------------------------------------
    async def call(
        self,
        who: Principal,
        action: str,
        fn: Callable[[Memory], T],
        *,
        user_id: str | None = None,
        target: str | None = None,
        describe: Callable[[T], str] | None = None,
    ) -> T:
        """Run ``fn(memory)`` on a worker thread and append the audit line (with the outcome) there too; 503 if no
        worker thread was free within ``queue_timeout`` seconds.
        """
        memory = self.open_memory()
        queued = time.monotonic()

        def run() -> T:
            if time.monotonic() - queued > self.settings.queue_timeout:
                raise ServerBusyError("server busy: no worker free in time; retry shortly")
            try:
                result = fn(memory)
            except MemlaneError as exc:  # the kind of error only: its message may quote request values
                self._audit(who, action, status_of(exc), user_id, target, type(exc).__name__)
                raise
            self._audit(who, action, 200, user_id, target, describe(result) if describe else "")
            return result

        return await self.run_blocking(run)

    async def run_blocking(self, fn: Callable[[], T]) -> T:
        """Run a blocking call on one of the server's worker threads."""
        return await anyio.to_thread.run_sync(fn, limiter=self.workers)

    def _audit(
        self, who: Principal, action: str, status: int, user_id: str | None, target: str | None, detail: str
    ) -> None:
        """Append an audit line: the action, the ids it names and the outcome; ``detail`` is a count or the kind of
        error, never a value from the request (the log is append-only: a value written there outlives any erasure).
        """
        try:
            self.admin.record(
                key_prefix=who.key,
                tenant=who.tenant,
                action=action,
                status=status,
                user_id=None if user_id is None else str(user_id)[:256],
                target=None if target is None else str(target)[:256],
                detail=detail,
            )
        except StoreError as exc:  # the call itself already happened; losing its audit line must be loud
            log.error("audit line not written for %s by %s: %s", action, who.key, exc)
