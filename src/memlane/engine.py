"""The ``Memory`` facade: it binds each call's scope and delegates to one service per concern (``memlane.services``).

The services hold the write and read paths, jobs, lifecycle, security views, the graph and transfer; this class
keeps the public API and nothing else.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Self

from memlane.models import HistoryEvent
from memlane.records.inputs import FiltersInput, MessagesInput
from memlane.records.keys import content_hash, index_text, message_hash, normalise_text

if TYPE_CHECKING:  # the services, models and stores load when a Memory is made, not when this module is imported
    from memlane.answer.ask import Answer
    from memlane.answer.context import Context
    from memlane.broker import JobRun, RetryPolicy
    from memlane.config import Config, RetrievalPreset
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
    from memlane.services.scope import Scope

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _bind(self, user_id: object, tenant: object, *, counts: bool = True) -> Scope:
        """The checked scope of a user-scoped call (and the searches' access counts written first, unless
        ``counts=False``: a search, which only adds to them).
        """
        return self._services.core.bind(user_id, tenant, counts=counts)

    def _write_access(self) -> None:
        """Write the access counts gathered by searches (best-effort: a failure is logged, never raised)."""
        self._services.core.write_access()

    def _insert(self, items: Sequence[MemoryItem], event: HistoryEvent = HistoryEvent.ADD) -> None:
        """Embed, enrich and store ``items`` as the write path does (for tools that write typed memories)."""
        self._services.writes.indexer.insert(items, event)

    def _handle_job(self, job: Job) -> None:
        """Run one claimed background job in this process (extraction under the user's consolidation lock)."""
        self._services.handler(job)

    def _preset(self, name: object) -> RetrievalPreset:
        """The named retrieval preset (``None``: the configured default)."""
        return self._services.reads.preset(name)

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

        A message already stored (same scope, normalised text, given timestamp and occurrence in the call) is
        not stored again: it is returned as stored and listed in ``duplicates``. With ``infer`` (default
        ``config.infer``) typed memories are extracted from the new messages, deduplicated and consolidated;
        with ``async_mode`` that happens on the background worker and ``job_id`` names the job, which was
        queued in the same transaction as the messages.
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
        """Store documents or notes (strings, ``Document``s or their dicts) as ``kind=document`` memories, all or none.

        Unlike ``add``, each is a memory of its own: no session, no neighbours, no extraction. A long text is split
        into passages at paragraph and sentence boundaries within the embedder's window, each embedded; search
        scores the document by its best passage and names it (``Hit.passage``). A text already stored (same user,
        agent and normalised text) is returned as stored and listed in ``duplicates``.
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
        memories of role ``observation``, their tags as typed entities; all or none. Already stored ones are
        listed in ``duplicates``.
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
        (estimated) tokens: current facts first, then supporting turns, each with its date and speaker. Memories
        flagged as likely prompt injections are left out unless ``include_flagged``.
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
        """Record whether a returned memory was useful for its query; ``memlane tune`` learns weights from this.

        Pass the ``Hit`` that search returned (it knows its query and user), or a memory id with ``query``
        and ``user_id``.
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
        """Learn fusion weights from labelled queries (or from recorded feedback) and save them as preset ``name``.

        Queries are split into fitting and held-out sides by group (a conversation, or the query itself), and the
        result reports recall@k before and after on both; only the held-out gain says whether the weights help.
        """
        return self._services.reads.tune(queries, name=name, base=base, k=k, test_share=test_share, save=save)

    # -- background jobs (memlane.services.jobs) --------------------------------------------------------------------------
    def run_job(self, job_id: str, *, policy: RetryPolicy | None = None) -> JobRun:
        """Run one job by id, as a broker's worker does when a message names it: only if the job table says it
        is queued or abandoned, so a redelivered message never does the work twice; a failure is queued again
        with backoff, or dead-lettered after ``policy.max_attempts`` (default from the config).
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
        """A background job of this tenant by its id alone, and the typed memories it wrote (see
        ``memlane.lifecycle.job_result``); ``NotFoundError`` when the tenant has no such job.
        """
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
        """Remove a memory from every index; its history keeps the events but not the text.

        Typed memories extracted from it alone are removed too; those with other sources just lose this one.
        Returns the ids removed, ``memory_id`` first.
        """
        return self._services.lifecycle.delete(self._bind(user_id, tenant), memory_id)

    def delete_all(self, *, user_id: str, tenant: str | None = None) -> int:
        """Remove every memory and all history of one user; returns how many memories went."""
        return self._services.lifecycle.delete_all(self._bind(user_id, tenant))

    def history(self, memory_id: str, *, user_id: str, tenant: str | None = None) -> builtins.list[HistoryEntry]:
        """Every recorded change of a memory, oldest first (text is erased once it is deleted).

        ``NotFoundError`` if this user never had a memory with that id (a deleted one keeps its history).
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
        """Block until background index work is done, at most ``timeout`` seconds; whether it is.

        A scope that grows past ``IndexSettings.exact_below`` vectors (50,000) gets its HNSW graph built on a
        background thread while exact search keeps answering, and a scope of 20,000 memories or more gets its
        in-memory read model (BM25 postings and candidate facts) built on one at its first search while the
        tables answer; call this after a bulk import or at start-up to have both ready before serving. Never
        needed for correct results.
        """
        return self._services.lifecycle.wait_for_index(timeout)

    def compact(self) -> Compaction:
        """Rewrite the store's files from their live content, so that no byte of a deleted memory stays in them
        (SQLite: ``VACUUM``; PostgreSQL: ``VACUUM FULL`` of memlane's tables, which locks each table while it is
        rewritten). What a delete leaves is already unreachable to every read; this removes it from the disk too.
        """
        return self._services.lifecycle.compact()

    # -- security: flags, fenced context, redacted originals (memlane.services.security) ----------------------------------
    def flags(self, memory_ids: Sequence[str], *, user_id: str, tenant: str | None = None) -> dict[str, InjectionFlag]:
        """The injection flags of those of ``memory_ids`` that are flagged, or extracted from a flagged message."""
        # counts=False: flags read no usage counts, so the searches' gathered counts are left to be written with the
        # next call that does (an adapter that flags its search hits must not change what the next search reports)
        return self._services.security.flags(self._bind(user_id, tenant, counts=False), memory_ids)

    def flagged(
        self, *, user_id: str | None = None, tenant: str | None = None, limit: int = 100, offset: int = 0
    ) -> builtins.list[FlaggedMemory]:
        """Memories flagged as likely prompt injections (of one user, or all), their text kept, with the reason and
        score; most recently flagged first. An administrator's view: these are left out of assembled context.
        Without ``user_id`` it lists the whole store, so it is refused for a tenant other than the default.
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
        """Hits assembled for a prompt as quoted data (see ``memlane.security.sanitise.fence``): flagged memories
        left out unless ``include_flagged``, within ``token_budget`` tokens.
        """
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
        scope = self._bind(user_id, tenant)
        return self._services.graph.relations(scope, entity=entity, current_only=current_only)

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
        scope = self._bind(user_id, tenant)
        return self._services.graph.split_entity(scope, entity, new_name, memory_ids=memory_ids)

    def routines(
        self, *, user_id: str, tenant: str | None = None, min_occurrences: int = 3
    ) -> builtins.list[MemoryItem]:
        """Detect recurring actions in this user's turns and store each as a memory of kind ``routine`` (its
        sources the supporting turns, its confidence from how many days and how regular); a routine already
        stored is updated when its evidence changed. Returns the user's current routines.
        """
        return self._services.graph.routines(self._bind(user_id, tenant), min_occurrences=min_occurrences)

    # -- export / import / maintenance (memlane.services.transfer) --------------------------------------------------------
    def export(self, dest: str | Path | IO[str], *, user_id: str | None = None, tenant: str | None = None) -> int:
        """Write memories (one user's, or all of the tenant's) as JSONL: a header line, then one memory per line.

        A path is written whole or not at all; every line is checked with the rules ``import_`` applies, so an
        export never holds what its import would reject. User ids are written without their tenant.
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

        Every line is checked with the rules of ``add`` (an error names the line and the field). The file's own
        user ids are ignored unless ``keep_user_ids=True`` (an administrator's restore of a whole store), so one
        file cannot write into another user's memory. A memory whose id this user already has is skipped (so
        re-importing is a no-op); an id that belongs to another user is an error naming the line, except for a
        caller bound to a tenant (``tenant`` given, as the REST server always does): its memories get ids derived
        from the user and the file's id (``memlane.security.import_ids``), so the answer is the same whether the
        id exists elsewhere or not. Named with a trailing underscore as ``import`` is a keyword.
        """
        return self._services.transfer.import_(
            source, user_id=user_id, keep_user_ids=keep_user_ids, on_progress=on_progress, tenant=tenant
        )

    def users(self, *, tenant: str | None = None, limit: int = 100, offset: int = 0) -> builtins.list[UserSummary]:
        """The users of a tenant (in order of first arrival) with how many memories each holds; what the inspector's
        user list shows. A backend that cannot list its users returns none.
        """
        return self._services.transfer.users(tenant=tenant, limit=limit, offset=offset)

    def stats(self, *, user_id: str | None = None, tenant: str | None = None) -> Stats:
        """Counts and size of the store (or of one user's memories; a tenant other than the default needs one)."""
        return self._services.transfer.stats(user_id=user_id, tenant=tenant)

    def reindex(self, *, batch_size: int = 256, on_progress: Callable[[int], None] | None = None) -> int:
        """Re-embed every memory with the configured embedder and record it as the store's model.

        New vectors are written beside the live ones, which searches keep using; the switch to the new vectors
        and model happens in the same transaction as the last batch. A reindex that is interrupted leaves the
        old, consistent state, and run again with the same embedder it resumes where it stopped. Returns how
        many memories this call embedded.
        """
        return self._services.transfer.reindex(batch_size=batch_size, on_progress=on_progress)
