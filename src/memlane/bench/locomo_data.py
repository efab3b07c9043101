"""Loading LoCoMo conversations and questions, with the evidence anomalies of the release normalised."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from memlane.errors import ValidationError

log = logging.getLogger(__name__)

CATEGORY_NAMES: Final = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

# Conversations the default preset may be tuned on; the rest are held out to report on.
TUNE_SPLIT: Final = ("conv-26", "conv-30", "conv-41")
SPLITS: Final = ("all", "tune", "holdout")

_DIA = re.compile(r"D:?(\d+):0*(\d+)")
_SPLIT = re.compile(r"[;,\s]+")
_SESSION_KEY = re.compile(r"session_(\d+)")


@dataclass(frozen=True)
class Turn:
    """One utterance, with the image caption the paper's protocol appends when a photo was shared."""

    dia_id: str
    session: int
    speaker: str
    text: str
    timestamp: datetime
    caption: str | None = None
    media: str | None = None

    @property
    def content(self) -> str:
        return f"{self.text} and shared {self.caption}" if self.caption else self.text


@dataclass(frozen=True)
class Question:
    """One annotated question and the dia_ids of the turns that hold its answer."""

    qid: str
    conv_id: str
    question: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class LocomoConversation:
    """A conversation: its turns in order and its questions."""

    conv_id: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question]


@dataclass
class LocomoDataset:
    """Every conversation in a file, and how many evidence entries had to be repaired or dropped."""

    conversations: list[LocomoConversation]
    repaired: int = 0
    dropped: list[str] = field(default_factory=list)


def parse_session_time(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as an aware UTC datetime (the dataset gives no zone)."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        raise ValidationError(f"LoCoMo session time {text!r} is not like '1:56 pm on 8 May, 2023'") from None


def normalise_evidence(raw: list[Any], known: set[str]) -> tuple[list[str], int, list[str]]:
    """Split joined ids, fix malformed ones and drop ids of no turn: ``(ids, repaired, dropped)``."""
    out: list[str] = []
    repaired = 0
    dropped: list[str] = []
    for entry in raw:
        pieces = [p.strip("()") for p in _SPLIT.split(str(entry)) if p.strip("()")]
        if len(pieces) != 1 or pieces[0] != entry:
            repaired += 1
        for piece in pieces:
            m = _DIA.fullmatch(piece)
            fixed = f"D{int(m.group(1))}:{int(m.group(2))}" if m else None
            if fixed is not None and fixed != piece:
                repaired += 1
            if fixed is None or fixed not in known:
                dropped.append(piece)
            elif fixed not in out:
                out.append(fixed)
    return out, repaired, dropped


def _media(urls: Any) -> str | None:
    """The first image URL of a turn (inline ``data:`` images are no reference and are left out)."""
    for url in urls or []:
        if isinstance(url, str) and url.startswith(("http://", "https://")) and len(url) <= 2048:
            return url
    return None


def _conversation(sample: dict[str, Any], dataset: LocomoDataset) -> LocomoConversation:
    conv_id = str(sample["sample_id"])
    body = sample["conversation"]
    sessions = sorted(int(m.group(1)) for k in body if (m := _SESSION_KEY.fullmatch(k)))
    turns: list[Turn] = []
    for n in sessions:
        when = parse_session_time(body[f"session_{n}_date_time"])
        for raw in body[f"session_{n}"]:
            turns.append(
                Turn(
                    dia_id=str(raw["dia_id"]),
                    session=n,
                    speaker=str(raw["speaker"]),
                    text=str(raw["text"]),
                    timestamp=when,
                    caption=raw.get("blip_caption") or None,
                    media=_media(raw.get("img_url")),
                )
            )
    known = {t.dia_id for t in turns}
    questions: list[Question] = []
    for i, qa in enumerate(sample["qa"]):
        evidence, repaired, dropped = normalise_evidence(list(qa.get("evidence", [])), known)
        dataset.repaired += repaired
        dataset.dropped.extend(f"{conv_id}:{d}" for d in dropped)
        questions.append(
            Question(
                qid=f"{conv_id}:q{i}",
                conv_id=conv_id,
                question=str(qa["question"]),
                category=int(qa["category"]),
                evidence=tuple(evidence),
            )
        )
    return LocomoConversation(conv_id, (str(body["speaker_a"]), str(body["speaker_b"])), turns, questions)


def load_locomo(path: Path) -> LocomoDataset:
    """Read a LoCoMo JSON file (the official ``locomo10.json`` format)."""
    try:
        samples = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValidationError(f"cannot read LoCoMo data {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path} is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(samples, list):
        raise ValidationError(f"{path} is not a LoCoMo file: expected a JSON list of conversations")
    dataset = LocomoDataset(conversations=[])
    try:
        for sample in samples:
            dataset.conversations.append(_conversation(sample, dataset))
    except (KeyError, TypeError) as exc:
        raise ValidationError(f"{path} is not a LoCoMo file: missing or malformed field {exc}") from None
    if dataset.dropped:
        log.info("LoCoMo: dropped %d evidence ids that name no turn: %s", len(dataset.dropped), dataset.dropped)
    return dataset


def select_split(conversations: list[LocomoConversation], split: str) -> list[LocomoConversation]:
    """The conversations of a split: ``all``, ``tune`` (tuning only) or ``holdout`` (reporting)."""
    if split == "all":
        return list(conversations)
    if split == "tune":
        return [c for c in conversations if c.conv_id in TUNE_SPLIT]
    if split == "holdout":
        return [c for c in conversations if c.conv_id not in TUNE_SPLIT]
    raise ValidationError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
