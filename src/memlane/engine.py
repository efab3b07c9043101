"""The ``Memory`` facade: it binds each call's scope and delegates to one service per concern (``memlane.services``:
write and read paths, jobs, lifecycle, security views, graph, transfer); it keeps the public API and nothing else.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Self

from memlane.records.inputs import FiltersInput, MessagesInput
from memlane.records.keys import content_hash, index_text, message_hash, normalise_text

if TYPE_CHECKING:  # the services, models and stores load when a Memory is made, not when this module is imported
    from memlane.answer.ask import Answer
    from memlane.answer.context import Context
    from memlane.broker import JobRun, RetryPolicy
    from memlane.config import Config
    from memlane.documents.service import DocumentsInput
    from memlane.embedding import Embedder
    from memlane.graph.neighbourhood import Neighbourhood
    from memlane.llm.usage import UsageCounter
    from memlane.models import (
        AddResult,
        ArchivedMemory,
        Compaction,
        FlaggedMemory,
        HistoryEntry,
        Hit,
        InjectionFlag,
        Job,
        JobResult,
        JobState,
        MemoryItem,
        Stats,
        UserSummary,
    )
    from memlane.observe import Observation
    from memlane.records.graph import RelationEdge
    from memlane.records.timeline import TimelineCursor, TimelineFilter, TimelinePage
    from memlane.retrieval.tuning import FitResult, LabelledQuery
    from memlane.security.sanitise import Fenced

__all__ = ["FiltersInput", "Memory", "MessagesInput", "content_hash", "index_text", "message_hash", "normalise_text"]


class Memory:
    """Long-term memory over one store. Thread-safe; use as a context manager or call ``close()``.

    >>> m = Memory(":memory:", embedder="hash")
    >>> _ = m.add("I adopted a beagle called Biscuit", user_id="ana")
    >>> m.search("what is my dog's name?", user_id="ana", top_k=1)[0].memory.text
    'I adopted a beagle called Biscuit'
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        embedder: str | Embedder | None = None,
        config: Config | None = None,
    ) -> None:
        from memlane.config import Config
        from memlane.services.assemble import assemble

        self.config = config or Config.from_env()
        # jobs run through _handle_job, looked up at each call (a subclass or a test's hook takes effect)
        self._services = services = assemble(path, embedder, self.config, handle=lambda job: self._handle_job(job))
        core = services.core
        self.limits = core.limits
        # the parts, by the names tests and tools reach for
        self._store = core.store
        self._embedder = core.embedder
        self._access = core.access
        self._extraction = services.extraction
        self._retriever = services.retriever
        self._distiller = services.distiller
        self._worker = services.worker
        self._guard = services.writes.indexer.guard
        # bound once: a call's checked scope, the searches' access counts written, the write path's insert, a preset
        self._bind = core.bind
        self._write_access = core.write_access
        self._insert = services.writes.indexer.insert
        self._preset = services.reads.preset

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _handle_job(self, job: Job) -> None:
        """Run one claimed background job in this process (extraction under the user's consolidation lock)."""
        self._services.handler(job)

    # -- lifecycle of the object ------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the job worker (after the job in hand; queued jobs wait for the next open) and close the store."""
        self._services.close()

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    @property
    def location(self) -> str:
        return self._store.location

    @property
    def llm_usage(self) -> UsageCounter | None:
        """Tokens, latency and cost of every LLM call this ``Memory`` made (``None`` without an LLM)."""
        return self._extraction.usage

    # -- write path (memlane.services.write) ------------------------------------------------------------------------------
    def add(
        self,
        messages: MessagesInput,
        *,
        user_id: str,
        session_id: str | None = None,
        agent_id: str | None = None,
        timestamp: datetime | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        infer: bool | None = None,
        async_mode: bool = False,
        tenant: str | None = None,
    ) -> AddResult:
        """Store each message losslessly as a ``kind=message`` memory (all or none), then extract typed memories.

        A message already stored is not stored again (listed in ``duplicates``). With ``infer`` (default
        ``config.infer``) typed memories are extracted, deduplicated and consolidated; with ``async_mode`` on the
        background worker, whose job (``job_id``) was queued in the same transaction as the messages.
        """
        return self._services.writes.add(
            self._bind(user_id, tenant),
            messages,
            session_id=session_id,
            agent_id=agent_id,
            timestamp=timestamp,
            metadata=metadata,
            infer=infer,
            async_mode=async_mode,
        )

    def add_documents(
        self,
        documents: DocumentsInput,
        *,
        user_id: str,
        agent_id: str | None = None,
        timestamp: datetime | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        tenant: str | None = None,
    ) -> AddResult:
        """Store documents or notes (strings, ``Document``s or their dicts) as ``kind=document`` memories, all or none:
        each a memory of its own (no session, no extraction), searched by its best passage (``Hit.passage``). A text
        already stored is returned as stored and listed in ``duplicates``.
        """
        return self._services.documents.add(
            documents, user_id=user_id, agent_id=agent_id, timestamp=timestamp, metadata=metadata, tenant=tenant
        )

    def observe(
        self,
        observations: Observation | Mapping[str, Any] | Sequence[Observation | Mapping[str, Any]],
        *,
        user_id: str,
        tenant: str | None = None,
        session_id: str | None = None,
        agent_id: str | None = None,
    ) -> AddResult:
        """Store grounded observations (captions with ``[label:Type]`` tags, a time window, a media reference) as
        memories of role ``observation``, their tags as typed entities; all or none (stored ones: ``duplicates``).
        """
        scope = self._bind(user_id, tenant)
        return self._services.writes.observe(scope, observations, session_id=session_id, agent_id=agent_id)

    # -- read path (memlane.services.read) --------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        user_id: str,
        top_k: int = 10,
        filters: FiltersInput = None,
        preset_name: str | None = None,
        tenant: str | None = None,
    ) -> list[Hit]:
        """The ``top_k`` memories of this user that best answer ``query``, each with its score breakdown."""
        scope = self._bind(user_id, tenant, counts=False)
        return self._services.reads.search(scope, query, top_k=top_k, filters=filters, preset_name=preset_name)

    def ask(
        self,
        question: str,
        *,
        user_id: str,
        tenant: str | None = None,
        top_k: int = 10,
        now: datetime | str | None = None,
        token_budget: int = 2000,
    ) -> Answer:
        """Answer ``question`` from this user's memories: a structured query (count, exists, list, first/last,
        order, time range) when the question is one, else semantic search; with an LLM configured, also a
        generated answer whose claims cite memory ids (checked). ``now`` anchors relative times ("on Monday").
        """
        scope = self._bind(user_id, tenant)
        return self._services.reads.ask(scope, question, top_k=top_k, now=now, token_budget=token_budget)

    def context(
        self,
        query: str,
        *,
        user_id: str,
        tenant: str | None = None,
        token_budget: int = 1000,
        top_k: int = 30,
        include_flagged: bool = False,
    ) -> Context:
        """The memories that answer ``query``, fenced as quoted data for an LLM prompt within ``token_budget``
        (estimated) tokens, current facts first; flagged memories are left out unless ``include_flagged``.
        """
        return self._services.reads.context(
            self._bind(user_id, tenant, counts=False),
            query,
            token_budget=token_budget,
            top_k=top_k,
            include_flagged=include_flagged,
        )

    def get(self, memory_id: str, *, user_id: str, tenant: str | None = None) -> MemoryItem:
        """One memory; ``NotFoundError`` if this user has none with that id."""
        return self._services.reads.get(self._bind(user_id, tenant), memory_id)

    def list(
        self,
        *,
        user_id: str,
        filters: FiltersInput = None,
        limit: int = 100,
        offset: int = 0,
        tenant: str | None = None,
    ) -> builtins.list[MemoryItem]:
        """The memories of one user that match ``filters``, oldest first."""
        return self._services.reads.list(self._bind(user_id, tenant), filters=filters, limit=limit, offset=offset)

    def timeline(  # the timeline (memlane.services.timeline)
        self,
        *,
        user_id: str,
        where: TimelineFilter | None = None,
        limit: int = 50,
        after: TimelineCursor | str | None = None,
        tenant: str | None = None,
    ) -> TimelinePage:
        """One page of a user's memories newest first by when they happened (event time, else creation time),
        filtered exactly by ``where``; pass the page's ``next`` (or its ``encode()``) as ``after`` for the next page.
        """
        from memlane.services.timeline import timeline_page

        return timeline_page(self._services.core, self._bind(user_id, tenant), where, limit, after)

    def feedback(
        self,
        hit: Hit | str,
        *,
        useful: bool,
        query: str | None = None,
        user_id: str | None = None,
        tenant: str | None = None,
    ) -> None:
        """Record whether a returned memory was useful for its query (``memlane tune`` learns weights from this):
        pass the ``Hit`` that search returned (it knows its query and user), or a memory id, ``query`` and ``user_id``.
        """
        self._services.reads.feedback(hit, useful=useful, query=query, user_id=user_id, tenant=tenant)

    def tune(
        self,
        queries: Sequence[LabelledQuery] | None = None,
        *,
        name: str,
        base: str = "multi",
        k: int = 10,
        test_share: float = 0.3,
        save: bool = True,
    ) -> FitResult:
        """Learn fusion weights from labelled queries (or from recorded feedback) and save them as preset ``name``;
        the result reports recall@k before and after on fitting and held-out queries (only the held-out gain counts).
        """
        return self._services.reads.tune(queries, name=name, base=base, k=k, test_share=test_share, save=save)

    # -- background jobs (memlane.services.jobs) --------------------------------------------------------------------------
    def run_job(self, job_id: str, *, policy: RetryPolicy | None = None) -> JobRun:
        """Run one job by id, as a broker's worker does: only if it is queued or abandoned (a redelivered message
        never does the work twice); a failure is retried with backoff, or dead-lettered after ``policy.max_attempts``.
        """
        return self._services.jobs.run_job(job_id, policy=policy)

    def pending_jobs(self, *, limit: int = 10_000) -> builtins.list[Job]:
        """Every queued or running job of the store (all users), oldest first: what a worker at start picks up."""
        return self._services.jobs.pending_jobs(limit=limit)

    def job(self, job_id: str, *, user_id: str, tenant: str | None = None) -> Job:
        """A background job of this user: its state, attempts and last error."""
        return self._services.jobs.job(self._bind(user_id, tenant), job_id)

    def jobs(
        self, *, user_id: str, state: JobState | str | None = None, limit: int = 100, tenant: str | None = None
    ) -> builtins.list[Job]:
        """The background jobs of this user, oldest first, optionally in one state."""
        return self._services.jobs.jobs(self._bind(user_id, tenant), state=state, limit=limit)

    def job_result(self, job_id: str, *, tenant: str | None = None) -> JobResult:
        """A job of this tenant by its id alone and the typed memories it wrote; ``NotFoundError`` when none."""
        return self._services.jobs.result(job_id, tenant)

    def wait(self, job_id: str, *, user_id: str, timeout: float | None = None, tenant: str | None = None) -> Job:
        """Block until a job is done or failed and return it; ``JobTimeoutError`` after ``timeout`` seconds."""
        return self._services.jobs.wait(self._bind(user_id, tenant), job_id, timeout=timeout)

    def flush(self, *, timeout: float | None = None) -> None:
        """Block until no background job is queued or running; ``JobTimeoutError`` after ``timeout`` seconds."""
        self._services.jobs.flush(timeout=timeout)

    def retry_jobs(self, *, user_id: str | None = None, tenant: str | None = None) -> int:
        """Queue failed jobs (of one user, or all) again; returns how many."""
        return self._services.jobs.retry_jobs(user_id=user_id, tenant=tenant)

    # -- changes, erasure, archive (memlane.services.lifecycle) -----------------------------------------------------------
    def update(
        self,
        memory_id: str,
        *,
        user_id: str,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        importance: float | None = None,
        tenant: str | None = None,
    ) -> MemoryItem:
        """Change a memory's text (re-indexed), metadata (replaced) or importance; recorded in history."""
        scope = self._bind(user_id, tenant)
        return self._services.lifecycle.update(scope, memory_id, text=text, metadata=metadata, importance=importance)

    def delete(self, memory_id: str, *, user_id: str, tenant: str | None = None) -> builtins.list[str]:
        """Remove a memory from every index (its history keeps the events, not the text), and the typed memories
        extracted from it alone (others just lose this source). Returns the ids removed, ``memory_id`` first.
        """
        return self._services.lifecycle.delete(self._bind(user_id, tenant), memory_id)

    def delete_all(self, *, user_id: str, tenant: str | None = None) -> int:
        """Remove every memory and all history of one user; returns how many memories went."""
        return self._services.lifecycle.delete_all(self._bind(user_id, tenant))

    def history(self, memory_id: str, *, user_id: str, tenant: str | None = None) -> builtins.list[HistoryEntry]:
        """Every recorded change of a memory, oldest first (text is erased once it is deleted); ``NotFoundError`` if
        this user never had a memory with that id (a deleted one keeps its history).
        """
        return self._services.lifecycle.history(self._bind(user_id, tenant), memory_id)

    def archive(
        self, *, user_id: str, limit: int = 100, offset: int = 0, tenant: str | None = None
    ) -> builtins.list[ArchivedMemory]:
        """Memories of this user evicted beyond capacity, most recently archived first."""
        return self._services.lifecycle.archive(self._bind(user_id, tenant), limit=limit, offset=offset)

    def restore(self, memory_id: str, *, user_id: str, tenant: str | None = None) -> MemoryItem:
        """Bring an archived memory back into every index (capacity is enforced again at the next add)."""
        return self._services.lifecycle.restore(self._bind(user_id, tenant), memory_id)

    def forget(self, *, user_id: str, hard: bool = False, tenant: str | None = None) -> builtins.list[str]:
        """Enforce ``config.capacity`` now: evict the lowest survival scores to the archive (destroy if ``hard``)."""
        return self._services.lifecycle.forget(self._bind(user_id, tenant), hard=hard)

    def wait_for_index(self, timeout: float | None = None) -> bool:
        """Block until background index work (HNSW graphs, read models) is done, at most ``timeout`` seconds;
        whether it is. Never needed for correct results: call it after a bulk import or at start-up.
        """
        return self._services.lifecycle.wait_for_index(timeout)

    def compact(self) -> Compaction:
        """Rewrite the store's files from their live content: no byte of a deleted memory stays on the disk."""
        return self._services.lifecycle.compact()

    # -- security: flags, fenced context, redacted originals (memlane.services.security) ----------------------------------
    def flags(self, memory_ids: Sequence[str], *, user_id: str, tenant: str | None = None) -> dict[str, InjectionFlag]:
        """The injection flags of those of ``memory_ids`` that are flagged, or extracted from a flagged message."""
        # counts=False: an adapter that flags its search hits must not change what the next search reports
        return self._services.security.flags(self._bind(user_id, tenant, counts=False), memory_ids)

    def flagged(
        self, *, user_id: str | None = None, tenant: str | None = None, limit: int = 100, offset: int = 0
    ) -> builtins.list[FlaggedMemory]:
        """Memories flagged as likely prompt injections (of one user, or of the whole store for the default tenant
        only), with the reason and score, most recently flagged first: an administrator's view.
        """
        return self._services.security.flagged(user_id=user_id, tenant=tenant, limit=limit, offset=offset)

    def fence(
        self,
        hits: Sequence[Hit],
        *,
        user_id: str,
        token_budget: int,
        include_flagged: bool = False,
        tenant: str | None = None,
    ) -> Fenced:
        """Hits as quoted data for a prompt within ``token_budget`` tokens, flagged ones left out unless asked for."""
        scope = self._bind(user_id, tenant)
        return self._services.security.fence(scope, hits, token_budget=token_budget, include_flagged=include_flagged)

    def reveal(self, memory_id: str, *, user_id: str, tenant: str | None = None) -> str:
        """The original text of a memory whose PII was redacted (its stored text when nothing was). For
        administrators: needs the PII key file (``Config.pii_key``), which only they should be able to read.
        """
        return self._services.security.reveal(self._bind(user_id, tenant), memory_id)

    # -- knowledge graph (memlane.services.graph) -------------------------------------------------------------------------
    def graph(self, entity: str, *, user_id: str, tenant: str | None = None, limit: int = 10) -> Neighbourhood:
        """The neighbourhood of an entity (a name or alias such as "Mel" or "my sister"): its node, relations,
        the entities mentioned with it and its latest ``limit`` memories. ``NotFoundError`` when unknown.
        """
        return self._services.graph.graph(self._bind(user_id, tenant), entity, limit=limit)

    def relations(
        self, *, user_id: str, tenant: str | None = None, entity: str | None = None, current_only: bool = False
    ) -> builtins.list[RelationEdge]:
        """The typed relations of this user's graph (those of one entity when given), each with its source memories
        and validity window; ``current_only`` leaves out relations a later one closed.
        """
        return self._services.graph.relations(self._bind(user_id, tenant), entity=entity, current_only=current_only)

    def merge_entities(self, source: str, target: str, *, user_id: str, tenant: str | None = None) -> int:
        """Make ``source`` the same entity as ``target`` (its mentions, aliases and relations move; its name
        becomes an alias). Returns how many memories now name ``target`` instead.
        """
        return self._services.graph.merge_entities(self._bind(user_id, tenant), source, target)

    def split_entity(
        self, entity: str, new_name: str, *, user_id: str, memory_ids: Sequence[str], tenant: str | None = None
    ) -> int:
        """Split the memories in ``memory_ids`` off ``entity`` into a new entity ``new_name`` of the same type (two
        people who shared a name); relations read only from those memories follow. Returns how many moved.
        """
        return self._services.graph.split_entity(self._bind(user_id, tenant), entity, new_name, memory_ids=memory_ids)

    def routines(
        self, *, user_id: str, tenant: str | None = None, min_occurrences: int = 3
    ) -> builtins.list[MemoryItem]:
        """Detect recurring actions in this user's turns and store (or update) each as a memory of kind ``routine``;
        returns the user's current routines.
        """
        return self._services.graph.routines(self._bind(user_id, tenant), min_occurrences=min_occurrences)

    # -- export / import / maintenance (memlane.services.transfer) --------------------------------------------------------
    def export(self, dest: str | Path | IO[str], *, user_id: str | None = None, tenant: str | None = None) -> int:
        """Write memories (one user's, or all of the tenant's) as JSONL: a header line, then one memory per line,
        each checked with the rules ``import_`` applies; a path is written whole or not at all.
        """
        return self._services.transfer.export(dest, user_id=user_id, tenant=tenant)

    def import_(
        self,
        source: str | Path | IO[str],
        *,
        user_id: str | None = None,
        keep_user_ids: bool = False,
        on_progress: Callable[[int], None] | None = None,
        tenant: str | None = None,
    ) -> int:
        """Load a JSONL export into ``user_id``'s memory, all or nothing; returns how many memories were added.

        Every line is checked with the rules of ``add`` (an error names the line and the field); the file's user ids
        are ignored unless ``keep_user_ids=True`` (an administrator's restore). An id this user already has is
        skipped; one another user holds is an error naming the line (a tenant-bound caller's ids are derived).
        """
        return self._services.transfer.import_(
            source, user_id=user_id, keep_user_ids=keep_user_ids, on_progress=on_progress, tenant=tenant
        )

    def users(self, *, tenant: str | None = None, limit: int = 100, offset: int = 0) -> builtins.list[UserSummary]:
        """The users of a tenant (in order of first arrival) with how many memories each holds (none where the
        backend cannot list them).
        """
        return self._services.transfer.users(tenant=tenant, limit=limit, offset=offset)

    def stats(self, *, user_id: str | None = None, tenant: str | None = None) -> Stats:
        """Counts and size of the store (or of one user's memories; a tenant other than the default needs one)."""
        return self._services.transfer.stats(user_id=user_id, tenant=tenant)

    def reindex(self, *, batch_size: int = 256, on_progress: Callable[[int], None] | None = None) -> int:
        """Re-embed every memory with the configured embedder and record it as the store's model; returns how
        many memories this call embedded. An interrupted reindex leaves the old state and resumes when run again.
        """
        return self._services.transfer.reindex(batch_size=batch_size, on_progress=on_progress)
