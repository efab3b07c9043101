"""The write path after the messages are stored: extract, deduplicate, consolidate, store, and keep within capacity."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from memlane.embedding.base import Vectors
from memlane.enrich.aliases import EntityResolver
from memlane.enrich.entities import AliasRow
from memlane.extraction.base import Candidate, ExtractionFailure, Extractor
from memlane.extraction.offline import RuleExtractor
from memlane.graph.relations import relations_from_claims
from memlane.ids import new_id
from memlane.lifecycle.consolidate import ATTRIBUTE, SUBJECT, VALUE, Action, Consolidator, Related, supersede
from memlane.lifecycle.dedup import cosine, merge_into, merge_sources, normalised_hash
from memlane.lifecycle.survival import SurvivalWeights, choose_evictions
from memlane.llm.base import Usage
from memlane.models import (
    RECORD_KINDS,
    TYPED_KINDS,
    Filters,
    HistoryEntry,
    HistoryEvent,
    Job,
    JobState,
    MemoryItem,
    MemoryKind,
    SourceRef,
    as_utc,
    utcnow,
)
from memlane.store.base import Archive, EntityIndex, JobQueue, RecordReader, RecordWriter, VectorIndex
from memlane.store.outcome import JobOutcome

log = logging.getLogger(__name__)

EXTRACT_JOB = "extract"
RELATED_LIMIT = 10

Embed = Callable[[Sequence[str]], Vectors]


class DistillStore(RecordReader, RecordWriter, VectorIndex, Archive, JobQueue, EntityIndex, Protocol):
    """What distillation uses of a store: rows, similar typed memories, eviction, and finishing its job."""


Enrich = Callable[[Sequence[MemoryItem], Vectors], dict[str, list[AliasRow]]]


def typed_hash(user_id: str, agent_id: str | None, kind: MemoryKind, text: str) -> str:
    """The idempotency key of a typed memory: its normalised text in (user, agent, kind), across sessions."""
    return normalised_hash(text, (user_id, agent_id, None, kind.value))


@dataclass
class Outcome:
    """What one extraction produced: memories stored or merged into, batches that failed, tokens spent."""

    memories: list[MemoryItem] = field(default_factory=list)
    errors: list[ExtractionFailure] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    failed_job: str | None = None
    failure: str | None = None  # why a retried job's attempt failed (its runner settles the retry)


@dataclass
class _Plan:
    """The writes one window leads to, applied in one transaction."""

    new: list[tuple[MemoryItem, Vectors]] = field(default_factory=list)
    changed: dict[str, tuple[MemoryItem, HistoryEvent, dict[str, Any]]] = field(default_factory=dict)
    notes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def current(self, item: MemoryItem) -> MemoryItem:
        """The latest planned version of a stored memory."""
        held = self.changed.get(item.id)
        return held[0] if held else item

    def change(self, item: MemoryItem, event: HistoryEvent, details: dict[str, Any]) -> None:
        """Plan an update; a memory created in this plan is updated in place instead."""
        for i, (new, vec) in enumerate(self.new):
            if new.id == item.id:
                self.new[i] = (item, vec)
                return
        self.changed[item.id] = (item, event, details)


class Distiller:
    """Turns stored messages into typed memories and keeps each user's typed memories within capacity.

    ``embed`` and ``enrich`` are the engine's (cached embedding; write-time dimensions that return alias rows).
    """

    def __init__(
        self,
        store: DistillStore,
        *,
        embed: Embed,
        enrich: Enrich,
        extractor: Extractor,
        consolidator: Consolidator,
        min_confidence: float,
        capacity: int | None = None,
        weights: SurvivalWeights | None = None,
        evict_messages: bool = False,
    ) -> None:
        self.store = store
        self.embed = embed
        self.enrich = enrich
        self.extractor = extractor
        self.consolidator = consolidator
        self.min_confidence = min_confidence
        self.capacity = capacity
        self.weights = weights or SurvivalWeights()
        self.protect = () if evict_messages else RECORD_KINDS

    # -- extraction --------------------------------------------------------------------------------
    def run(
        self,
        user_id: str,
        message_ids: Sequence[str],
        *,
        job: Job | None = None,
        owner: str | None = None,
        retried: bool = False,
    ) -> Outcome:
        """Extract from the given messages and store the result; the job (if any) is finished in the same write.

        A batch the extractor could not read leaves its messages stored and becomes a failed job (the given job,
        or a new one) whose payload names just those messages, for a retry. With ``owner`` (the job's lease
        holder) the write is fenced: refused as a whole (``JobFencedError``) if the job was cancelled or its
        lease lost, or if a message it read or a memory it changes was deleted meanwhile. Callers hold the
        user's consolidation lock around this call (read, decide, write).

        ``retried``: the job runs under a runner that retries failed attempts (the embedded worker, a broker). A batch
        it could not read then leaves the job running under its lease, with its error and narrowed payload, and
        ``Outcome.failure`` says why: the runner queues it again or dead-letters it in its next write, so no reader
        sees the job failed while a retry is still to come.
        """
        stored = self.store.get_many(user_id, message_ids)
        window = [stored[i] for i in dict.fromkeys(message_ids) if i in stored]
        window = [m for m in window if m.kind is MemoryKind.MESSAGE]
        outcome = Outcome()
        if not window:
            if job is not None:
                self.store.finish_job(JobOutcome(job.id, JobState.DONE, owner=owner))
            return outcome
        related = [] if isinstance(self.extractor, RuleExtractor) else self._context(user_id, window)
        result = self.extractor.extract(window, related)
        outcome.errors, outcome.usage = result.errors, result.usage
        plan, aliases = self._plan(user_id, window, result.accepted(self.min_confidence))
        finish, jobs = self._job_outcome(user_id, job, result.errors, outcome, retried=retried)
        if finish is not None and owner is not None:
            read = (*(m.id for m in window), *plan.changed)
            finish = finish._replace(owner=owner, requires=tuple(dict.fromkeys(read)))
        new = [item for item, _ in plan.new]
        vectors = np.vstack([v for _, v in plan.new]) if plan.new else np.zeros((0, 0), dtype=np.float32)
        updates = [
            (item, HistoryEntry(memory_id=item.id, event=event, at=item.updated_at, changes=details))
            for item, event, details in plan.changed.values()
        ]
        self.store.write(
            new,
            [item.text for item in new],
            vectors,
            event=HistoryEvent.EXTRACT,
            aliases=aliases,
            jobs=jobs,
            changes=plan.notes,
            updates=updates,
            finish=finish,
            relations=relations_from_claims(new, self._resolvers(user_id, aliases)) if new else None,
        )
        merged = (item for item, event, _ in plan.changed.values() if event is HistoryEvent.MERGE)
        outcome.memories = [*new, *merged]
        self.enforce_capacity(user_id)
        return outcome

    def _resolvers(self, user_id: str, aliases: Mapping[str, Sequence[AliasRow]]) -> dict[str, EntityResolver]:
        """The user's alias table as this write leaves it, to resolve the names of extracted claims."""
        return {user_id: EntityResolver.from_rows([*self.store.entity_aliases(user_id), *aliases.get(user_id, ())])}

    def _job_outcome(
        self, user_id: str, job: Job | None, errors: Sequence[ExtractionFailure], outcome: Outcome, *, retried: bool
    ) -> tuple[JobOutcome | None, list[Job]]:
        tokens = {"prompt_tokens": outcome.usage.prompt_tokens, "completion_tokens": outcome.usage.completion_tokens}
        if not errors:
            if job is None:
                return None, []
            done = {**job.payload, **tokens} if outcome.usage.total_tokens else None
            return JobOutcome(job.id, JobState.DONE, None, done), []
        failed = list(dict.fromkeys(i for e in errors for i in e.source_ids))
        reason = "; ".join(dict.fromkeys(e.reason for e in errors))[:2000]
        payload: dict[str, Any] = {"message_ids": failed, **tokens}
        if job is not None:
            outcome.failed_job = job.id
            if retried:
                outcome.failure = reason
                return JobOutcome(job.id, JobState.RUNNING, reason, payload), []
            return JobOutcome(job.id, JobState.FAILED, reason, payload), []
        now = utcnow()
        record = Job(
            id=new_id(),
            user_id=user_id,
            kind=EXTRACT_JOB,
            payload=payload,
            state=JobState.FAILED,
            attempts=1,
            error=reason,
            created_at=now,
            updated_at=now,
        )
        outcome.failed_job = record.id
        return None, [record]

    def _context(self, user_id: str, window: Sequence[MemoryItem]) -> list[MemoryItem]:
        """The existing typed memories most related to a window (for the extractor to see what is known)."""
        vecs = self.embed([f"{m.speaker}: {m.text}" if m.speaker else m.text for m in window])  # as indexed: cached
        centre = vecs.mean(axis=0)
        norm = float(np.linalg.norm(centre))
        if norm == 0.0:
            return []
        found = self.store.vector_search(user_id, centre / norm, 20, Filters(kind=list(TYPED_KINDS)))
        items = self.store.get_many(user_id, [i for i, _ in found])
        return [items[i] for i, _ in found if i in items]

    # -- dedup and consolidation -------------------------------------------------------------------
    def _plan(
        self, user_id: str, window: Sequence[MemoryItem], accepted: Sequence[Candidate]
    ) -> tuple[_Plan, dict[str, list[AliasRow]]]:
        plan = _Plan()
        if not accepted:
            return plan, {}
        now = utcnow()
        by_id = {m.id: m for m in window}
        items = [self._item(user_id, c, by_id, window, now) for c in accepted]
        vectors = self.embed([it.text for it in items])
        aliases = self.enrich(items, vectors)
        for cand, item in zip(accepted, items, strict=True):  # the extractor knows these better than enrichment
            item.importance = cand.importance
            if cand.category is not None:
                item.category = cand.category
            if cand.event_time is not None:
                item.event_time, item.event_end = cand.event_time, None
            item.valid_from = item.event_time or item.timestamp
        stored = self.store.find_hashes(user_id, [it.content_hash for it in items])
        for cand, item, vec in zip(accepted, items, vectors, strict=True):
            self._decide(user_id, plan, cand.model_copy(update={"entities": item.entities}), item, vec, stored)
        return plan, aliases

    def _decide(
        self,
        user_id: str,
        plan: _Plan,
        cand: Candidate,
        item: MemoryItem,
        vec: Vectors,
        stored: Mapping[str, MemoryItem],
    ) -> None:
        pending = {new.content_hash: new for new, _ in plan.new}
        twin = pending.get(item.content_hash) or stored.get(item.content_hash)
        if twin is not None and twin.kind in TYPED_KINDS and plan.current(twin).is_current:
            self._absorb(plan, plan.current(twin), item, "same text")
            return
        related = self._related(user_id, plan, vec)
        decision = self.consolidator.decide(cand, related, at=item.timestamp)
        targets = {r.item.id: r.item for r in related}
        if decision.action in (Action.NOOP, Action.MERGE) and decision.targets[0] in targets:
            self._absorb(plan, targets[decision.targets[0]], item, decision.reason)
            return
        item.valid_until, item.superseded_by = decision.valid_until, decision.superseded_by
        plan.new.append((item, vec))
        plan.notes[item.id] = {
            "sources": [s.memory_id for s in item.sources],
            "extractor": getattr(self.extractor, "identity", "?"),
            "decision": decision.action.value,
            "reason": decision.reason,
        }
        if decision.action is Action.SUPERSEDE:
            at = as_utc(item.valid_from or item.timestamp)
            for target in decision.targets:
                if target not in targets:
                    continue
                closed = supersede(targets[target], item.id, at)
                plan.change(
                    closed,
                    HistoryEvent.SUPERSEDE,
                    {"superseded_by": item.id, "valid_until": at.isoformat(), "reason": decision.reason},
                )

    @staticmethod
    def _absorb(plan: _Plan, kept: MemoryItem, duplicate: MemoryItem, reason: str) -> None:
        """Merge a duplicate candidate into a memory: keep the text, add the sources (a no-op if none are new)."""
        merged = merge_into(kept, duplicate)
        merged.sources = merge_sources(kept.sources, duplicate.sources)
        added = [s.memory_id for s in merged.sources if s.memory_id not in {k.memory_id for k in kept.sources}]
        if not added and merged.importance == kept.importance and merged.confidence == kept.confidence:
            return
        merged.updated_at = utcnow()
        plan.change(
            merged, HistoryEvent.MERGE, {"merged_text": duplicate.text, "sources_added": added, "reason": reason}
        )

    def _related(self, user_id: str, plan: _Plan, vec: Vectors) -> list[Related]:
        found = self.store.vector_search(user_id, vec, RELATED_LIMIT, Filters(kind=list(TYPED_KINDS)))
        items = self.store.get_many(user_id, [i for i, _ in found])
        related = [Related(plan.current(items[i]), s) for i, s in found if i in items]
        related += [Related(new, cosine(vec, v)) for new, v in plan.new]
        return [r for r in related if r.item.is_current]

    @staticmethod
    def _item(
        user_id: str,
        cand: Candidate,
        by_id: Mapping[str, MemoryItem],
        window: Sequence[MemoryItem],
        now: datetime,
    ) -> MemoryItem:
        sources = [by_id[s] for s in cand.source_ids if s in by_id] or list(window)
        sessions = {s.session_id for s in sources}
        agents = {s.agent_id for s in sources}
        speakers = {s.speaker for s in sources}
        agent = agents.pop() if len(agents) == 1 else None
        metadata: dict[str, Any] = {}
        for source in reversed(sources):  # the first source's values win
            metadata.update(source.metadata)
        for key, value in ((SUBJECT, cand.subject), (ATTRIBUTE, cand.attribute), (VALUE, cand.value)):
            if value is not None:
                metadata[key] = value
        return MemoryItem(
            id=new_id(),
            user_id=user_id,
            agent_id=agent,
            session_id=sessions.pop() if len(sessions) == 1 else None,
            kind=cand.kind,
            speaker=speakers.pop() if len(speakers) == 1 else None,
            text=cand.text,
            timestamp=max(s.timestamp for s in sources),
            created_at=now,
            updated_at=now,
            event_time=cand.event_time,
            importance=cand.importance,
            confidence=cand.confidence,
            content_hash=typed_hash(user_id, agent, cand.kind, cand.text),
            sources=[
                SourceRef(memory_id=s.id, role=s.role, name=s.speaker, timestamp=s.timestamp, metadata=s.metadata)
                for s in sources
            ],
            metadata=metadata,
            entities=list(cand.entities),
        )

    # -- forgetting --------------------------------------------------------------------------------
    def evictable_kinds(self) -> list[MemoryKind]:
        """The kinds that count towards capacity and may be evicted."""
        return [k for k in MemoryKind if k not in self.protect]

    def enforce_capacity(self, user_id: str, *, hard: bool = False) -> list[str]:
        """Evict the lowest-surviving memories beyond capacity to the archive (destroyed when ``hard``)."""
        if self.capacity is None:
            return []
        kinds = self.evictable_kinds()
        if self.store.count_kinds(user_id, kinds) <= self.capacity:
            return []
        now = utcnow()
        items = self.store.list(user_id, Filters(kind=kinds, include_superseded=True), 10**9, 0)
        doomed = choose_evictions(items, self.capacity, now=now, weights=self.weights, protect=self.protect)
        self.store.evict(user_id, doomed, now, hard=hard)
        if doomed:
            log.info("evicted %d memories of a user beyond capacity %d", len(doomed), self.capacity)
        return doomed
