"""Store capabilities that keep records beside the memories: feedback, jobs, the archive, the security log,
history and whole-store transfer (protocols; re-exported by ``memlane.store.base``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from memlane.models import (
    ArchivedMemory,
    FlaggedMemory,
    HistoryEntry,
    InjectionFlag,
    Job,
    JobState,
    MemoryItem,
)
from memlane.store.outcome import JobClaim, JobOutcome
from memlane.store.records import (
    Feedback,
    SealedOriginal,
    StoredEntry,
    StoredRelation,
)


@runtime_checkable
class FeedbackLog(Protocol):
    """Whether a returned memory was useful for a query: the labels ``memlane tune`` learns weights from."""

    def add_feedback(self, user_id: str, query: str, memory_id: str, useful: bool, at: datetime) -> None:
        """Record one judgement; ``NotFoundError`` if the user has no such memory."""
        ...

    def feedback(self, user_id: str | None = None) -> builtins.list[Feedback]:
        """The latest judgement of each (user, query, memory), oldest first."""
        ...


@runtime_checkable
class JobQueue(Protocol):
    """The durable queue of background jobs, in the same database as the memories."""

    def enqueue(self, job: Job) -> None:
        """Add a job."""
        ...

    def claim_job(self, claim: JobClaim, is_dead: Callable[[str], bool]) -> Job | None:
        """The oldest queued job (or running one whose lease lapsed or whose owner ``is_dead``), now running under
        ``claim`` with its attempt counted; ``None`` when there is none.
        """
        ...

    def claim_job_id(self, job_id: str, claim: JobClaim, is_dead: Callable[[str], bool]) -> Job | None:
        """The job ``job_id`` now running under ``claim`` (its attempt counted) if it is queued, whatever its
        ``not_before``, or running under a lapsed lease or a dead owner; ``None`` when it is done, failed, held
        by a live owner, or gone. This is how a broker's delivery runs the job it names, at most once at a time.
        """
        ...

    def retry_job_later(self, job_id: str, owner: str, error: str, not_before: datetime) -> bool:
        """Queue again a job that failed an attempt under ``owner`` (or that its handler recorded failed), held
        back from the queue scan until ``not_before``; ``False`` when it was cancelled or taken over.
        """
        ...

    def unhold_job(self, job_id: str) -> bool:
        """Let the queue scan take a queued job now (its ``not_before`` cleared)."""
        ...

    def renew_job(self, job_id: str, claim: JobClaim) -> bool:
        """Extend a job's lease; ``False`` when ``claim.owner`` no longer holds it."""
        ...

    def release_job(self, job_id: str, owner: str) -> bool:
        """Queue again a job ``owner`` holds, its attempt not counted."""
        ...

    def acquire_lock(self, name: str, claim: JobClaim, is_dead: Callable[[str], bool]) -> bool:
        """Take or extend a named lock that holds across processes; ``False`` while another live owner has it."""
        ...

    def release_lock(self, name: str, owner: str) -> None:
        """Let go of a named lock if ``owner`` holds it."""
        ...

    def finish_job(self, outcome: JobOutcome) -> None:
        """Record a job's outcome (``JobFencedError`` when its owner no longer holds it)."""
        ...

    def job(self, user_id: str, job_id: str) -> Job:
        """One job of this user; ``NotFoundError`` when absent (or another user's)."""
        ...

    def find_job(self, job_id: str) -> Job | None:
        """A job by its id alone, of any user (``None`` when absent): callers check that its scope is theirs."""
        ...

    def jobs(self, user_id: str | None, state: JobState | None = None, limit: int = 1000) -> builtins.list[Job]:
        """Jobs of one user (or all), oldest first."""
        ...

    def pending_jobs(self) -> int:
        """How many jobs are queued or running."""
        ...

    def requeue_jobs(self, states: tuple[JobState, ...], user_id: str | None = None) -> int:
        """Put jobs in these states back in the queue (a failed one with a fresh round of attempts); how many."""
        ...


@runtime_checkable
class Archive(Protocol):
    """Evicted memories, kept whole out of every index, and restorable."""

    def evict(self, user_id: str, memory_ids: Sequence[str], at: datetime, *, hard: bool = False) -> int:
        """Move memories to the archive (destroy them when ``hard``); returns how many went."""
        ...

    def archived(self, user_id: str, limit: int, offset: int) -> builtins.list[ArchivedMemory]:
        """Archived memories of this user, most recently archived first."""
        ...

    def restore(self, user_id: str, memory_id: str, at: datetime) -> MemoryItem:
        """Bring an archived memory back; ``NotFoundError`` when this user has none with that id."""
        ...


@runtime_checkable
class SecurityLog(Protocol):
    """Injection flags of memories and the sealed originals of redacted text, kept by memory id.

    A flag may be written before its memory (so a crash in between leaves the memory flagged, never unflagged);
    both go when the memory is deleted or its user erased, and stay with it in the archive.
    """

    def put_flags(self, user_id: str, flags: Sequence[InjectionFlag]) -> None:
        """Record (or replace) the flags of these memories."""
        ...

    def clear_flags(self, user_id: str, memory_ids: Sequence[str]) -> None:
        """Remove the flags of these memories (their text changed and no longer reads as an injection)."""
        ...

    def flags(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, InjectionFlag]:
        """The flags of those of ``memory_ids`` that are flagged."""
        ...

    def flagged(self, user_id: str | None, limit: int, offset: int) -> builtins.list[FlaggedMemory]:
        """Stored memories that are flagged (of one user, or all) with their flags, most recently flagged first."""
        ...

    def put_originals(self, user_id: str, originals: Sequence[SealedOriginal]) -> None:
        """Record (or replace) the sealed originals of redacted memories."""
        ...

    def drop_originals(self, user_id: str, memory_ids: Sequence[str]) -> None:
        """Remove the sealed originals of these memories (their text changed)."""
        ...

    def original(self, user_id: str, memory_id: str) -> SealedOriginal | None:
        """The sealed original of one memory, if its text was redacted."""
        ...

    def count_originals(self, user_id: str | None = None) -> int:
        """How many sealed originals are kept (of one user, or all)."""
        ...


@runtime_checkable
class HistoryLog(Protocol):
    """Every recorded change of a memory."""

    def history(self, user_id: str, memory_id: str) -> builtins.list[HistoryEntry]:
        """The changes of one memory, oldest first."""
        ...


@runtime_checkable
class BulkLoad(Protocol):
    """A backend whose approximate vector index is cheaper built once after a bulk copy than kept up row by row
    (PostgreSQL's HNSW graph: 231 against 702 rows a second at 10k). Optional; ``memlane migrate`` uses it.
    """

    def defer_vector_index(self) -> None:
        """Drop the approximate vector index while a copy fills this store; searches meanwhile are exact."""
        ...

    def restore_vector_index(self) -> None:
        """Build the approximate vector index from every row (a no-op when it exists)."""
        ...


@runtime_checkable
class StoreTransfer(Protocol):
    """What copying a whole store (``memlane migrate``) needs beyond the other capabilities; optional for a backend
    (without it a store can still be a migration's target, and its history and graph are then not copied into it;
    flags and sealed originals are written through ``SecurityLog``).
    """

    def user_ids(self) -> builtins.list[str]:
        """Every user holding anything: memories, archived memories, history, feedback or jobs."""
        ...

    def stored_entries(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, StoredEntry]:
        """The index body and vector of each given memory of this user, live or archived (absent ones left out)."""
        ...

    def history_ids(self, user_id: str) -> builtins.list[str]:
        """The memories of this user with recorded history (deleted ones included), in order of first record."""
        ...

    def set_history(self, user_id: str, memory_id: str, entries: Sequence[HistoryEntry]) -> None:
        """Replace the recorded history of one memory with ``entries``, in order (a copy of another store's)."""
        ...

    def stored_relations(self, user_id: str) -> builtins.list[StoredRelation]:
        """Every graph relation of this user, current and closed, with its sources, in order of id."""
        ...

    def put_relations(self, user_id: str, relations: Sequence[StoredRelation]) -> int:
        """Write a copy of another store's relations for a user who has none here, all or nothing: ids are
        renumbered (``superseded_by`` follows), sources are matched by memory id (one not held here is left out,
        and a relation left without any is not written). Returns how many were written; ``ValidationError`` when
        the user already has relations here.
        """
        ...

    def injection_flags(self, user_id: str) -> builtins.list[InjectionFlag]:
        """Every injection flag of this user (live, archived, or not yet written memories), by memory id."""
        ...

    def sealed_originals(self, user_id: str) -> builtins.list[SealedOriginal]:
        """Every sealed PII original of this user, as its sealed bytes (never unsealed here), by memory id."""
        ...
