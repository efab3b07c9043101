"""The ``Memory`` facade: validates, orchestrates the write and read paths, and owns nothing else."""

from __future__ import annotations

import builtins
import contextlib
import functools
import hashlib
import logging
import threading
import time
import unicodedata
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from json.encoder import encode_basestring  # what json.dumps writes for a string when ensure_ascii is off
from pathlib import Path
from typing import IO, Any, Concatenate, ParamSpec, Self, TypeVar

import numpy as np

from memlane.answer.ask import Answer, Asker
from memlane.answer.context import Context, assemble
from memlane.answer.fence import fence as fence_item
from memlane.blas import blas_threads
from memlane.broker import JobRun, RetryPolicy, publisher_for
from memlane.broker.runner import run_job
from memlane.config import Config, RetrievalPreset, save_preset
from memlane.embedding import Embedder, make_embedder, store_spec
from memlane.embedding.base import Vectors
from memlane.enrich.aliases import EntityResolver
from memlane.enrich.entities import AliasRow, canonical
from memlane.enrich.pipeline import Enricher, forget_cached_text
from memlane.errors import (
    EmbedderMismatchError,
    ImportFormatError,
    JobTimeoutError,
    NotFoundError,
    StoreError,
    ValidationError,
)
from memlane.extraction.factory import make_extraction
from memlane.graph.neighbourhood import Neighbourhood, neighbourhood, resolve_entity
from memlane.graph.relations import relations_by_user, relations_from_claims
from memlane.graph.types import RelationClaim, RelationEdge
from memlane.ids import new_id
from memlane.lifecycle.access import AccessTally
from memlane.lifecycle.distill import EXTRACT_JOB, Distiller, typed_hash
from memlane.lifecycle.locks import Leases
from memlane.lifecycle.routine_store import store_routines
from memlane.llm.usage import UsageCounter
from memlane.models import (
    AddResult,
    ArchivedMemory,
    Compaction,
    Filters,
    FlaggedMemory,
    HistoryEntry,
    HistoryEvent,
    Hit,
    InjectionFlag,
    Job,
    JobState,
    MemoryItem,
    MemoryKind,
    Message,
    Stats,
    UserSummary,
    utcnow,
)
from memlane.observe import Observation, check_observations, prepare
from memlane.retrieval.rerank import make_reranker
from memlane.retrieval.search import Retriever
from memlane.retrieval.tuning import FitResult, LabelledQuery, QueryMatrix, fit, split_groups
from memlane.scope import DEFAULT_TENANT, check_tenant, in_tenant, scope_key, split_key, unscope, unscope_all
from memlane.security.guard import Guard, Screened, flags_for
from memlane.security.sanitise import Fenced
from memlane.security.sanitise import fence as fence_hits
from memlane.security.transfer import EXPORT_FORMAT, ImportLine, read_export, write_export
from memlane.security.validation import (
    Limits,
    check_bool,
    check_callback,
    check_filters,
    check_float,
    check_id,
    check_int,
    check_messages,
    check_metadata,
    check_path,
    check_text,
    check_time,
    optional_id,
    require_scope,
)
from memlane.store import Store, open_store
from memlane.store.base import StoreTransfer
from memlane.store.outcome import JobClaim, JobFencedError, JobOutcome
from memlane.store.records import embed_hash
from memlane.telemetry import timed  # telemetry: per-operation metrics and spans (memlane.telemetry)
from memlane.worker import JobDeferred, JobWorker

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")

MessagesInput = str | Message | Mapping[str, Any] | Sequence[str | Message | Mapping[str, Any]]
FiltersInput = Filters | Mapping[str, Any] | None


def normalise_text(text: str) -> str:
    """The form hashed for idempotency: NFC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


def _key_json(parts: Sequence[str | None], occurrence: int | None = None) -> str:
    """``json.dumps([*parts, occurrence], ensure_ascii=False)`` (without ``occurrence`` when it is None), written
    directly: strings as the encoder writes them, None as null (a third of the encoder's time).
    """
    out = ["null" if part is None else encode_basestring(part) for part in parts]
    if occurrence is not None:
        out.append(str(int(occurrence)))
    return "[" + ", ".join(out) + "]"


def content_hash(
    user_id: str, agent_id: str | None, session_id: str | None, kind: str, text: str, *, normalised: str | None = None
) -> str:
    """SHA-256 of the normalised text within its scope (``normalised``: ``normalise_text(text)`` when known)."""
    norm = normalise_text(text) if normalised is None else normalised
    return hashlib.sha256(_key_json([user_id, agent_id, session_id, kind, norm]).encode("utf-8")).hexdigest()


def message_hash(
    user_id: str,
    agent_id: str | None,
    session_id: str | None,
    text: str,
    timestamp: datetime | None = None,
    occurrence: int = 0,
    *,
    normalised: str | None = None,
) -> str:
    """The idempotency key of a message: its scope and normalised text, the timestamp the caller gave (if any),
    and its occurrence number among identical messages of the same ``add`` call.

    So re-adding a conversation is a no-op, while the same words said twice in one batch stay two turns.
    Without a timestamp and at occurrence 0 it equals ``content_hash`` (the key of stores written before).
    ``normalised`` is ``normalise_text(text)`` when the caller has it already.
    """
    norm = normalise_text(text) if normalised is None else normalised
    if timestamp is None and occurrence == 0:
        return content_hash(user_id, agent_id, session_id, MemoryKind.MESSAGE.value, text, normalised=norm)
    stamp = None if timestamp is None else timestamp.isoformat()
    payload = _key_json([user_id, agent_id, session_id, MemoryKind.MESSAGE.value, norm, stamp], occurrence)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def index_text(item: MemoryItem) -> str:
    """What gets embedded and full-text indexed: a message's text prefixed by its speaker when known."""
    if item.kind is MemoryKind.MESSAGE and item.speaker:
        return f"{item.speaker}: {item.text}"
    return item.text


def _blas_held(method: Callable[Concatenate[Memory, P], R]) -> Callable[Concatenate[Memory, P], R]:
    """Run a ``Memory`` method with BLAS held to ``config.blas_threads`` (see ``memlane.blas``)."""

    @functools.wraps(method)
    def held(self: Memory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with blas_threads(self.config.blas_threads):
            return method(self, *args, **kwargs)

    return held


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
        self.config = config or Config.from_env()
        self.limits = Limits.from_config(self.config)
        target = path if path is not None else self.config.default_store
        self._embedder = (
            embedder
            if isinstance(embedder, Embedder)
            else make_embedder(embedder or self.config.embedder, cache_dir=self.config.model_cache)
        )
        self._extraction = make_extraction(self.config)  # before the store: it may fail on a missing extra
        self._store: Store = _open(target)
        if not isinstance(embedder, Embedder):
            spec = embedder or self.config.embedder
            held = self._store.embedder_identity()
            followed = store_spec(spec, held[0] if held else None)
            if followed != spec:
                self._embedder = make_embedder(followed, cache_dir=self.config.model_cache)
        self._access = AccessTally()  # searches' access counts, written in batches (memlane.lifecycle.access)
        self._guard = Guard(self.config, chat=self._extraction.chat)  # injection detection and PII redaction
        self._enricher = Enricher(self._embedder)
        self._retriever = Retriever(
            self._store,
            self._embedder,
            self._enricher,
            half_life_days=self.config.recency_half_life_days,
            reranker=make_reranker(self.config.reranker),
            rerank_depth=self.config.rerank_depth,
        )
        self._distiller = Distiller(
            self._store,
            embed=self._embed,
            enrich=self._enrich,
            extractor=self._extraction.extractor,
            consolidator=self._extraction.consolidator,
            min_confidence=self.config.min_confidence,
            capacity=self.config.capacity,
            weights=self.config.survival,
            evict_messages=self.config.evict_messages,
        )
        # One writer of typed memories per user at a time: consolidation reads, decides, then writes. The RLock
        # serialises this process's threads, the store lock (a lease) the processes sharing the file.
        self._lifecycle = threading.RLock()
        self._leases = Leases(self._store)
        self._worker = JobWorker(
            self._store,
            self._handle_job,
            leases=self._leases,
            ready=self._embedder_ready,
            background=self.config.background_worker,
            policy=RetryPolicy.from_config(self.config),
        )
        self._publisher = publisher_for(self.config, self._store.location)  # async jobs go to Celery if set
        if not self._store.read_only:  # a read-only store runs no jobs: they wait for a writer
            self._worker.recover()

    # -- lifecycle ---------------------------------------------------------------------------------
    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the job worker (after the job in hand; queued jobs wait for the next open) and close the store."""
        self._write_access()
        self._worker.stop()
        if self._publisher is not None:
            self._publisher.close()
        self._leases.close()
        self._extraction.close()
        self._store.close()

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

    def _embedder_ready(self) -> bool:
        """Whether this embedder may write vectors to the store (it made them, or the store has none yet)."""
        held = self._store.embedder_identity()
        return held is None or held[0] == self._embedder.identity

    @contextlib.contextmanager
    def _consolidating(self, user_id: str) -> Iterator[None]:
        """Hold this user's consolidation lock, in this process and across processes."""
        with self._lifecycle, self._leases.lock(f"consolidate:{user_id}"):
            yield

    def _check_embedder(self) -> None:
        held = self._store.embedder_identity()
        if held is not None and held[0] != self._embedder.identity:
            raise EmbedderMismatchError(
                f"{self._store.location} was indexed with embedder {held[0]!r} but {self._embedder.identity!r} "
                "is configured; run `memlane reindex` to re-embed every memory with the configured model, "
                "or open it with the embedder it was built with"
            )

    # -- write path --------------------------------------------------------------------------------
    @timed("add")  # telemetry
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
        limit = self.limits.id_chars
        user_id = self._user(user_id, tenant)
        session_id = optional_id(session_id, max_chars=limit, what="session_id")
        agent_id = optional_id(agent_id, max_chars=limit, what="agent_id")
        base_meta = check_metadata(metadata, "metadata", self.limits)
        default_ts = check_time(timestamp, what="timestamp", limits=self.limits) if timestamp is not None else None
        infer = self.config.infer if infer is None else check_bool(infer, what="infer")
        check_bool(async_mode, what="async_mode")
        msgs = check_messages(messages, self.limits)
        now = utcnow()
        items: list[MemoryItem] = []
        seen: dict[tuple[str, datetime | None], int] = {}
        for i, msg in enumerate(msgs):
            text = msg.content
            meta = check_metadata({**base_meta, **msg.metadata}, f"message {i} metadata", self.limits)
            given_ts = msg.timestamp or default_ts
            norm = normalise_text(text)
            key = (norm, given_ts)
            occurrence = seen.get(key, 0)
            seen[key] = occurrence + 1
            items.append(
                MemoryItem(
                    id=new_id(),
                    user_id=user_id,
                    agent_id=agent_id,
                    session_id=session_id,
                    kind=MemoryKind.MESSAGE,
                    role=msg.role,
                    speaker=msg.name,
                    text=text,
                    timestamp=given_ts or now,
                    created_at=now,
                    updated_at=now,
                    content_hash=message_hash(
                        user_id, agent_id, session_id, text, given_ts, occurrence, normalised=norm
                    ),
                    metadata=meta,
                )
            )
        stored = self._store.find_hashes(user_id, [it.content_hash for it in items])
        fresh = [it for it in items if it.content_hash not in stored]
        result = AddResult(
            items=[stored.get(it.content_hash, it) for it in items],
            duplicates=[stored[it.content_hash].id for it in items if it.content_hash in stored],
        )
        if not fresh:
            return unscope(result)
        self._screen(user_id, fresh)
        if not infer:
            self._insert(fresh)
            if self.config.capacity is not None:
                with self._consolidating(user_id):
                    self._distiller.enforce_capacity(user_id)
            return unscope(result)
        job = Job(
            id=uuid.uuid4().hex,
            user_id=user_id,
            kind=EXTRACT_JOB,
            payload={"message_ids": [it.id for it in fresh]},
            created_at=now,
            updated_at=now,
        )
        if async_mode:
            if self._publisher is not None:
                job = self._publisher.hold(job)
            self._insert(fresh, jobs=[job])
            result.job_id = job.id
            result.queue, result.queue_notice = self._hand_off(job)
            return unscope(result)
        self._extract_now(job, fresh, result)
        return unscope(result)

    def _screen(self, user_id: str, items: Sequence[MemoryItem]) -> Screened:
        """Scan new memories for injection and redact their PII (in place); record flags and sealed originals
        before the memories are written.
        """
        screened = self._guard.screen(items)
        self._guard.record(self._store, user_id, screened)
        return screened

    def _extract_now(self, job: Job, fresh: Sequence[MemoryItem], result: AddResult) -> None:
        """Store the messages with their extraction job already claimed by this process, then run it here.

        The job is written in the same transaction as the messages, so a crash before it is done leaves it for
        the next process that opens the store (once this one's lease lapses).
        """
        running = job.model_copy(update={"state": JobState.RUNNING, "attempts": 1})
        self._insert(fresh, jobs=[running], claim=self._leases.claim())
        self._leases.hold(job.id)
        owner = self._leases.owner
        try:
            with self._consolidating(job.user_id):
                outcome = self._distiller.run(job.user_id, [it.id for it in fresh], job=running, owner=owner)
            result.memories, result.job_id = outcome.memories, outcome.failed_job
        except JobFencedError:  # deleted meanwhile: nothing was written; if it still exists it runs again
            self._store.release_job(job.id, owner)
            result.job_id = job.id
            self._worker.notify()
        except Exception as exc:
            try:
                error = f"{type(exc).__name__}: {exc}"
                self._store.finish_job(JobOutcome(job.id, JobState.FAILED, error, owner=owner))
            except JobFencedError:
                pass
            raise
        finally:
            self._leases.drop(job.id)

    @_blas_held  # embedding, labels and vector comparisons are matrix products
    def _insert(
        self,
        items: Sequence[MemoryItem],
        event: HistoryEvent = HistoryEvent.ADD,
        *,
        enrich: bool = True,
        jobs: Sequence[Job] = (),
        claim: JobClaim | None = None,
        annotate: Callable[[Sequence[MemoryItem]], dict[str, builtins.list[AliasRow]]] | None = None,
    ) -> None:
        if not items:
            return
        self._check_embedder()
        texts = [index_text(it) for it in items]
        vectors = self._embed(texts)
        tables: dict[str, builtins.list[AliasRow]] = {}  # the alias tables enrichment reads, for the relations
        taught: dict[str, builtins.list[str]] = {}  # the aliases each new item taught: it is their source
        aliases = self._enrich(items, vectors, tables, taught) if enrich else None
        if annotate is not None:  # facts the caller knows beyond enrichment (an observation's tagged entities)
            for user, rows in annotate(items).items():
                aliases = aliases if aliases is not None else {}
                aliases.setdefault(user, []).extend(rows)
        relations = relations_by_user(items, aliases, self._store, tables) if aliases is not None else None
        if self._store.embedder_identity() is None:
            self._store.set_embedder_identity(self._embedder.identity, self._embedder.dim)
        self._store.insert(
            items,
            texts,
            vectors,
            event=event,
            aliases=aliases,
            jobs=jobs,
            claim=claim,
            relations=relations,
            taught=taught,
        )

    # -- background jobs ---------------------------------------------------------------------------
    def _hand_off(self, job: Job) -> tuple[str, str | None]:
        """Publish a queued job to the broker, or (none configured, or unreachable) wake the embedded worker."""
        if self._publisher is not None:
            problem = self._publisher.publish(job.id)
            if problem is None:
                return "celery", None
            self._store.unhold_job(job.id)
            log.warning("job %s left to the embedded worker: %s", job.id, problem)
            self._worker.notify()
            return "embedded", f"{problem}; the job runs on the embedded worker instead"
        self._worker.notify()
        return "embedded", None

    def run_job(self, job_id: str, *, policy: RetryPolicy | None = None) -> JobRun:
        """Run one job by id, as a broker's worker does when a message names it: only if the job table says it
        is queued or abandoned, so a redelivered message never does the work twice; a failure is queued again
        with backoff, or dead-lettered after ``policy.max_attempts`` (default from the config).
        """
        job_id = check_id(job_id, what="job_id", max_chars=self.limits.id_chars)
        return run_job(
            self._store, self._leases, self._handle_job, job_id, policy or RetryPolicy.from_config(self.config)
        )

    def pending_jobs(self, *, limit: int = 10_000) -> builtins.list[Job]:
        """Every queued or running job of the store (all users), oldest first: what a worker at start picks up."""
        limit = check_int(limit, what="limit", low=0, high=self.limits.list_limit)
        queued = self._store.jobs(None, JobState.QUEUED, limit)
        return queued + self._store.jobs(None, JobState.RUNNING, max(0, limit - len(queued)))

    @timed("extract_job")  # telemetry
    @_blas_held  # extraction embeds and compares vectors
    def _handle_job(self, job: Job) -> None:
        owner = self._leases.owner
        if job.kind != EXTRACT_JOB:
            self._store.finish_job(JobOutcome(job.id, JobState.FAILED, f"unknown job kind {job.kind!r}", owner=owner))
            return
        if not self._embedder_ready():
            raise JobDeferred("the store was indexed with another embedder; the job waits for a process using it")
        ids = [str(i) for i in job.payload.get("message_ids", [])]
        with self._consolidating(job.user_id):
            self._distiller.run(job.user_id, ids, job=job, owner=owner)

    def job(self, job_id: str, *, user_id: str, tenant: str | None = None) -> Job:
        """A background job of this user: its state, attempts and last error."""
        user_id, job_id = self._scoped(user_id, job_id, "job_id", tenant)
        return unscope(self._store.job(user_id, job_id))

    def jobs(
        self, *, user_id: str, state: JobState | str | None = None, limit: int = 100, tenant: str | None = None
    ) -> builtins.list[Job]:
        """The background jobs of this user, oldest first, optionally in one state."""
        user_id = self._user(user_id, tenant)
        limit = check_int(limit, what="limit", low=0, high=self.limits.list_limit)
        try:
            wanted = None if state is None else JobState(state)
        except (ValueError, TypeError):
            raise ValidationError(f"unknown job state {state!r}; one of {[s.value for s in JobState]}") from None
        return unscope_all(self._store.jobs(user_id, wanted, limit))

    def wait(self, job_id: str, *, user_id: str, timeout: float | None = None, tenant: str | None = None) -> Job:
        """Block until a job is done or failed and return it; ``JobTimeoutError`` after ``timeout`` seconds."""
        self._scoped(user_id, job_id, "job_id", tenant)
        if timeout is not None:
            timeout = check_float(timeout, what="timeout", low=0.0, high=1e9)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if not self._worker.background:
                self._worker.run_pending()
            found = self.job(job_id, user_id=user_id, tenant=tenant)
            if found.state in (JobState.DONE, JobState.FAILED):
                return found
            self._check_embedder()  # a job this process may not run would never finish here
            if deadline is not None and time.monotonic() >= deadline:
                raise JobTimeoutError(f"job {job_id} is still {found.state.value} after {timeout} s")
            self._worker.notify()
            time.sleep(0.02)

    def flush(self, *, timeout: float | None = None) -> None:
        """Block until no background job is queued or running; ``JobTimeoutError`` after ``timeout`` seconds."""
        self._write_access()  # the searches' counts first, so that what this reads or writes includes them
        if timeout is not None:
            timeout = check_float(timeout, what="timeout", low=0.0, high=1e9)
        if not self._worker.wait_idle(timeout):
            self._check_embedder()
            raise JobTimeoutError(f"background jobs still pending after {timeout} s")

    def retry_jobs(self, *, user_id: str | None = None, tenant: str | None = None) -> int:
        """Queue failed jobs (of one user, or all) again; returns how many."""
        if user_id is not None:
            user_id = self._user(user_id, tenant)
        n = self._store.requeue_jobs((JobState.FAILED,), user_id)
        if n:
            self._worker.notify()
        return n

    # -- forgetting --------------------------------------------------------------------------------
    def archive(
        self, *, user_id: str, limit: int = 100, offset: int = 0, tenant: str | None = None
    ) -> builtins.list[ArchivedMemory]:
        """Memories of this user evicted beyond capacity, most recently archived first."""
        user_id = self._user(user_id, tenant)
        limit, offset = self._page(limit, offset)
        return unscope_all(self._store.archived(user_id, limit, offset))

    def restore(self, memory_id: str, *, user_id: str, tenant: str | None = None) -> MemoryItem:
        """Bring an archived memory back into every index (capacity is enforced again at the next add)."""
        user_id, memory_id = self._scoped(user_id, memory_id, tenant=tenant)
        return unscope(self._store.restore(user_id, memory_id, utcnow()))

    def forget(self, *, user_id: str, hard: bool = False, tenant: str | None = None) -> builtins.list[str]:
        """Enforce ``config.capacity`` now: evict the lowest survival scores to the archive (destroy if ``hard``)."""
        user_id = self._user(user_id, tenant)
        check_bool(hard, what="hard")
        with self._consolidating(user_id):
            return self._distiller.enforce_capacity(user_id, hard=hard)

    def _enrich(
        self,
        items: Sequence[MemoryItem],
        vectors: Vectors,
        tables: dict[str, builtins.list[AliasRow]] | None = None,
        taught: dict[str, builtins.list[str]] | None = None,
    ) -> dict[str, builtins.list[AliasRow]]:
        """Fill the write-time dimensions of new items; returns each user's changed entity-table rows (and puts
        each user's table as read into ``tables``, and the aliases each item taught, by id, into ``taught``).
        """
        by_user: dict[str, builtins.list[int]] = {}
        for i, item in enumerate(items):
            by_user.setdefault(item.user_id, []).append(i)
        changed: dict[str, builtins.list[AliasRow]] = {}
        for user_id, idx in by_user.items():
            stored = self._store.entity_aliases(user_id)
            if tables is not None:
                tables[user_id] = stored
            before = set(stored)
            resolver = EntityResolver.from_rows(before)
            learnt = self._enricher.enrich([items[i] for i in idx], vectors[idx], resolver)
            if taught is not None:
                taught.update(resolver.held(learnt))
            changed[user_id] = resolver.changes(before)
        return changed

    def _embed(self, texts: Sequence[str]) -> Vectors:
        """Embed with the store's vectors as a cache keyed by the SHA-256 of the exact text."""
        hashes = [embed_hash(t) for t in texts]
        known = self._store.cached_vectors(hashes)
        # the distinct texts not embedded yet, each with its key (hashed once)
        pending = list(dict.fromkeys((t, h) for t, h in zip(texts, hashes, strict=True) if h not in known))
        fresh: dict[str, Vectors] = {}
        batch = self.config.embed_batch
        for start in range(0, len(pending), batch):
            chunk = pending[start : start + batch]
            for (_, key), vec in zip(chunk, self._embedder.embed([t for t, _ in chunk]), strict=True):
                fresh[key] = vec
        known.update(fresh)
        return np.vstack([known[h] for h in hashes]).astype(np.float32, copy=False)

    # -- read path ---------------------------------------------------------------------------------
    @timed("search")  # telemetry
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
        user_id = self._user(user_id, tenant, counts=False)
        query = check_text(query, max_chars=self.limits.text_chars, what="query")
        check_int(top_k, what="top_k", low=1, high=self.limits.top_k)
        flt = check_filters(filters, self.limits)
        chosen = self._preset(preset_name)
        now = utcnow()
        with self._store.pinned(), blas_threads(self.config.blas_threads):  # one look at others' commits
            self._check_embedder()
            hits = self._retriever.search(query, user_id, top_k=top_k, filters=flt, preset=chosen, now=now)
        if hits:
            if not self._store.read_only and self._access.note(user_id, [h.memory.id for h in hits], now):
                self._write_access()
            for h in hits:
                h.memory.access_count += 1
                h.memory.last_accessed = now
        return unscope_all(hits)

    @timed("ask")  # telemetry
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
        bare, key = user_id, self._user(user_id, tenant)
        question = check_text(question, max_chars=self.limits.text_chars, what="question")
        check_int(top_k, what="top_k", low=1, high=self.limits.top_k)
        check_int(token_budget, what="token_budget", low=1, high=1_000_000)
        at = utcnow() if now is None else check_time(now, what="now", limits=self.limits)
        asker = Asker(
            self._store,
            lambda q, k: self._unflagged(self.search(q, user_id=bare, tenant=tenant, top_k=k), bare, tenant),
            fence_item,
            self._extraction.chat,
        )
        answer = asker.ask(question, key, top_k=top_k, now=at, token_budget=token_budget)
        unscope_all(answer.hits)
        return answer

    @timed("context")  # telemetry
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
        check_int(token_budget, what="token_budget", low=1, high=1_000_000)
        check_bool(include_flagged, what="include_flagged")
        hits = self.search(query, user_id=user_id, tenant=tenant, top_k=top_k)
        if not include_flagged:
            hits = self._unflagged(hits, user_id, tenant)
        return assemble(hits, token_budget=token_budget, fence=fence_item)

    def _unflagged(self, hits: builtins.list[Hit], user_id: str, tenant: str | None) -> builtins.list[Hit]:
        """``hits`` without the memories flagged as likely prompt injections (kept out of anything sent to a model)."""
        flagged = self.flags([m.id for h in hits for m in (h.memory, *h.related)], user_id=user_id, tenant=tenant)
        if not flagged:
            return hits
        return [
            h.model_copy(update={"related": [m for m in h.related if m.id not in flagged]})
            for h in hits
            if h.memory.id not in flagged
        ]

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
        user_id = self._user(user_id, tenant)
        session_id = optional_id(session_id, max_chars=self.limits.id_chars, what="session_id")
        agent_id = optional_id(agent_id, max_chars=self.limits.id_chars, what="agent_id")
        batch = check_observations(observations, self.limits)
        known = {r.alias: r.target for r in self._store.entity_aliases(user_id)}
        prepared = prepare(batch, user_id=user_id, session_id=session_id, agent_id=agent_id, known=known)
        stored = self._store.find_hashes(user_id, [it.content_hash for it in prepared.items])
        fresh = [it for it in prepared.items if it.content_hash not in stored]
        self._insert(fresh, annotate=prepared.annotate)
        return unscope(
            AddResult(
                items=[stored.get(it.content_hash, it) for it in prepared.items],
                duplicates=[stored[it.content_hash].id for it in prepared.items if it.content_hash in stored],
            )
        )

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
        if isinstance(hit, Hit):
            memory_id = hit.memory.id
            user_id = user_id or hit.memory.user_id
            query = query or hit.query
        else:
            memory_id = hit
        memory_id = check_id(memory_id, what="memory_id", max_chars=self.limits.id_chars)
        user_id = self._user(user_id, tenant)
        if not query:
            raise ValidationError("feedback needs the query the memory was returned for")
        query = check_text(query, max_chars=self.limits.text_chars, what="query")
        check_bool(useful, what="useful")
        self._store.add_feedback(user_id, query, memory_id, useful, utcnow())

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
        name = check_id(name, what="name", max_chars=64)
        start = self._preset(base, what="base")
        check_int(k, what="k", low=1, high=self.limits.top_k)
        check_float(test_share, what="test_share", low=0.0, high=0.9)
        check_bool(save, what="save")
        labelled = self._check_labelled(queries) if queries is not None else self._feedback_queries()
        if not labelled:
            raise ValidationError("no labelled queries: pass some, or record feedback on search results first")
        now = utcnow()
        dims = tuple(start.fusion.weights)
        matrices = [
            QueryMatrix.build(dims, self._retriever.features(q.query, q.user_id, start, now), q.relevant)
            for q in labelled
        ]
        train, test = split_groups(labelled, test_share)
        result = fit(matrices, start.fusion.weights, train, test, k=k)
        if save:
            description = (
                f"learned from {result.train_queries} queries on {base}; recall@{k} on {result.test_queries} "
                f"held-out queries {result.test_before:.3f} -> {result.test_after:.3f}"
            )
            save_preset(self.config.presets_file, name, start.name, result.weights, description)
        return result

    def _preset(self, name: object, what: str = "preset_name") -> RetrievalPreset:
        if name is not None:
            check_id(name, what=what, max_chars=64)
        return self.config.preset_for(name)  # type: ignore[arg-type]

    def _check_labelled(self, queries: object) -> builtins.list[LabelledQuery]:
        if not isinstance(queries, Sequence) or isinstance(queries, str):
            raise ValidationError(f"queries must be a list of LabelledQuery, got {type(queries).__name__}")
        if len(queries) > self.limits.batch:
            raise ValidationError(f"{len(queries)} queries, more than the limit of {self.limits.batch}")
        for i, q in enumerate(queries):
            if not isinstance(q, LabelledQuery):
                raise ValidationError(f"queries[{i}] must be a LabelledQuery, got {type(q).__name__}")
            check_text(q.query, max_chars=self.limits.text_chars, what=f"queries[{i}].query")
            require_scope(q.user_id, max_chars=self.limits.id_chars, what=f"queries[{i}].user_id")
            for mid in q.relevant:
                check_id(mid, what=f"queries[{i}].relevant", max_chars=self.limits.id_chars)
        return builtins.list(queries)

    def _feedback_queries(self) -> builtins.list[LabelledQuery]:
        grouped: dict[tuple[str, str], set[str]] = {}
        for judged in self._store.feedback():
            relevant = grouped.setdefault((judged.user_id, judged.query), set())
            if judged.useful:
                relevant.add(judged.memory_id)
        return [LabelledQuery(q, u, frozenset(r)) for (u, q), r in grouped.items() if r]

    def get(self, memory_id: str, *, user_id: str, tenant: str | None = None) -> MemoryItem:
        """One memory; ``NotFoundError`` if this user has none with that id."""
        user_id, memory_id = self._scoped(user_id, memory_id, tenant=tenant)
        return unscope(self._store.get(user_id, memory_id))

    def _user(self, user_id: object, tenant: object, *, counts: bool = True) -> str:
        """The store's scope key of a checked ``user_id`` within a checked ``tenant`` (see ``memlane.scope``).

        Every user-scoped call passes here first, so here the searches' gathered access counts are written before
        the call reads or writes memories (``counts=False``: a search, which only adds to them).
        """
        key = scope_key(check_tenant(tenant), require_scope(user_id, max_chars=self.limits.id_chars))
        if counts and self._access:
            self._write_access()
        return key

    def _write_access(self) -> None:
        """Write the access counts gathered by searches (best-effort: a failure is logged, never raised)."""
        for user_id, uses in self._access.drain().items():
            # A full disk or a lock held too long must not fail a read.
            try:
                self._store.record_access(user_id, uses)
            except StoreError as exc:
                log.warning("access counts not recorded: %s", exc)

    def _scoped(
        self, user_id: object, memory_id: object, what: str = "memory_id", tenant: object = None
    ) -> tuple[str, str]:
        """A checked ``(scope key, id)`` pair."""
        return (
            self._user(user_id, tenant),
            check_id(memory_id, what=what, max_chars=self.limits.id_chars),
        )

    def _page(self, limit: object, offset: object) -> tuple[int, int]:
        return (
            check_int(limit, what="limit", low=0, high=self.limits.list_limit),
            check_int(offset, what="offset", low=0, high=self.limits.offset),
        )

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
        user_id = self._user(user_id, tenant)
        limit, offset = self._page(limit, offset)
        return unscope_all(self._store.list(user_id, check_filters(filters, self.limits), limit, offset))

    def history(self, memory_id: str, *, user_id: str, tenant: str | None = None) -> builtins.list[HistoryEntry]:
        """Every recorded change of a memory, oldest first (text is erased once it is deleted).

        ``NotFoundError`` if this user never had a memory with that id (a deleted one keeps its history).
        """
        user_id, memory_id = self._scoped(user_id, memory_id, tenant=tenant)
        entries = self._store.history(user_id, memory_id)
        if not entries:
            raise NotFoundError(f"no memory {memory_id!r} for this user")
        return entries

    # -- security: flags, fenced context, redacted originals (memlane.security) ----------------------
    def flags(self, memory_ids: Sequence[str], *, user_id: str, tenant: str | None = None) -> dict[str, InjectionFlag]:
        """The injection flags of those of ``memory_ids`` that are flagged, or extracted from a flagged message."""
        user_id = self._user(user_id, tenant)
        ids = [check_id(m, what="memory_ids", max_chars=self.limits.id_chars) for m in memory_ids]
        return flags_for(self._store, user_id, builtins.list(self._store.get_many(user_id, ids).values()))

    def flagged(
        self, *, user_id: str | None = None, tenant: str | None = None, limit: int = 100, offset: int = 0
    ) -> builtins.list[FlaggedMemory]:
        """Memories flagged as likely prompt injections (of one user, or all), their text kept, with the reason and
        score; most recently flagged first. An administrator's view: these are left out of assembled context.
        Without ``user_id`` it lists the whole store, so it is refused for a tenant other than the default.
        """
        if user_id is None:
            if check_tenant(tenant) != DEFAULT_TENANT:
                raise ValidationError("flagged() of a tenant other than the default needs a user_id")
        else:
            user_id = self._user(user_id, tenant)
        limit, offset = self._page(limit, offset)
        found = self._store.flagged(user_id, limit, offset)
        for f in found:
            unscope(f.memory)
        return found

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
        check_bool(include_flagged, what="include_flagged")
        flags = self.flags([h.memory.id for h in hits], user_id=user_id, tenant=tenant)
        return fence_hits(hits, token_budget, flags=flags, include_flagged=include_flagged)

    def reveal(self, memory_id: str, *, user_id: str, tenant: str | None = None) -> str:
        """The original text of a memory whose PII was redacted (its stored text when nothing was). For
        administrators: needs the PII key file (``Config.pii_key``), which only they should be able to read.
        """
        user_id, memory_id = self._scoped(user_id, memory_id, tenant=tenant)
        item = self._store.get(user_id, memory_id)
        original = self._guard.reveal(self._store, user_id, memory_id)
        return item.text if original is None else original

    # -- changes -----------------------------------------------------------------------------------
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
        user_id, memory_id = self._scoped(user_id, memory_id, tenant=tenant)
        if text is not None:
            text = check_text(text, max_chars=self.limits.text_chars)
        if metadata is not None:
            metadata = check_metadata(metadata, "metadata", self.limits)
        if importance is not None:
            importance = check_float(importance, what="importance", low=0.0, high=1.0)
        old = self._store.get(user_id, memory_id)
        changes: dict[str, Any] = {}
        new = old.model_copy(deep=True)
        if text is not None:
            new.text = text
            new.content_hash = (
                content_hash(user_id, old.agent_id, old.session_id, old.kind.value, new.text)
                if old.kind is MemoryKind.MESSAGE
                else typed_hash(user_id, old.agent_id, old.kind, new.text)
            )
            changes["text"] = True
            screened = self._screen(user_id, [new])
        if metadata is not None:
            new.metadata = dict(metadata)
            changes["metadata"] = {"old": old.metadata, "new": new.metadata}
        if importance is not None:
            new.importance = importance
            changes["importance"] = {"old": old.importance, "new": new.importance}
        if not changes:
            raise ValidationError("update needs at least one of text, metadata or importance")
        now = utcnow()
        new.updated_at = now
        body = vector = None
        aliases: builtins.list[AliasRow] = []
        taught: dict[str, builtins.list[str]] | None = None
        if text is not None:
            self._check_embedder()
            body = index_text(new)
            vectors = self._embed([body])
            vector = vectors[0]
            kept_importance = new.importance
            new.event_time = new.event_end = None
            taught = {}
            aliases = self._enrich([new], vectors, taught=taught).get(user_id, [])
            if importance is not None:
                new.importance = kept_importance
        entry = HistoryEntry(
            memory_id=memory_id,
            event=HistoryEvent.UPDATE,
            at=now,
            old_text=old.text if text is not None else None,
            new_text=new.text if text is not None else None,
            changes=changes,
        )
        relations = None
        if text is not None:  # the relations the old text stated go; the new text's are read
            relations = relations_by_user([new], {user_id: aliases}, self._store).get(user_id, [])
        self._store.replace(
            new,
            body,
            vector,
            entry,
            aliases,
            relations=relations,
            taught=None if taught is None else taught.get(new.id, []),
        )
        if text is not None:  # the old text's flag and sealed original no longer apply
            if memory_id in screened.clean:
                self._store.clear_flags(user_id, [memory_id])
            if not any(o.memory_id == memory_id for o in screened.originals):
                self._store.drop_originals(user_id, [memory_id])
            self._forget_cached_text()  # the replaced text may sit in them
        return unscope(new)

    def delete(self, memory_id: str, *, user_id: str, tenant: str | None = None) -> builtins.list[str]:
        """Remove a memory from every index; its history keeps the events but not the text.

        Typed memories extracted from it alone are removed too; those with other sources just lose this one.
        Returns the ids removed, ``memory_id`` first.
        """
        user_id, memory_id = self._scoped(user_id, memory_id, tenant=tenant)
        with self._lifecycle:
            removed = self._store.delete(user_id, memory_id, utcnow())
        self._forget_cached_text()
        return removed

    def delete_all(self, *, user_id: str, tenant: str | None = None) -> int:
        """Remove every memory and all history of one user; returns how many memories went."""
        user_id = self._user(user_id, tenant)
        removed = self._store.delete_user(user_id)
        self._forget_cached_text()
        return removed

    def wait_for_index(self, timeout: float | None = None) -> bool:
        """Block until background index work is done, at most ``timeout`` seconds; whether it is.

        A scope that grows past ``IndexSettings.exact_below`` vectors (50,000) gets its HNSW graph built on a
        background thread while exact search keeps answering, and a scope of 20,000 memories or more gets its
        in-memory read model (BM25 postings and candidate facts) built on one at its first search while the
        tables answer; call this after a bulk import or at start-up to have both ready before serving. Never
        needed for correct results.
        """
        if timeout is not None:
            timeout = check_float(timeout, what="timeout", low=0.0, high=float(7 * 24 * 3600))
        return self._store.wait_for_index(timeout)

    def compact(self) -> Compaction:
        """Rewrite the store's files from their live content, so that no byte of a deleted memory stays in them
        (SQLite: ``VACUUM``; PostgreSQL: ``VACUUM FULL`` of memlane's tables, which locks each table while it is
        rewritten). What a delete leaves is already unreachable to every read; this removes it from the disk too.
        """
        self._write_access()  # the searches' counts first: the rewrite then holds them
        return self._store.compact()

    def _forget_cached_text(self) -> None:
        """After an erasure: empty the in-process caches that may hold the erased text (enrichment's word sets,
        time phrases and names; the query vectors' cache, keyed by query text).
        """
        forget_cached_text()
        forget_queries = getattr(self._embedder, "clear", None)
        if callable(forget_queries):
            forget_queries()

    # -- knowledge graph (memlane.graph) -----------------------------------------------------------
    def graph(self, entity: str, *, user_id: str, tenant: str | None = None, limit: int = 10) -> Neighbourhood:
        """The neighbourhood of an entity (a name or alias such as "Mel" or "my sister"): its node, relations,
        the entities mentioned with it and its latest ``limit`` memories. ``NotFoundError`` when unknown.
        """
        user_id = self._user(user_id, tenant)
        entity = check_text(entity, max_chars=self.limits.id_chars, what="entity")
        check_int(limit, what="limit", low=1, high=self.limits.top_k)
        return neighbourhood(self._store, user_id, entity, limit=limit)

    def relations(
        self, *, user_id: str, tenant: str | None = None, entity: str | None = None, current_only: bool = False
    ) -> builtins.list[RelationEdge]:
        """The typed relations of this user's graph (those of one entity when given), each with its source memories
        and validity window; ``current_only`` leaves out relations a later one closed.
        """
        user_id = self._user(user_id, tenant)
        check_bool(current_only, what="current_only")
        names = [] if entity is None else [resolve_entity(self._store, user_id, entity)]
        return self._store.relations(user_id, names, current_only=current_only)

    def merge_entities(self, source: str, target: str, *, user_id: str, tenant: str | None = None) -> int:
        """Make ``source`` the same entity as ``target`` (its mentions, aliases and relations move; its name
        becomes an alias). Returns how many memories now name ``target`` instead.
        """
        user_id = self._user(user_id, tenant)
        a = resolve_entity(self._store, user_id, check_text(source, max_chars=self.limits.id_chars, what="source"))
        b = resolve_entity(self._store, user_id, check_text(target, max_chars=self.limits.id_chars, what="target"))
        with self._lifecycle:
            return self._store.merge_entities(user_id, a, b)

    def split_entity(
        self, entity: str, new_name: str, *, user_id: str, memory_ids: Sequence[str], tenant: str | None = None
    ) -> int:
        """Split the memories in ``memory_ids`` off ``entity`` into a new entity ``new_name`` of the same type (two
        people who shared a name); relations read only from those memories follow. Returns how many moved.
        """
        user_id = self._user(user_id, tenant)
        name = resolve_entity(self._store, user_id, check_text(entity, max_chars=self.limits.id_chars, what="entity"))
        new = canonical(check_text(new_name, max_chars=self.limits.id_chars, what="new_name"))
        if isinstance(memory_ids, str) or not all(isinstance(i, str) for i in memory_ids):
            raise ValidationError("memory_ids must be a list of memory id strings")
        with self._lifecycle:
            return self._store.split_entity(user_id, name, new, list(memory_ids))

    def routines(
        self, *, user_id: str, tenant: str | None = None, min_occurrences: int = 3
    ) -> builtins.list[MemoryItem]:
        """Detect recurring actions in this user's turns and store each as a memory of kind ``routine`` (its
        sources the supporting turns, its confidence from how many days and how regular); a routine already
        stored is updated when its evidence changed. Returns the user's current routines.
        """
        user_id = self._user(user_id, tenant)
        check_int(min_occurrences, what="min_occurrences", low=2, high=1_000_000)
        with self._lifecycle:
            found = store_routines(
                self._store,
                user_id,
                min_occurrences,
                insert=lambda items: self._insert(items, HistoryEvent.EXTRACT),
                embed=self._embed,
                index_text=index_text,
            )
        return unscope_all(found)

    # -- export / import ---------------------------------------------------------------------------
    def export(self, dest: str | Path | IO[str], *, user_id: str | None = None, tenant: str | None = None) -> int:
        """Write memories (one user's, or all of the tenant's) as JSONL: a header line, then one memory per line.

        A path is written whole or not at all; every line is checked with the rules ``import_`` applies, so an
        export never holds what its import would reject. User ids are written without their tenant.
        """
        self._write_access()  # the searches' counts first, so that what this reads or writes includes them
        user_id = optional_id(user_id, max_chars=self.limits.id_chars, what="user_id")
        tenant = check_tenant(tenant)
        ident = self._store.embedder_identity()
        header: dict[str, object] = {"memlane_export": EXPORT_FORMAT, "embedder": ident[0] if ident else None}
        if user_id is not None:
            items = self._store.iter_items(scope_key(tenant, user_id))
        else:
            items = (it for it in self._store.iter_items(None) if in_tenant(it.user_id, tenant))
        return write_export(dest, header, (unscope(it) for it in items), self.limits)

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
        re-importing is a no-op); an id that belongs to another user is an error naming the line. Named with a
        trailing underscore as ``import`` is a keyword.
        """
        self._write_access()  # the searches' counts first, so that what this reads or writes includes them
        check_bool(keep_user_ids, what="keep_user_ids")
        tenant = check_tenant(tenant)
        if keep_user_ids:
            if user_id is not None:
                raise ValidationError("give user_id, or keep_user_ids=True to keep the file's user ids, not both")
            target = None
        else:
            target = self._user(user_id, tenant)
        on_progress = check_callback(on_progress, what="on_progress")
        lines = read_export(source, self.limits)
        for line in lines:
            self._retarget(line.item, target or scope_key(tenant, line.item.user_id))
        fresh = self._new_only(lines)
        items = [line.item for line in fresh]
        for owner in dict.fromkeys(it.user_id for it in items):
            self._screen(owner, [it for it in items if it.user_id == owner])
        if items:
            self._check_embedder()
            texts = [index_text(it) for it in items]
            parts = []
            for start in range(0, len(texts), 1000):
                parts.append(self._embed(texts[start : start + 1000]))
                if on_progress is not None:
                    on_progress(len(texts[start : start + 1000]))
            if self._store.embedder_identity() is None:
                self._store.set_embedder_identity(self._embedder.identity, self._embedder.dim)
            aliases, relations, taught = self._relearn(items)
            try:
                self._store.insert(
                    items,
                    texts,
                    np.vstack(parts),
                    event=HistoryEvent.IMPORT,
                    aliases=aliases,
                    relations=relations,
                    taught=taught,
                )
            except StoreError:
                self._raise_taken(fresh)
                raise
        return len(items)

    def _relearn(
        self, items: Sequence[MemoryItem]
    ) -> tuple[
        dict[str, builtins.list[AliasRow]], dict[str, builtins.list[RelationClaim]], dict[str, builtins.list[str]]
    ]:
        """Each user's entity-table rows and graph relations for imported memories, and the aliases each memory
        taught, read from them in the order they were written, as their writes read them (an export holds
        memories, not the tables derived from them).
        """
        ordered = sorted(items, key=lambda it: (it.created_at, it.id))
        tables: dict[str, builtins.list[AliasRow]] = {}
        aliases: dict[str, builtins.list[AliasRow]] = {}
        taught: dict[str, builtins.list[str]] = {}
        resolvers: dict[str, EntityResolver] = {}
        for user_id in dict.fromkeys(it.user_id for it in ordered):
            stored = tables[user_id] = self._store.entity_aliases(user_id)
            before = set(stored)
            resolver = resolvers[user_id] = EntityResolver.from_rows(before)
            taught.update(
                resolver.held(self._enricher.learn([it for it in ordered if it.user_id == user_id], resolver))
            )
            aliases[user_id] = resolver.changes(before)
        messages = [it for it in ordered if it.kind is MemoryKind.MESSAGE]
        relations = relations_by_user(messages, aliases, self._store, tables)
        typed = [it for it in ordered if it.kind is not MemoryKind.MESSAGE]
        for user_id, claims in relations_from_claims(typed, resolvers).items():
            relations.setdefault(user_id, []).extend(claims)
        # in the order their memories were written, so that a typed memory joins the edge its turn opened before a
        # later turn closed it, as it did when both were written
        rank = {it.id: i for i, it in enumerate(ordered)}
        for claims in relations.values():
            claims.sort(key=lambda claim: rank.get(claim.source_id, -1))
        return aliases, relations, taught

    @staticmethod
    def _retarget(item: MemoryItem, user_id: str) -> None:
        """Move an imported memory into ``user_id``, recomputing its idempotency key there.

        A message's key depends on details the file does not hold (whether its timestamp was given, its occurrence
        in its ``add`` call): the form that reproduces the file's key under the file's user is kept.
        """
        old_user = item.user_id
        if old_user == user_id:
            return
        item.user_id = user_id
        if item.kind is not MemoryKind.MESSAGE:
            item.content_hash = typed_hash(user_id, item.agent_id, item.kind, item.text)
            return
        scope = (item.agent_id, item.session_id, item.text)
        forms: builtins.list[tuple[datetime | None, int]] = [(None, 0), *((item.timestamp, n) for n in range(256))]
        kept = next((f for f in forms if message_hash(old_user, *scope, *f) == item.content_hash), forms[1])
        item.content_hash = message_hash(user_id, *scope, *kept)

    def _new_only(self, lines: Sequence[ImportLine]) -> builtins.list[ImportLine]:
        by_user: dict[str, builtins.list[ImportLine]] = {}
        for line in lines:
            by_user.setdefault(line.item.user_id, []).append(line)
        fresh: builtins.list[ImportLine] = []
        for user_id, group in by_user.items():
            have = self._store.get_many(user_id, [line.item.id for line in group])
            fresh.extend(line for line in group if line.item.id not in have)
        return sorted(fresh, key=lambda line: line.lineno)

    def _raise_taken(self, lines: Sequence[ImportLine]) -> None:
        """After a failed import write: an error naming the first line whose id another user's memory holds."""
        wanted = {line.item.id: line for line in lines}
        for stored in self._store.iter_items(None):
            line = wanted.get(stored.id)
            if line is not None and stored.user_id != line.item.user_id:
                raise ImportFormatError(
                    f"line {line.lineno}: id {stored.id[:80]!r} belongs to another user's memory; nothing was imported"
                )

    # -- maintenance -------------------------------------------------------------------------------
    def stats(self, *, user_id: str | None = None, tenant: str | None = None) -> Stats:
        """Counts and size of the store (or of one user's memories; a tenant other than the default needs one)."""
        self._write_access()  # the searches' counts first, so that what this reads or writes includes them
        user_id = optional_id(user_id, max_chars=self.limits.id_chars, what="user_id")
        if user_id is not None:
            user_id = scope_key(check_tenant(tenant), user_id)
        elif tenant is not None and check_tenant(tenant) != DEFAULT_TENANT:
            raise ValidationError("stats within a tenant need a user_id (without one they cover the whole store)")
        ident = self._store.embedder_identity()
        return Stats(
            memories=self._store.count(user_id),
            users=self._store.user_count() if user_id is None else int(self._store.count(user_id) > 0),
            by_kind=self._store.count_by_kind(user_id),
            embedder=ident[0] if ident else None,
            dim=ident[1] if ident else None,
            path=self._store.location,
            size_bytes=self._store.size_bytes(),
        )

    def users(self, *, tenant: str | None = None, limit: int = 100, offset: int = 0) -> builtins.list[UserSummary]:
        """The users of a tenant (in order of first arrival) with how many memories each holds; what the inspector's
        user list shows. A backend that cannot list its users returns none.
        """
        tenant = check_tenant(tenant)
        limit, offset = self._page(limit, offset)
        if not isinstance(self._store, StoreTransfer):
            return []
        keys = [k for k in self._store.user_ids() if in_tenant(k, tenant)][offset : offset + limit]
        return [UserSummary(user_id=split_key(k)[1], memories=self._store.count(k)) for k in keys]

    def reindex(self, *, batch_size: int = 256, on_progress: Callable[[int], None] | None = None) -> int:
        """Re-embed every memory with the configured embedder and record it as the store's model.

        New vectors are written beside the live ones, which searches keep using; the switch to the new vectors
        and model happens in the same transaction as the last batch. A reindex that is interrupted leaves the
        old, consistent state, and run again with the same embedder it resumes where it stopped. Returns how
        many memories this call embedded.
        """
        self._write_access()  # the searches' counts first, so that what this reads or writes includes them
        batch_size = check_int(batch_size, what="batch_size", low=1, high=self.limits.batch)
        on_progress = check_callback(on_progress, what="on_progress")
        identity, dim = self._embedder.identity, self._embedder.dim
        self._store.reindex_begin(identity, dim)
        n, after = 0, None
        while True:
            batch = self._store.reindex_pending(after, batch_size)
            if not batch:
                if self._store.reindex_stage({}, identity, dim, final=True):
                    return n
                after = None  # memories written meanwhile by another process: embed them too
                continue
            vectors = self._embedder.embed([index_text(item) for item in batch])
            after = batch[-1].id
            last = len(batch) < batch_size
            staged = {item.id: vec for item, vec in zip(batch, vectors, strict=True)}
            switched = self._store.reindex_stage(staged, identity, dim, final=last)
            n += len(batch)
            if on_progress is not None:
                on_progress(len(batch))
            if switched:
                return n
            if last:
                after = None


def _open(target: object) -> Store:
    """The store at ``target``; a bad path is a ``ValidationError``, one that cannot be opened a ``StoreError``."""
    location = check_path(target, what="path")
    try:
        return open_store(location)
    except OSError as exc:
        raise StoreError(f"cannot open the store {str(location)[:200]!r}: {exc.strerror or exc}") from exc
