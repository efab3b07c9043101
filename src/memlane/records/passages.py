"""The passage record that crosses the store seam: a document's passage as offsets into its text."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A passage as offsets into its text: ``text[start:end]``."""

    start: int
    end: int
