"""Extraction quality: an extractor's precision, recall and claim agreement against hand-labelled turns."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memlane.errors import ValidationError
from memlane.extraction.base import Candidate, Extractor
from memlane.models import MemoryItem, MemoryKind, parse_time


@dataclass(frozen=True)
class Label:
    """One expected typed memory: its kind, the words its text must hold, and (optionally) the claim it states."""

    kind: str
    must: tuple[str, ...]
    subject: str | None = None
    attribute: str | None = None
    value: str | None = None


@dataclass(frozen=True)
class Turn:
    """One labelled turn of a sample file."""

    id: str
    role: str
    speaker: str | None
    text: str
    message: MemoryItem
    expected: tuple[Label, ...]


@dataclass(frozen=True)
class Miss:
    """A false positive (``label`` None) or a false negative (``text`` empty) on one turn."""

    turn: str
    text: str
    label: Label | None


@dataclass
class ExtractionScore:
    """Counts over a sample: true/false positives, false negatives, and claim agreement of the matches."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    claims: int = 0  # matched labels that give a claim
    claims_agree: int = 0  # ... whose candidate states the same attribute and value
    turns: int = 0
    misses: list[Miss] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def claim_agreement(self) -> float:
        return self.claims_agree / self.claims if self.claims else 1.0


def _fold(value: str | None) -> str:
    return " ".join((value or "").casefold().split()).rstrip(".!;,")


def load_turns(path: Path) -> list[Turn]:
    """The labelled turns of a JSONL sample file (see ``tests/fixtures/extraction/README.md`` for the format)."""
    turns: list[Turn] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ValidationError(f"cannot read extraction samples {path}: {e}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            at = parse_time(row["timestamp"])
            labels = tuple(
                Label(
                    kind=str(e["kind"]),
                    must=tuple(str(w) for w in e["must"]),
                    subject=e.get("subject"),
                    attribute=e.get("attribute"),
                    value=e.get("value"),
                )
                for e in row["expected"]
            )
            message = MemoryItem(
                id=str(row["id"]),
                user_id="bench",
                role=str(row.get("role") or "user"),
                speaker=row.get("speaker"),
                text=str(row["text"]),
                timestamp=at,
                created_at=at,
                updated_at=at,
                content_hash=str(row["id"]),
            )
        except KeyError as e:
            raise ValidationError(f"{path}:{number}: not a labelled turn (missing {e})") from None
        except (TypeError, ValueError) as e:
            raise ValidationError(f"{path}:{number}: not a labelled turn ({e})") from None
        turns.append(Turn(message.id, message.role or "user", message.speaker, message.text, message, labels))
    return turns


def _matches(candidate: Candidate, label: Label) -> bool:
    text = candidate.text.lower()
    return candidate.kind is MemoryKind(label.kind) and all(word in text for word in label.must)


def score_turns(extractor: Extractor, turns: Sequence[Turn], *, min_confidence: float = 0.6) -> ExtractionScore:
    """Score the candidates ``extractor`` accepts (at ``min_confidence``) on each turn read alone."""
    score = ExtractionScore(turns=len(turns))
    for turn in turns:
        accepted = extractor.extract([turn.message]).accepted(min_confidence)
        expected = list(turn.expected)
        for candidate in accepted:
            label = next((e for e in expected if _matches(candidate, e)), None)
            if label is None:
                score.fp += 1
                score.misses.append(Miss(turn.id, candidate.text, None))
                continue
            expected.remove(label)
            score.tp += 1
            if label.attribute is not None:
                score.claims += 1
                same = _fold(candidate.attribute) == _fold(label.attribute) and _fold(candidate.value) == _fold(
                    label.value
                )
                score.claims_agree += same
        score.fn += len(expected)
        score.misses.extend(Miss(turn.id, "", label) for label in expected)
    return score
