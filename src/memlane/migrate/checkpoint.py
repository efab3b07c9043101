"""The checkpoint of a store copy: which phase it reached and how far into it, saved atomically after every batch."""

from __future__ import annotations

import contextlib
import os
import uuid
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from memlane.errors import ValidationError
from memlane.models import utcnow

Phase = Literal["memories", "archive", "feedback", "evict", "jobs", "history", "graph", "security", "done"]
PHASES: tuple[Phase, ...] = (
    "memories",
    "archive",
    "feedback",
    "evict",
    "jobs",
    "history",
    "graph",
    "security",
    "done",
)


class Checkpoint(BaseModel):
    """How far a copy from ``source`` to ``target`` got: the phase, the position within it, and what it did."""

    model_config = ConfigDict(extra="forbid")

    source: str
    target: str
    phase: Phase = "memories"
    user_index: int = Field(0, ge=0, description="the user the phase had reached, for per-user phases")
    offset: int = Field(0, ge=0, description="items of the phase (of that user) already done")
    users: list[str] = Field(default_factory=list)
    copied: dict[str, int] = Field(default_factory=dict, description="items written per phase")
    skipped: dict[str, int] = Field(default_factory=dict, description="items the target already held, per phase")
    notes: list[str] = Field(default_factory=list)
    started_at: datetime = Field(default_factory=utcnow)
    resumed: int = 0

    def advance(self, phase: Phase) -> None:
        """Move on to the next phase, from its start."""
        self.phase, self.user_index, self.offset = phase, 0, 0

    def count(self, phase: str, copied: int = 0, skipped: int = 0) -> None:
        self.copied[phase] = self.copied.get(phase, 0) + copied
        self.skipped[phase] = self.skipped.get(phase, 0) + skipped


def load(path: Path, source: str, target: str) -> Checkpoint | None:
    """The checkpoint at ``path`` for this copy; ``None`` when there is none; an error when it is another copy's."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ValidationError(f"cannot read the checkpoint {path}: {e.strerror or e}") from e
    try:
        point = Checkpoint.model_validate_json(text)
    except PydanticValidationError as e:
        raise ValidationError(f"{path} is not a migration checkpoint: {e.errors()[0]['msg']}") from e
    if (point.source, point.target) != (source, target):
        raise ValidationError(
            f"{path} is the checkpoint of a copy from {point.source!r} to {point.target!r}; remove it or give "
            "another --checkpoint"
        )
    return point


def save(path: Path, point: Checkpoint) -> None:
    """Write the checkpoint atomically (a temp file renamed over it), so a kill leaves the old or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(point.model_dump_json(indent=1))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
