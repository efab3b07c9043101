"""Copying a whole store into another through the store protocols, phase by phase, checkpointed after every batch.

Phases: memories (rows with their index bodies and vectors as stored, no re-embedding; each user's entity table with
them), archive (archived memories, written live), feedback, evict (those archived again, at their archive time),
jobs, history (each memory's records replaced by the source's, deleted memories' included), graph (each user's
relations with their sources and validity, in one transaction per user), security (injection flags and sealed PII
originals, the sealed bytes as they are: the key file that unseals them is not part of a store and must travel
with the copy). Every phase can run again over what it already did: rows the target holds are skipped, evicting,
replacing history or writing flags twice changes nothing, a user whose relations the target holds is skipped.
The source must not change while it is copied.

Not copied, as a target derives or keeps its own: the full-text index, scope versions, the vector change log and
mirror positions, locks and leases, and the staged vectors of an unfinished re-index.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from pathlib import Path

import numpy as np

import memlane.migrate.checkpoint as ckpt
from memlane.errors import NotFoundError, StoreError, ValidationError
from memlane.migrate.checkpoint import Checkpoint, Phase
from memlane.models import ArchivedMemory, HistoryEvent, JobState, MemoryItem, utcnow
from memlane.store.base import BulkLoad, Store, StoreTransfer
from memlane.store.records import StoredEntry, embed_hash

log = logging.getLogger(__name__)

#: Said when sealed PII originals were copied: the sealed bytes are copied as they are, not the key unsealing them.
KEY_NOTE = (
    "sealed PII originals were copied sealed; the key file that unseals them (pii.key in the source's data dir, or "
    "MEMLANE_PII_KEY) is not part of a store: copy it to wherever the target is used, or they cannot be unsealed"
)

#: ``(phase, done, total)`` after every batch; ``total`` is 0 when unknown.
Progress = Callable[[str, int, int], None]


def _index_text(item: MemoryItem) -> str:
    from memlane.engine import index_text  # the one owner of that derivation

    return index_text(item)


def _entries(source: Store, user_id: str, items: Sequence[MemoryItem]) -> dict[str, StoredEntry]:
    """How each item is indexed in the source: as stored, or (a source without ``StoreTransfer``) as derived."""
    if isinstance(source, StoreTransfer):
        return source.stored_entries(user_id, [it.id for it in items])
    bodies = {it.id: _index_text(it) for it in items}
    vectors = source.cached_vectors([embed_hash(b) for b in bodies.values()])
    return {mid: StoredEntry(b, vectors[embed_hash(b)]) for mid, b in bodies.items() if embed_hash(b) in vectors}


class Copier:
    """One copy from ``source`` to ``target`` under a checkpoint file."""

    def __init__(
        self, source: Store, target: Store, path: Path, *, batch: int = 500, on_progress: Progress | None = None
    ) -> None:
        if batch < 1:
            raise ValidationError("batch must be at least 1")
        self.source, self.target, self.path, self.batch = source, target, path, batch
        self.on_progress = on_progress
        self.point = self._start()

    def _start(self) -> Checkpoint:
        point = ckpt.load(self.path, self.source.location, self.target.location)
        if point is not None:
            point.resumed += 1
            log.info("resuming the copy at phase %s, item %d", point.phase, point.offset)
            return point
        if self.target.count() or self.target.user_count():
            raise ValidationError(
                f"the target {self.target.location} already holds {self.target.count()} memories; "
                "migrate into an empty store (or resume with the checkpoint of the copy that filled it)"
            )
        ident = self.source.embedder_identity()
        held = self.target.embedder_identity()
        if ident is not None and held is not None and held != ident:
            raise ValidationError(f"the target's vectors are of {held}, the source's of {ident}")
        if ident is not None and held is None:
            self.target.set_embedder_identity(*ident)
        users = self.source.user_ids() if isinstance(self.source, StoreTransfer) else []
        point = Checkpoint(source=self.source.location, target=self.target.location, users=users)
        if not isinstance(self.source, StoreTransfer):
            point.notes.append("the source cannot list its users nor give archived vectors: archive and history")
        ckpt.save(self.path, point)
        return point

    def _save(self, phase: str, done: int, total: int) -> None:
        ckpt.save(self.path, self.point)
        if self.on_progress is not None:
            self.on_progress(phase, done, total)

    def run(self) -> Checkpoint:
        """Every phase from where the checkpoint stands; the finished checkpoint."""
        steps: dict[Phase, Callable[[], None]] = {
            "memories": self._memories,
            "archive": self._archive,
            "feedback": self._feedback,
            "evict": self._evict,
            "jobs": self._jobs,
            "history": self._history,
            "graph": self._graph,
            "security": self._security,
        }
        for phase in ckpt.PHASES[ckpt.PHASES.index(self.point.phase) :]:
            if phase == "done":
                break
            steps[phase]()
            self.point.advance(ckpt.PHASES[ckpt.PHASES.index(phase) + 1])
            ckpt.save(self.path, self.point)
        return self.point

    # -- phases ------------------------------------------------------------------------------------
    def _insert(self, phase: str, items: Sequence[MemoryItem]) -> None:
        """Insert those of ``items`` the target lacks, with their entries and their users' entity tables."""
        by_user: dict[str, list[MemoryItem]] = {}
        for it in items:
            by_user.setdefault(it.user_id, []).append(it)
        fresh: list[MemoryItem] = []
        bodies: list[str] = []
        vectors: list[np.ndarray] = []
        for user_id, group in by_user.items():
            held = self.target.get_many(user_id, [it.id for it in group])
            entries = _entries(self.source, user_id, [it for it in group if it.id not in held])
            for it in group:
                if it.id in held:
                    continue
                entry = entries.get(it.id)
                if entry is None:
                    raise StoreError(f"the source holds no vector for memory {it.id!r} of user {user_id!r}")
                fresh.append(it)
                bodies.append(entry.body)
                vectors.append(np.asarray(entry.vector, dtype=np.float32).reshape(-1))
        if fresh:
            aliases = {u: self.source.entity_aliases(u) for u in {it.user_id for it in fresh}}
            self.target.insert(fresh, bodies, np.vstack(vectors), event=HistoryEvent.IMPORT, aliases=aliases)
        self.point.count(phase, copied=len(fresh), skipped=len(items) - len(fresh))

    def _memories(self) -> None:
        total = self.source.count()
        bulk = self.target if isinstance(self.target, BulkLoad) else None
        if bulk is not None:  # built once at the end (an interrupted copy builds it when resumed)
            bulk.defer_vector_index()
        items: Iterator[MemoryItem] = islice(self.source.iter_items(None), self.point.offset, None)
        while batch := list(islice(items, self.batch)):
            self._insert("memories", batch)
            self.point.offset += len(batch)
            self._save("memories", self.point.offset, total)
        if bulk is not None:
            bulk.restore_vector_index()

    def _per_user(self) -> Iterator[str]:
        while self.point.user_index < len(self.point.users):
            yield self.point.users[self.point.user_index]
            self.point.user_index += 1
            self.point.offset = 0

    def _archive(self) -> None:
        for user_id in self._per_user():
            while page := self.source.archived(user_id, self.batch, self.point.offset):
                self._insert("archive", [a.memory for a in page])
                self.point.offset += len(page)
                self._save("archive", self.point.user_index, len(self.point.users))

    def _feedback(self) -> None:
        rows = self.source.feedback(None)
        at = utcnow()
        for fb in rows[self.point.offset :]:
            try:
                self.target.add_feedback(fb.user_id, fb.query, fb.memory_id, fb.useful, at)
                self.point.count("feedback", copied=1)
            except NotFoundError:  # a judgement on a memory that is no longer live
                self.point.count("feedback", skipped=1)
            self.point.offset += 1
            if self.point.offset % self.batch == 0:
                self._save("feedback", self.point.offset, len(rows))

    def _evict(self) -> None:
        """Archive again, oldest first, so that the target lists its archive in the source's order (evicting a
        memory no longer live, on a resumed run, does nothing).
        """
        for user_id in self._per_user():
            listed: list[ArchivedMemory] = []
            while page := self.source.archived(user_id, self.batch, len(listed)):
                listed.extend(page)
            run: list[str] = []
            for i, a in enumerate(reversed(listed)):
                run.append(a.memory.id)
                following = listed[len(listed) - i - 2] if i + 1 < len(listed) else None
                if following is None or following.archived_at != a.archived_at:
                    n = self.target.evict(user_id, run, a.archived_at)
                    self.point.count("evict", copied=n, skipped=len(run) - n)
                    run = []
            self._save("evict", self.point.user_index + 1, len(self.point.users))

    def _jobs(self) -> None:
        for user_id in self._per_user():
            for job in self.source.jobs(user_id, None, limit=1_000_000):
                try:
                    self.target.job(user_id, job.id)
                    self.point.count("jobs", skipped=1)
                    continue
                except NotFoundError:
                    pass
                if job.state is JobState.RUNNING:  # its lease belongs to a process of the source
                    job = job.model_copy(update={"state": JobState.QUEUED})
                self.target.enqueue(job)
                self.point.count("jobs", copied=1)
            self._save("jobs", self.point.user_index + 1, len(self.point.users))

    def _history(self) -> None:
        if not isinstance(self.source, StoreTransfer) or not isinstance(self.target, StoreTransfer):
            self.point.notes.append("history not copied: a store here cannot read or write whole histories")
            return
        for user_id in self._per_user():
            ids = self.source.history_ids(user_id)
            for mid in ids[self.point.offset :]:
                self.target.set_history(user_id, mid, self.source.history(user_id, mid))
                self.point.count("history", copied=1)
                self.point.offset += 1
                if self.point.offset % self.batch == 0:
                    self._save("history", self.point.user_index, len(self.point.users))
            self._save("history", self.point.user_index + 1, len(self.point.users))

    def _graph(self) -> None:
        if not isinstance(self.source, StoreTransfer) or not isinstance(self.target, StoreTransfer):
            self.point.notes.append("graph relations not copied: a store here cannot read or write whole graphs")
            return
        for user_id in self._per_user():
            relations = self.source.stored_relations(user_id)
            if relations and self.target.stored_relations(user_id):  # written before an interruption
                self.point.count("graph", skipped=len(relations))
            elif relations:
                written = self.target.put_relations(user_id, relations)
                self.point.count("graph", copied=written, skipped=len(relations) - written)
            self._save("graph", self.point.user_index + 1, len(self.point.users))

    def _security(self) -> None:
        if not isinstance(self.source, StoreTransfer):
            self.point.notes.append("injection flags and sealed PII originals not copied: the source cannot list them")
            return
        for user_id in self._per_user():
            flags = self.source.injection_flags(user_id)
            originals = self.source.sealed_originals(user_id)
            self.target.put_flags(user_id, flags)  # upserts: a resumed run writes the same rows again
            self.target.put_originals(user_id, originals)
            self.point.count("flags", copied=len(flags))
            self.point.count("originals", copied=len(originals))
            self._save("security", self.point.user_index + 1, len(self.point.users))
        if self.point.copied.get("originals") and KEY_NOTE not in self.point.notes:
            self.point.notes.append(KEY_NOTE)
