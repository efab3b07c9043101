"""The ``Memory`` facade: validates, orchestrates the write and read paths, and owns nothing else."""

from __future__ import annotations

import builtins
import hashlib
import json
import logging
import threading
import time
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Self

import numpy as np
from pydantic import ValidationError as PydanticValidationError

from memlane.config import Config, save_preset
from memlane.embedding import Embedder, make_embedder
from memlane.embedding.base import Vectors
from memlane.enrich.entities import AliasRow, EntityResolver
from memlane.enrich.pipeline import Enricher
from memlane.errors import (
    EmbedderMismatchError,
    ImportFormatError,
    JobTimeoutError,
    UnknownFilterError,
    ValidationError,
)
from memlane.extraction.factory import make_extraction
from memlane.lifecycle.distill import EXTRACT_JOB, Distiller, typed_hash
from memlane.llm.usage import UsageCounter
from memlane.models import (
    AddResult,
    ArchivedMemory,
    Filters,
    HistoryEntry,
    HistoryEvent,
    Hit,
    Job,
    JobState,
    MemoryItem,
    MemoryKind,
    Message,
    Stats,
    parse_time,
    utcnow,
)
from memlane.retrieval.search import Retriever
from memlane.retrieval.tuning import FitResult, LabelledQuery, QueryMatrix, fit, split_groups
from memlane.security.validation import check_metadata, check_text, optional_id, require_scope
from memlane.store import Store, open_store
from memlane.store.outcome import JobOutcome
from memlane.store.records import embed_hash
from memlane.worker import JobWorker

log = logging.getLogger(__name__)

MessagesInput = str | Message | Mapping[str, Any] | Sequence[str | Message | Mapping[str, Any]]
FiltersInput = Filters | Mapping[str, Any] | None
EXPORT_FORMAT = 1


def normalise_text(text: str) -> str:
    """The form hashed for idempotency: NFC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


def content_hash(user_id: str, agent_id: str | None, session_id: str | None, kind: str, text: str) -> str:
    """SHA-256 of the normalised text within its scope."""
    payload = json.dumps([user_id, agent_id, session_id, kind, normalise_text(text)], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def message_hash(
    user_id: str,
    agent_id: str | None,
    session_id: str | None,
    text: str,
    timestamp: datetime | None = None,
    occurrence: int = 0,
) -> str:
    """The idempotency key of a message: its scope and normalised text, the timestamp the caller gave (if any),
    and its occurrence number among identical messages of the same ``add`` call.

    So re-adding a conversation is a no-op, while the same words said twice in one batch stay two turns.
    Without a timestamp and at occurrence 0 it equals ``content_hash`` (the key of stores written before).
    """
    if timestamp is None and occurrence == 0:
        return content_hash(user_id, agent_id, session_id, MemoryKind.MESSAGE.value, text)
    stamp = None if timestamp is None else timestamp.isoformat()
    payload = [user_id, agent_id, session_id, MemoryKind.MESSAGE.value, normalise_text(text), stamp, occurrence]
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode("utf-8")).hexdigest()


def index_text(item: MemoryItem) -> str:
    """What gets embedded and full-text indexed: a message's text prefixed by its speaker when known."""
    if item.kind is MemoryKind.MESSAGE and item.speaker:
        return f"{item.speaker}: {item.text}"
    return item.text


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
        target = path if path is not None else self.config.default_store
        self._embedder = (
            embedder
            if isinstance(embedder, Embedder)
            else make_embedder(embedder or self.config.embedder, cache_dir=self.config.model_cache)
        )
        self._extraction = make_extraction(self.config)  # before the store: it may fail on a missing extra
        self._store: Store = open_store(target)
        self._enricher = Enricher(self._embedder)
        self._retriever = Retriever(
            self._store, self._embedder, self._enricher, half_life_days=self.config.recency_half_life_days
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
        # One writer of typed memories at a time: consolidation reads, decides, then writes.
        self._lifecycle = threading.RLock()
        self._worker = JobWorker(self._store, self._handle_job, background=self.config.background_worker)
        self._worker.recover()

    # -- lifecycle ---------------------------------------------------------------------------------
    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the job worker (after the job in hand; queued jobs wait for the next open) and close the store."""
        self._worker.stop()
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

    def _check_embedder(self) -> None:
        held = self._store.embedder_identity()
        if held is not None and held[0] != self._embedder.identity:
            raise EmbedderMismatchError(
                f"{self._store.location} was indexed with embedder {held[0]!r} but {self._embedder.identity!r} "
                "is configured; run `memlane reindex` to re-embed every memory with the configured model, "
                "or open it with the embedder it was built with"
            )

    # -- write path --------------------------------------------------------------------------------
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
    ) -> AddResult:
        """Store each message losslessly as a ``kind=message`` memory (all or none), then extract typed memories.

        A message already stored (same scope, normalised text, given timestamp and occurrence in the call) is
        not stored again: it is returned as stored and listed in ``duplicates``. With ``infer`` (default
        ``config.infer``) typed memories are extracted from the new messages, deduplicated and consolidated;
        with ``async_mode`` that happens on the background worker and ``job_id`` names the job, which was
        queued in the same transaction as the messages.
        """
        limit = self.config.max_id_chars
        user_id = require_scope(user_id, max_chars=limit)
        session_id = optional_id(session_id, max_chars=limit, what="session_id")
        agent_id = optional_id(agent_id, max_chars=limit, what="agent_id")
        base_meta = check_metadata(metadata)
        default_ts = self._parse_ts(timestamp) if timestamp is not None else None
        infer = self.config.infer if infer is None else infer
        if not isinstance(infer, bool) or not isinstance(async_mode, bool):
            raise ValidationError("infer and async_mode must be True or False")
        msgs = self._coerce_messages(messages)
        now = utcnow()
        items: list[MemoryItem] = []
        seen: dict[tuple[str, datetime | None], int] = {}
        for i, msg in enumerate(msgs):
            text = check_text(msg.content, max_chars=self.config.max_text_chars, what=f"message {i} content")
            meta = {**base_meta, **check_metadata(msg.metadata, what=f"message {i} metadata")}
            given_ts = msg.timestamp or default_ts
            key = (normalise_text(text), given_ts)
            occurrence = seen.get(key, 0)
            seen[key] = occurrence + 1
            items.append(
                MemoryItem(
                    id=uuid.uuid4().hex,
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
                    content_hash=message_hash(user_id, agent_id, session_id, text, given_ts, occurrence),
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
            return result
        if infer and async_mode:
            job = Job(
                id=uuid.uuid4().hex,
                user_id=user_id,
                kind=EXTRACT_JOB,
                payload={"message_ids": [it.id for it in fresh]},
                created_at=now,
                updated_at=now,
            )
            self._insert(fresh, jobs=[job])
            result.job_id = job.id
            self._worker.notify()
            return result
        self._insert(fresh)
        with self._lifecycle:
            if infer:
                outcome = self._distiller.run(user_id, [it.id for it in fresh])
                result.memories, result.job_id = outcome.memories, outcome.failed_job
            else:
                self._distiller.enforce_capacity(user_id)
        return result

    def _insert(
        self,
        items: Sequence[MemoryItem],
        event: HistoryEvent = HistoryEvent.ADD,
        *,
        enrich: bool = True,
        jobs: Sequence[Job] = (),
    ) -> None:
        if not items:
            return
        self._check_embedder()
        texts = [index_text(it) for it in items]
        vectors = self._embed(texts)
        aliases = self._enrich(items, vectors) if enrich else None
        if self._store.embedder_identity() is None:
            self._store.set_embedder_identity(self._embedder.identity, self._embedder.dim)
        self._store.insert(items, texts, vectors, event=event, aliases=aliases, jobs=jobs)

    # -- background jobs ---------------------------------------------------------------------------
    def _handle_job(self, job: Job) -> None:
        if job.kind != EXTRACT_JOB:
            self._store.finish_job(JobOutcome(job.id, JobState.FAILED, f"unknown job kind {job.kind!r}"))
            return
        ids = [str(i) for i in job.payload.get("message_ids", [])]
        self._check_embedder()
        with self._lifecycle:
            self._distiller.run(job.user_id, ids, job=job)

    def job(self, job_id: str, *, user_id: str) -> Job:
        """A background job of this user: its state, attempts and last error."""
        user_id = require_scope(user_id, max_chars=self.config.max_id_chars)
        return self._store.job(user_id, job_id)

    def jobs(self, *, user_id: str, state: JobState | str | None = None, limit: int = 100) -> builtins.list[Job]:
        """The background jobs of this user, oldest first, optionally in one state."""
        user_id = require_scope(user_id, max_chars=self.config.max_id_chars)
        try:
            wanted = None if state is None else JobState(state)
        except ValueError:
            raise ValidationError(f"unknown job state {state!r}; one of {[s.value for s in JobState]}") from None
        return self._store.jobs(user_id, wanted, limit)

    def wait(self, job_id: str, *, user_id: str, timeout: float | None = None) -> Job:
        """Block until a job is done or failed and return it; ``JobTimeoutError`` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if not self._worker.background:
                self._worker.run_pending()
            found = self.job(job_id, user_id=user_id)
            if found.state in (JobState.DONE, JobState.FAILED):
                return found
            if deadline is not None and time.monotonic() >= deadline:
                raise JobTimeoutError(f"job {job_id} is still {found.state.value} after {timeout} s")
            self._worker.notify()
            time.sleep(0.02)

    def flush(self, *, timeout: float | None = None) -> None:
        """Block until no background job is queued or running; ``JobTimeoutError`` after ``timeout`` seconds."""
        if not self._worker.wait_idle(timeout):
            raise JobTimeoutError(f"background jobs still pending after {timeout} s")

    def retry_jobs(self, *, user_id: str | None = None) -> int:
        """Queue failed jobs (of one user, or all) again; returns how many."""
        if user_id is not None:
            user_id = require_scope(user_id, max_chars=self.config.max_id_chars)
        n = self._store.requeue_jobs((JobState.FAILED,), user_id)
        if n:
            self._worker.notify()
        return n

    # -- forgetting --------------------------------------------------------------------------------
    def archive(self, *, user_id: str, limit: int = 100, offset: int = 0) -> builtins.list[ArchivedMemory]:
        """Memories of this user evicted beyond capacity, most recently archived first."""
        user_id = require_scope(user_id, max_chars=self.config.max_id_chars)
        if limit < 0 or offset < 0:
            raise ValidationError("limit and offset must not be negative")
        return self._store.archived(user_id, limit, offset)

    def restore(self, memory_id: str, *, user_id: str) -> MemoryItem:
        """Bring an archived memory back into every index (capacity is enforced again at the next add)."""
        user_id = require_scope(user_id, max_chars=self.config.max_id_chars)
        return self._store.restore(user_id, memory_id, utcnow())

    def forget(self, *, user_id: str, hard: bool = False) -> builtins.list[str]:
        """Enforce ``config.capacity`` now: evict the lowest survival scores to the archive (destroy if ``hard``)."""
        user_id = require_scope(user_id, max_chars=self.config.max_id_chars)
        with self._lifecycle:
            return self._distiller.enforce_capacity(user_id, hard=hard)

    def _enrich(self, items: Sequence[MemoryItem], vectors: Vectors) -> dict[str, builtins.list[AliasRow]]:
        """Fill the write-time dimensions of new items; returns each user's changed entity-table rows."""
        by_user: dict[str, builtins.list[int]] = {}
        for i, item in enumerate(items):
            by_user.setdefault(item.user_id, []).append(i)
        changed: dict[str, builtins.list[AliasRow]] = {}
        for user_id, idx in by_user.items():
            before = set(self._store.entity_aliases(user_id))
            resolver = EntityResolver.from_rows(before)
            self._enricher.enrich([items[i] for i in idx], vectors[idx], resolver)
            changed[user_id] = [row for row in resolver.to_rows() if row not in before]
        return changed

    def _embed(self, texts: Sequence[str]) -> Vectors:
        """Embed with the store's vectors as a cache keyed by the SHA-256 of the exact text."""
        hashes = [embed_hash(t) for t in texts]
        known = self._store.cached_vectors(hashes)
        todo = list(dict.fromkeys(t for t, h in zip(texts, hashes, strict=True) if h not in known))
        fresh: dict[str, Vectors] = {}
        batch = self.config.embed_batch
        for start in range(0, len(todo), batch):
            chunk = todo[start : start + batch]
            for text, vec in zip(chunk, self._embedder.embed(chunk), strict=True):
                fresh[embed_hash(text)] = vec
        known.update(fresh)
        return np.vstack([known[h] for h in hashes]).astype(np.float32, copy=False)

    def _coerce_messages(self, messages: MessagesInput) -> list[Message]:
        if isinstance(messages, str | Message | Mapping):
            seq: Sequence[Any] = [messages]
        elif isinstance(messages, Sequence):
            seq = messages
        else:
            raise ValidationError(
                f"messages must be a string, a message or a list of them, not {type(messages).__name__}"
            )
        if not seq:
            raise ValidationError("no messages to add")
        out: list[Message] = []
        for i, raw in enumerate(seq):
            if isinstance(raw, Message):
                out.append(raw)
            elif isinstance(raw, str):
                out.append(Message(role="user", content=raw))
            elif isinstance(raw, Mapping):
                try:
                    out.append(Message.model_validate(dict(raw)))
                except PydanticValidationError as exc:
                    raise ValidationError(f"message {i} is invalid: {_first_error(exc)}") from None
            else:
                raise ValidationError(f"message {i} must be a string, a dict or a Message, not {type(raw).__name__}")
        return out

    @staticmethod
    def _parse_ts(value: datetime | str) -> datetime:
        try:
            return parse_time(value)
        except ValueError as exc:
            raise ValidationError(f"timestamp: {exc}") from None

    # -- read path ---------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        user_id: str,
        top_k: int = 10,
        filters: FiltersInput = None,
        preset_name: str | None = None,
    ) -> list[Hit]:
        """The ``top_k`` memories of this user that best answer ``query``, each with its score breakdown."""
        user_id = require_scope(user_id, max_chars=self.config.max_id_chars)
        query = check_text(query, max_chars=self.config.max_text_chars, what="query")
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= 1000:
            raise ValidationError(f"top_k must be an integer from 1 to 1000, got {top_k!r}")
        flt = self._filters(filters)
        chosen = self.config.preset_for(preset_name)
        self._check_embedder()
        now = utcnow()
        hits = self._retriever.search(query, user_id, top_k=top_k, filters=flt, preset=chosen, now=now)
        if hits:
            self._store.record_access(user_id, [h.memory.id for h in hits], now)
            for h in hits:
                h.memory.access_count += 1
                h.memory.last_accessed = now
        return hits

    def feedback(self, hit: Hit | str, *, useful: bool, query: str | None = None, user_id: str | None = None) -> None:
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
        user_id = require_scope(user_id, max_chars=self.config.max_id_chars)
        if not query:
            raise ValidationError("feedback needs the query the memory was returned for")
        query = check_text(query, max_chars=self.config.max_text_chars, what="query")
        if not isinstance(useful, bool):
            raise ValidationError(f"useful must be True or False, got {useful!r}")
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
        start = self.config.preset_for(base)
        labelled = list(queries) if queries is not None else self._feedback_queries()
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

    def _feedback_queries(self) -> builtins.list[LabelledQuery]:
        grouped: dict[tuple[str, str], set[str]] = {}
        for judged in self._store.feedback():
            relevant = grouped.setdefault((judged.user_id, judged.query), set())
            if judged.useful:
                relevant.add(judged.memory_id)
        return [LabelledQuery(q, u, frozenset(r)) for (u, q), r in grouped.items() if r]

    @staticmethod
    def _filters(filters: FiltersInput) -> Filters:
        if filters is None:
            return Filters()
        if isinstance(filters, Filters):
            return filters
        if not isinstance(filters, Mapping):
            raise ValidationError(f"filters must be a mapping, not {type(filters).__name__}")
        unknown = sorted(set(filters) - set(Filters.model_fields))
        if unknown:
            raise UnknownFilterError(f"unknown filter(s) {unknown}; known: {sorted(Filters.model_fields)}")
        try:
            return Filters.model_validate(dict(filters))
        except PydanticValidationError as exc:
            raise ValidationError(f"invalid filters: {_first_error(exc)}") from None

    def get(self, memory_id: str, *, user_id: str) -> MemoryItem:
        """One memory; ``NotFoundError`` if this user has none with that id."""
        user_id = require_scope(user_id, max_chars=self.config.max_id_chars)
        return self._store.get(user_id, memory_id)

    def list(
        self, *, user_id: str, filters: FiltersInput = None, limit: int = 100, offset: int = 0
    ) -> builtins.list[MemoryItem]:
        """The memories of one user that match ``filters``, oldest first."""
        user_id = require_scope(user_id, max_chars=self.config.max_id_chars)
        if limit < 0 or offset < 0:
            raise ValidationError("limit and offset must not be negative")
        return self._store.list(user_id, self._filters(filters), limit, offset)

    def history(self, memory_id: str, *, user_id: str) -> builtins.list[HistoryEntry]:
        """Every recorded change of a memory, oldest first (text is erased once it is deleted)."""
        user_id = require_scope(user_id, max_chars=self.config.max_id_chars)
        return self._store.history(user_id, memory_id)

    # -- changes -----------------------------------------------------------------------------------
    def update(
        self,
        memory_id: str,
        *,
        user_id: str,
        text: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        importance: float | None = None,
    ) -> MemoryItem:
        """Change a memory's text (re-indexed), metadata (replaced) or importance; recorded in history."""
        user_id = require_scope(user_id, max_chars=self.config.max_id_chars)
        old = self._store.get(user_id, memory_id)
        changes: dict[str, Any] = {}
        new = old.model_copy(deep=True)
        if text is not None:
            new.text = check_text(text, max_chars=self.config.max_text_chars)
            new.content_hash = (
                content_hash(user_id, old.agent_id, old.session_id, old.kind.value, new.text)
                if old.kind is MemoryKind.MESSAGE
                else typed_hash(user_id, old.agent_id, old.kind, new.text)
            )
            changes["text"] = True
        if metadata is not None:
            new.metadata = check_metadata(metadata)
            changes["metadata"] = {"old": old.metadata, "new": new.metadata}
        if importance is not None:
            if not 0.0 <= importance <= 1.0:
                raise ValidationError(f"importance must be within [0, 1], got {importance}")
            new.importance = float(importance)
            changes["importance"] = {"old": old.importance, "new": new.importance}
        if not changes:
            raise ValidationError("update needs at least one of text, metadata or importance")
        now = utcnow()
        new.updated_at = now
        body = vector = None
        aliases: builtins.list[AliasRow] = []
        if text is not None:
            self._check_embedder()
            body = index_text(new)
            vectors = self._embed([body])
            vector = vectors[0]
            kept_importance = new.importance
            new.event_time = new.event_end = None
            aliases = self._enrich([new], vectors).get(user_id, [])
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
        self._store.replace(new, body, vector, entry, aliases)
        return new

    def delete(self, memory_id: str, *, user_id: str) -> builtins.list[str]:
        """Remove a memory from every index; its history keeps the events but not the text.

        Typed memories extracted from it alone are removed too; those with other sources just lose this one.
        Returns the ids removed, ``memory_id`` first.
        """
        user_id = require_scope(user_id, max_chars=self.config.max_id_chars)
        with self._lifecycle:
            return self._store.delete(user_id, memory_id, utcnow())

    def delete_all(self, *, user_id: str) -> int:
        """Remove every memory and all history of one user; returns how many memories went."""
        user_id = require_scope(user_id, max_chars=self.config.max_id_chars)
        return self._store.delete_user(user_id)

    # -- export / import ---------------------------------------------------------------------------
    def export(self, dest: str | Path | IO[str], *, user_id: str | None = None) -> int:
        """Write memories (one user's, or all) as JSONL: a header line, then one memory per line."""
        if user_id is not None:
            user_id = require_scope(user_id, max_chars=self.config.max_id_chars)
        if isinstance(dest, str | Path):
            with open(dest, "w", encoding="utf-8") as fh:
                return self._export_to(fh, user_id)
        return self._export_to(dest, user_id)

    def _export_to(self, fh: IO[str], user_id: str | None) -> int:
        ident = self._store.embedder_identity()
        header = {"memlane_export": EXPORT_FORMAT, "embedder": ident[0] if ident else None}
        fh.write(json.dumps(header) + "\n")
        n = 0
        for item in self._store.iter_items(user_id):
            fh.write(item.model_dump_json() + "\n")
            n += 1
        return n

    def import_(self, source: str | Path | IO[str], *, on_progress: Callable[[int], None] | None = None) -> int:
        """Load a JSONL export, all or nothing; memories whose id already exists are skipped.

        Returns the number of memories imported. Named with a trailing underscore as ``import`` is a keyword.
        """
        if isinstance(source, str | Path):
            with open(source, encoding="utf-8") as fh:
                items = list(_read_export(fh))
        else:
            items = list(_read_export(source))
        added = 0
        for start in range(0, len(items), 1000):
            chunk = items[start : start + 1000]
            fresh = self._new_only(chunk)
            self._insert(fresh, event=HistoryEvent.IMPORT, enrich=False)
            added += len(fresh)
            if on_progress is not None:
                on_progress(len(chunk))
        return added

    def _new_only(self, items: Sequence[MemoryItem]) -> builtins.list[MemoryItem]:
        by_user: dict[str, list[MemoryItem]] = {}
        for it in items:
            by_user.setdefault(it.user_id, []).append(it)
        fresh: builtins.list[MemoryItem] = []
        for user_id, group in by_user.items():
            have = self._store.get_many(user_id, [it.id for it in group])
            fresh.extend(it for it in group if it.id not in have)
        return fresh

    # -- maintenance -------------------------------------------------------------------------------
    def stats(self, *, user_id: str | None = None) -> Stats:
        """Counts and size of the store (or of one user's memories)."""
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

    def reindex(self, *, batch_size: int = 256, on_progress: Callable[[int], None] | None = None) -> int:
        """Re-embed every memory with the configured embedder and record it as the store's model."""
        n = 0
        for batch in self._store.reindex_batches(batch_size):
            vectors = self._embedder.embed([index_text(item) for item in batch])
            self._store.write_vectors({item.id: vec for item, vec in zip(batch, vectors, strict=True)})
            n += len(batch)
            if on_progress is not None:
                on_progress(len(batch))
        self._store.set_embedder_identity(self._embedder.identity, self._embedder.dim)
        return n


def _first_error(exc: PydanticValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "value"
    return f"{where}: {err.get('msg', 'invalid')}"


def _read_export(lines: Iterable[str]) -> Iterator[MemoryItem]:
    it = iter(lines)
    try:
        header = json.loads(next(it))
    except StopIteration:
        raise ImportFormatError("import file is empty") from None
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"line 1 is not JSON: {exc.msg}") from None
    if not isinstance(header, dict) or header.get("memlane_export") != EXPORT_FORMAT:
        raise ImportFormatError(f"line 1 is not a memlane export header (format {EXPORT_FORMAT})")
    for lineno, line in enumerate(it, start=2):
        if not line.strip():
            continue
        try:
            yield MemoryItem.model_validate_json(line)
        except PydanticValidationError as exc:
            raise ImportFormatError(f"line {lineno}: {_first_error(exc)}") from None
