"""The MemoryBank probing questions as a labelled set: each user's history as turns, each question with its pairs.

The data (MIT, bundled under ``data/memorybank`` with its licence) gives 15 users, each with ten days of
query/response pairs, and 100 probing questions without answers or evidence. ``data/memorybank_labels.json``
(written for this project) labels each question with the pairs that answer it, by the rule written in that file.
Every user query and assistant response is stored as its own message, dated with its day, in the user's scope;
a retrieved message counts as its pair.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memlane.bench.labelled import LabelledMemory, LabelledQuery, LabelledSet
from memlane.errors import ValidationError

DATA_DIR = Path(__file__).parent / "data"
BUNDLED = DATA_DIR / "memorybank"
LABELS = DATA_DIR / "memorybank_labels.json"
HISTORY_FILE = "memory_bank_en.json"
#: The assistant's name in the dialogues ("I'm your AI companion").
ASSISTANT = "AI companion"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValidationError(f"cannot read {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path} is not JSON: {exc.msg} at line {exc.lineno}") from None


def _history_path(data: Path | None) -> Path:
    """The history file inside ``data`` (the bundled copy, the ``en`` folder, or the folder above it)."""
    root = BUNDLED if data is None else Path(data)
    for candidate in (root / HISTORY_FILE, root / "en" / HISTORY_FILE, root):
        if candidate.is_file():
            return candidate
    raise ValidationError(f"no {HISTORY_FILE} in {root}")


def pair_id(user: str, day: str, index: int) -> str:
    """The stable id of a user's ``index``-th query/response pair of ``day`` (``YYYY-MM-DD``)."""
    return f"{user}/{day}/{index}"


def load_memorybank(data: Path | None = None, labels: Path = LABELS) -> LabelledSet:
    """Every user's history as messages, and the probing questions with their committed labels."""
    history = _read_json(_history_path(data))
    fixture = _read_json(labels)
    try:
        tune = set(fixture["split"]["tune"])
        holdout = set(fixture["split"]["holdout"])
        memories: list[LabelledMemory] = []
        for raw_name, user in history.items():
            name = raw_name.strip()
            for day, pairs in sorted(user["history"].items()):
                when = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC)
                for i, pair in enumerate(pairs):
                    pid = pair_id(name, day, i)
                    for role, speaker, text in (
                        ("user", name, pair["query"]),
                        ("assistant", ASSISTANT, pair["response"]),
                    ):
                        if str(text).strip():
                            memories.append(
                                LabelledMemory(
                                    mid=pid,
                                    scope=name,
                                    session=day,
                                    role=role,
                                    content=str(text),
                                    timestamp=when,
                                    name=speaker,
                                )
                            )
        queries = [
            LabelledQuery(
                qid=str(q["qid"]),
                scope=str(q["user"]),
                text=str(q["question"]),
                evidence=tuple(str(e) for e in q["evidence"]),
                split="tune" if q["user"] in tune else "holdout",
            )
            for q in fixture["questions"]
        ]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValidationError(f"malformed MemoryBank data or labels: {exc!r}") from None
    if tune & holdout:
        raise ValidationError(f"{labels}: users in both splits: {sorted(tune & holdout)}")
    unknown = {q.scope for q in queries} - tune - holdout
    if unknown:
        raise ValidationError(f"{labels}: users in no split: {sorted(unknown)}")
    evalset = LabelledSet(
        name="memorybank",
        description=str(fixture.get("description", "")),
        memories=memories,
        queries=queries,
        source=str(fixture.get("source", "")),
        notes=[str(r) for r in fixture.get("labelling_rule", [])],
    )
    evalset.validate()
    return evalset
