"""``memlane migrate``: copy a whole store into another backend, resumable from a checkpoint, then verify both sides."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memlane.migrate.checkpoint import Checkpoint
from memlane.migrate.copy import Copier, Progress
from memlane.migrate.verify import Check, verify
from memlane.store.base import Store


@dataclass(frozen=True, slots=True)
class MigrationReport:
    """What a copy did (per phase) and how the two sides compared afterwards."""

    checkpoint: Checkpoint
    checks: Sequence[Check]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


def migrate(
    source: Store,
    target: Store,
    checkpoint: Path,
    *,
    batch: int = 500,
    sample: int = 20,
    on_progress: Progress | None = None,
) -> MigrationReport:
    """Copy ``source`` into ``target`` (empty, or the target of the copy ``checkpoint`` records), then verify.

    Interrupted at any point, the same call resumes where the checkpoint stands. The checkpoint file stays when
    done; its phase is then ``done`` and a further call only verifies again.
    """
    point = Copier(source, target, checkpoint, batch=batch, on_progress=on_progress).run()
    return MigrationReport(point, verify(source, target, sample=sample))


__all__ = ["Check", "Checkpoint", "MigrationReport", "migrate"]
