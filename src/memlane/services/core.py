"""``Core``: what every service shares over one store: settings, the embedder, tenancy binding, the access counts
that searches gather, and the consolidation lock.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from memlane.config import Config
from memlane.embedding import Embedder
from memlane.enrich.pipeline import forget_cached_text
from memlane.errors import EmbedderMismatchError, StoreError
from memlane.lifecycle.access import AccessTally
from memlane.lifecycle.locks import Leases
from memlane.security.validation import Limits, check_int
from memlane.services.scope import Scope
from memlane.store.base import Store

log = logging.getLogger(__name__)


@dataclass
class Core:
    """The parts every service holds: one store, its embedder and settings, and the per-process coordination.

    ``lock`` and ``leases`` make one writer of typed memories per user at a time: consolidation reads, decides,
    then writes. The RLock serialises this process's threads, the store lock (a lease) the processes sharing it.
    """

    config: Config
    limits: Limits
    store: Store
    embedder: Embedder
    leases: Leases
    access: AccessTally = field(default_factory=AccessTally)  # searches' access counts, written in batches
    lock: threading.RLock = field(default_factory=threading.RLock)

    def bind(self, user_id: object, tenant: object, *, counts: bool = True) -> Scope:
        """The checked scope of a user-scoped call.

        Every user-scoped call binds here first, so here the searches' gathered access counts are written before
        the call reads or writes memories (``counts=False``: a search, which only adds to them).
        """
        scope = Scope.bind(user_id, tenant, id_chars=self.limits.id_chars)
        if counts:
            self.counts_first()
        return scope

    def counts_first(self) -> None:
        """Write the searches' gathered access counts, if any, before a call reads or writes memories."""
        if self.access:
            self.write_access()

    def write_access(self) -> None:
        """Write the access counts gathered by searches (best-effort: a failure is logged, never raised)."""
        for user_id, uses in self.access.drain().items():
            # A full disk or a lock held too long must not fail a read.
            try:
                self.store.record_access(user_id, uses)
            except StoreError as exc:
                log.warning("access counts not recorded: %s", exc)

    def page(self, limit: object, offset: object) -> tuple[int, int]:
        """A checked ``(limit, offset)`` pair of a listing."""
        return (
            check_int(limit, what="limit", low=0, high=self.limits.list_limit),
            check_int(offset, what="offset", low=0, high=self.limits.offset),
        )

    def embedder_ready(self) -> bool:
        """Whether this embedder may write vectors to the store (it made them, or the store has none yet)."""
        held = self.store.embedder_identity()
        return held is None or held[0] == self.embedder.identity

    def check_embedder(self) -> None:
        """``EmbedderMismatchError`` when the store was indexed with another embedder than this one."""
        held = self.store.embedder_identity()
        if held is not None and held[0] != self.embedder.identity:
            raise EmbedderMismatchError(
                f"{self.store.location} was indexed with embedder {held[0]!r} but {self.embedder.identity!r} "
                "is configured; run `memlane reindex` to re-embed every memory with the configured model, "
                "or open it with the embedder it was built with"
            )

    @contextlib.contextmanager
    def consolidating(self, user_id: str) -> Iterator[None]:
        """Hold this user's consolidation lock, in this process and across processes."""
        with self.lock, self.leases.lock(f"consolidate:{user_id}"):
            yield

    def forget_cached_text(self) -> None:
        """After an erasure: empty the in-process caches that may hold the erased text (enrichment's word sets,
        time phrases and names; the query vectors' cache, keyed by query text).
        """
        forget_cached_text()
        forget_queries = getattr(self.embedder, "clear", None)
        if callable(forget_queries):
            forget_queries()
