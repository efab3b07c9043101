"""The write path: validate, screen, enrich, embed and store messages and observations, then extract typed
memories from them here or hand the extraction job off.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from memlane.config import Config
from memlane.ids import new_id
from memlane.lifecycle.distill import EXTRACT_JOB, Distiller
from memlane.models import AddResult, Job, JobState, MemoryItem, MemoryKind, utcnow
from memlane.observe import Observation, check_observations, prepare
from memlane.records.inputs import MessagesInput
from memlane.records.keys import message_hash, normalise_text
from memlane.scope import unscope
from memlane.security.validation import check_bool, check_messages, check_metadata, check_time, optional_id
from memlane.services.core import Core
from memlane.services.indexing import Indexer
from memlane.services.jobs import Jobs
from memlane.services.scope import Scope
from memlane.store.base import EntityIndex, JobQueue, RecordReader
from memlane.store.outcome import JobFencedError, JobOutcome
from memlane.telemetry import timed

ObservationsInput = Observation | Mapping[str, Any] | Sequence[Observation | Mapping[str, Any]]


class WriteStore(RecordReader, EntityIndex, JobQueue, Protocol):
    """What the write path reads of a store beside indexing: stored hashes, the entity table, its job's fate."""


class Writes:
    """``add`` and ``observe``: all or none, idempotent by content hash."""

    def __init__(self, core: Core, store: WriteStore, indexer: Indexer, distiller: Distiller, jobs: Jobs) -> None:
        self.core = core
        self.store = store
        self.indexer = indexer
        self.distiller = distiller
        self.jobs = jobs

    @property
    def config(self) -> Config:
        return self.core.config

    @timed("add")  # telemetry
    def add(
        self,
        scope: Scope,
        messages: MessagesInput,
        *,
        session_id: str | None,
        agent_id: str | None,
        timestamp: datetime | str | None,
        metadata: Mapping[str, Any] | None,
        infer: bool | None,
        async_mode: bool,
    ) -> AddResult:
        """Store each message losslessly, then extract typed memories (see ``Memory.add``). A message already stored
        (same scope, normalised text, given timestamp and occurrence in the call) is not stored again: it is
        returned as stored and listed in ``duplicates``.
        """
        limits = self.core.limits
        user_id = scope.key
        session_id = optional_id(session_id, max_chars=limits.id_chars, what="session_id")
        agent_id = optional_id(agent_id, max_chars=limits.id_chars, what="agent_id")
        base_meta = check_metadata(metadata, "metadata", limits)
        default_ts = check_time(timestamp, what="timestamp", limits=limits) if timestamp is not None else None
        infer = self.config.infer if infer is None else check_bool(infer, what="infer")
        check_bool(async_mode, what="async_mode")
        msgs = check_messages(messages, limits)
        now = utcnow()
        items: list[MemoryItem] = []
        seen: dict[tuple[str, datetime | None], int] = {}
        for i, msg in enumerate(msgs):
            text = msg.content
            meta = check_metadata({**base_meta, **msg.metadata}, f"message {i} metadata", limits)
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
        stored = self.store.find_hashes(user_id, [it.content_hash for it in items])
        fresh = [it for it in items if it.content_hash not in stored]
        result = AddResult(
            items=[stored.get(it.content_hash, it) for it in items],
            duplicates=[stored[it.content_hash].id for it in items if it.content_hash in stored],
        )
        if not fresh:
            return unscope(result)
        self.indexer.screen(user_id, fresh)
        if not infer:
            self.indexer.insert(fresh)
            if self.config.capacity is not None:
                with self.core.consolidating(user_id):
                    self.distiller.enforce_capacity(user_id)
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
            if self.jobs.publisher is not None:
                job = self.jobs.publisher.hold(job)
            self.indexer.insert(fresh, jobs=[job])
            result.job_id = job.id
            result.queue, result.queue_notice = self.jobs.hand_off(job)
            return unscope(result)
        self._extract_now(job, fresh, result)
        return unscope(result)

    def _extract_now(self, job: Job, fresh: Sequence[MemoryItem], result: AddResult) -> None:
        """Store the messages with their extraction job already claimed by this process, then run it here.

        The job is written in the same transaction as the messages, so a crash before it is done leaves it for
        the next process that opens the store (once this one's lease lapses).
        """
        leases = self.core.leases
        running = job.model_copy(update={"state": JobState.RUNNING, "attempts": 1})
        self.indexer.insert(fresh, jobs=[running], claim=leases.claim())
        leases.hold(job.id)
        owner = leases.owner
        try:
            with self.core.consolidating(job.user_id):
                outcome = self.distiller.run(job.user_id, [it.id for it in fresh], job=running, owner=owner)
            result.memories, result.job_id = outcome.memories, outcome.failed_job
        except JobFencedError:  # deleted meanwhile: nothing was written; if it still exists it runs again
            self.store.release_job(job.id, owner)
            result.job_id = job.id
            self.jobs.worker.notify()
        except Exception as exc:
            try:
                error = f"{type(exc).__name__}: {exc}"
                self.store.finish_job(JobOutcome(job.id, JobState.FAILED, error, owner=owner))
            except JobFencedError:
                pass
            raise
        finally:
            leases.drop(job.id)

    def observe(
        self, scope: Scope, observations: ObservationsInput, *, session_id: str | None, agent_id: str | None
    ) -> AddResult:
        """Store grounded observations, their tags as typed entities; all or none (see ``Memory.observe``)."""
        limits = self.core.limits
        user_id = scope.key
        session_id = optional_id(session_id, max_chars=limits.id_chars, what="session_id")
        agent_id = optional_id(agent_id, max_chars=limits.id_chars, what="agent_id")
        batch = check_observations(observations, limits)
        known = {r.alias: r.target for r in self.store.entity_aliases(user_id)}
        prepared = prepare(batch, user_id=user_id, session_id=session_id, agent_id=agent_id, known=known)
        stored = self.store.find_hashes(user_id, [it.content_hash for it in prepared.items])
        fresh = [it for it in prepared.items if it.content_hash not in stored]
        self.indexer.insert(fresh, annotate=prepared.annotate)
        return unscope(
            AddResult(
                items=[stored.get(it.content_hash, it) for it in prepared.items],
                duplicates=[stored[it.content_hash].id for it in prepared.items if it.content_hash in stored],
            )
        )
