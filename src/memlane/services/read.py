"""The read path: search, context for a prompt, answers, single memories and listings, and learning fusion
weights from feedback.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from memlane.answer.ask import Answer, Asker, AskStore
from memlane.answer.context import Context, assemble
from memlane.answer.fence import MemoryFence
from memlane.blas import blas_threads
from memlane.config import RetrievalPreset, save_preset
from memlane.errors import ValidationError
from memlane.llm.base import ChatModel
from memlane.models import Hit, MemoryItem, utcnow
from memlane.records.inputs import FiltersInput
from memlane.retrieval.search import Retriever
from memlane.retrieval.tuning import FitResult, LabelledQuery, QueryMatrix, fit, split_groups
from memlane.scope import unscope, unscope_all
from memlane.security.validation import (
    check_bool,
    check_filters,
    check_float,
    check_id,
    check_int,
    check_text,
    check_time,
    require_scope,
)
from memlane.services.core import Core
from memlane.services.scope import Scope
from memlane.services.security import Security
from memlane.store.base import FeedbackLog, RecordReader, StoreInfo
from memlane.telemetry import timed


class ReadStore(RecordReader, FeedbackLog, StoreInfo, AskStore, Protocol):
    """What the read path uses beside the retriever: memories, feedback, a pinned view, the structured rows."""


class Reads:
    """Search and what is built on it; every result leaves with its user id unscoped."""

    def __init__(
        self,
        core: Core,
        store: ReadStore,
        retriever: Retriever,
        security: Security,
        chat: ChatModel | None,
    ) -> None:
        self.core = core
        self.store = store
        self.retriever = retriever
        self.security = security
        self.chat = chat

    @timed("search")  # telemetry
    def search(
        self, scope: Scope, query: str, *, top_k: int, filters: FiltersInput, preset_name: str | None
    ) -> list[Hit]:
        """The ``top_k`` memories of this user that best answer ``query``, each with its score breakdown."""
        limits = self.core.limits
        query = check_text(query, max_chars=limits.text_chars, what="query")
        check_int(top_k, what="top_k", low=1, high=limits.top_k)
        flt = check_filters(filters, limits)
        chosen = self.preset(preset_name)
        now = utcnow()
        with self.store.pinned(), blas_threads(self.core.config.blas_threads):  # one look at others' commits
            self.core.check_embedder()
            hits = self.retriever.search(query, scope.key, top_k=top_k, filters=flt, preset=chosen, now=now)
        if hits:
            if not self.store.read_only and self.core.access.note(scope.key, [h.memory.id for h in hits], now):
                self.core.write_access()
            for h in hits:
                h.memory.access_count += 1
                h.memory.last_accessed = now
        return unscope_all(hits)

    @timed("ask")  # telemetry
    def ask(self, scope: Scope, question: str, *, top_k: int, now: datetime | str | None, token_budget: int) -> Answer:
        """Answer ``question`` from this user's memories (see ``Memory.ask``)."""
        limits = self.core.limits
        question = check_text(question, max_chars=limits.text_chars, what="question")
        check_int(top_k, what="top_k", low=1, high=limits.top_k)
        check_int(token_budget, what="token_budget", low=1, high=1_000_000)
        at = utcnow() if now is None else check_time(now, what="now", limits=limits)
        asker = Asker(
            self.store,
            lambda q, k: self.security.unflagged(scope, self.search(scope, q, top_k=k, filters=None, preset_name=None)),
            MemoryFence(),  # one nonce per call
            self.chat,
        )
        answer = asker.ask(question, scope.key, top_k=top_k, now=at, token_budget=token_budget)
        unscope_all(answer.hits)
        return answer

    @timed("context")  # telemetry
    def context(self, scope: Scope, query: str, *, token_budget: int, top_k: int, include_flagged: bool) -> Context:
        """The memories that answer ``query`` fenced for a prompt within ``token_budget`` (see ``Memory.context``):
        current facts first, then supporting turns, each with its date and speaker.
        """
        check_int(token_budget, what="token_budget", low=1, high=1_000_000)
        check_bool(include_flagged, what="include_flagged")
        hits = self.search(scope, query, top_k=top_k, filters=None, preset_name=None)
        if not include_flagged:
            hits = self.security.unflagged(scope, hits)
        return assemble(hits, token_budget=token_budget, fence=MemoryFence())  # one nonce per call

    def get(self, scope: Scope, memory_id: str) -> MemoryItem:
        """One memory; ``NotFoundError`` if this user has none with that id."""
        memory_id = check_id(memory_id, what="memory_id", max_chars=self.core.limits.id_chars)
        return unscope(self.store.get(scope.key, memory_id))

    def list(self, scope: Scope, *, filters: FiltersInput, limit: int, offset: int) -> list[MemoryItem]:
        """The memories of one user that match ``filters``, oldest first."""
        limit, offset = self.core.page(limit, offset)
        return unscope_all(self.store.list(scope.key, check_filters(filters, self.core.limits), limit, offset))

    # -- learning from use ----------------------------------------------------------------------------------------
    def feedback(
        self, hit: Hit | str, *, useful: bool, query: str | None, user_id: str | None, tenant: str | None
    ) -> None:
        """Record whether a returned memory was useful for its query (see ``Memory.feedback``)."""
        limits = self.core.limits
        if isinstance(hit, Hit):
            memory_id = hit.memory.id
            user_id = user_id or hit.memory.user_id
            query = query or hit.query
        else:
            memory_id = hit
        memory_id = check_id(memory_id, what="memory_id", max_chars=limits.id_chars)
        scope = self.core.bind(user_id, tenant)
        if not query:
            raise ValidationError("feedback needs the query the memory was returned for")
        query = check_text(query, max_chars=limits.text_chars, what="query")
        check_bool(useful, what="useful")
        self.store.add_feedback(scope.key, query, memory_id, useful, utcnow())

    def tune(
        self,
        queries: Sequence[LabelledQuery] | None,
        *,
        name: str,
        base: str,
        k: int,
        test_share: float,
        save: bool,
    ) -> FitResult:
        """Learn fusion weights from labelled queries or feedback, saved as preset ``name`` (see ``Memory.tune``).

        Queries are split into fitting and held-out sides by group (a conversation, or the query itself), and the
        result reports recall@k before and after on both; only the held-out gain says whether the weights help.
        """
        name = check_id(name, what="name", max_chars=64)
        start = self.preset(base, what="base")
        check_int(k, what="k", low=1, high=self.core.limits.top_k)
        check_float(test_share, what="test_share", low=0.0, high=0.9)
        check_bool(save, what="save")
        labelled = self._check_labelled(queries) if queries is not None else self._feedback_queries()
        if not labelled:
            raise ValidationError("no labelled queries: pass some, or record feedback on search results first")
        now = utcnow()
        dims = tuple(start.fusion.weights)
        matrices = [
            QueryMatrix.build(dims, self.retriever.features(q.query, q.user_id, start, now), q.relevant)
            for q in labelled
        ]
        train, test = split_groups(labelled, test_share)
        result = fit(matrices, start.fusion.weights, train, test, k=k)
        if save:
            description = (
                f"learned from {result.train_queries} queries on {base}; recall@{k} on {result.test_queries} "
                f"held-out queries {result.test_before:.3f} -> {result.test_after:.3f}"
            )
            save_preset(self.core.config.presets_file, name, start.name, result.weights, description)
        return result

    def preset(self, name: object, what: str = "preset_name") -> RetrievalPreset:
        """The named retrieval preset (``None``: the configured default)."""
        if name is not None:
            check_id(name, what=what, max_chars=64)
        return self.core.config.preset_for(name)  # type: ignore[arg-type]

    def _check_labelled(self, queries: object) -> builtins.list[LabelledQuery]:
        limits = self.core.limits
        if not isinstance(queries, Sequence) or isinstance(queries, str):
            raise ValidationError(f"queries must be a list of LabelledQuery, got {type(queries).__name__}")
        if len(queries) > limits.batch:
            raise ValidationError(f"{len(queries)} queries, more than the limit of {limits.batch}")
        for i, q in enumerate(queries):
            if not isinstance(q, LabelledQuery):
                raise ValidationError(f"queries[{i}] must be a LabelledQuery, got {type(q).__name__}")
            check_text(q.query, max_chars=limits.text_chars, what=f"queries[{i}].query")
            require_scope(q.user_id, max_chars=limits.id_chars, what=f"queries[{i}].user_id")
            for mid in q.relevant:
                check_id(mid, what=f"queries[{i}].relevant", max_chars=limits.id_chars)
        return builtins.list(queries)

    def _feedback_queries(self) -> builtins.list[LabelledQuery]:
        grouped: dict[tuple[str, str], set[str]] = {}
        for judged in self.store.feedback():
            relevant = grouped.setdefault((judged.user_id, judged.query), set())
            if judged.useful:
                relevant.add(judged.memory_id)
        return [LabelledQuery(q, u, frozenset(r)) for (u, q), r in grouped.items() if r]
