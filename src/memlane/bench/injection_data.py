"""The labelled injection sets (deepset, jailbreak, NotInject, BIPIA, LoCoMo turns) cut into train, val and dev.

Every source is split by a hash of its text into train (60%), val (20%: choosing settings) and dev (20%: the
reported numbers, never tuned on). BIPIA contexts and attack instructions are split separately, so a dev document
carries an attack whose words were never seen in training. Indirect injections are built by the rule in
``../shared/data/injection/FORMAT.md``: an attack from the same split is put at the start, at a sentence (or table
row) boundary near the middle, or at the end of a context, each context once per position, the attack drawn by a
``random.Random`` seeded from the context's hash. LoCoMo turns are benign conversation for val (conv-26, 30, 41)
and dev (the others) only: CC BY-NC, so never trained on.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

Split = Literal["train", "val", "dev"]
SPLITS: Final[tuple[Split, ...]] = ("train", "val", "dev")
LOCOMO_VAL: Final = frozenset({"conv-26", "conv-30", "conv-41"})
POSITIONS: Final = ("start", "middle", "end")


@dataclass(frozen=True)
class Sample:
    """One labelled text: 1 = injection, 0 = benign; ``subset`` names the part of the table it is reported in."""

    text: str
    label: int
    subset: str
    split: Split
    attack: str = ""  # the inserted instruction of an indirect injection (for window labels in training)
    category: str = ""  # BIPIA's category of that instruction (task hijack, scam, ...)
    group: str = ""  # the BIPIA context a sample was built from (its clean and attacked versions share it)


def split_of(key: str) -> Split:
    """The split a text falls in, by a stable hash of it."""
    bucket = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) % 100
    return "train" if bucket < 60 else "val" if bucket < 80 else "dev"


def _deepset(root: Path) -> Iterator[Sample]:
    with (root / "deepset_train.csv").open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            label = int(row["label"])
            yield Sample(row["text"], label, "direct" if label else "benign-requests", split_of(row["text"]))


def _jailbreak(root: Path) -> Iterator[Sample]:
    with (root / "jailbreak_balanced_train.csv").open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            label = int(row["type"] == "jailbreak")
            yield Sample(row["prompt"], label, "jailbreak" if label else "benign-roleplay", split_of(row["prompt"]))


def _notinject(root: Path) -> Iterator[Sample]:
    for row in json.loads((root / "notinject_one.json").read_text(encoding="utf-8")):
        yield Sample(row["prompt"], 0, "benign-trigger-words", split_of(row["prompt"]))


def insert_attack(context: str, attack: str, position: str) -> str:
    """``context`` with ``attack`` put at its start, at the boundary nearest its middle, or at its end."""
    if position == "start":
        return f"{attack}\n{context}"
    if position == "end":
        return f"{context}\n{attack}"
    middle = len(context) // 2
    cuts = [i + 1 for i, ch in enumerate(context) if ch == "\n" or (ch in ".!?" and context[i + 1 : i + 2] == " ")]
    cut = min(cuts, key=lambda i: abs(i - middle)) if cuts else middle
    return f"{context[:cut]}\n{attack}\n{context[cut:]}"


def _attacks(path: Path) -> dict[Split, list[tuple[str, str]]]:
    out: dict[Split, list[tuple[str, str]]] = {s: [] for s in SPLITS}
    for category, items in json.loads(path.read_text(encoding="utf-8")).items():
        for attack in items:
            out[split_of(attack)].append((category, attack))
    return out


def _bipia(root: Path) -> Iterator[Sample]:
    base = root / "bipia_train"
    text_attacks = _attacks(base / "text_attack_train.json")
    code_attacks = _attacks(base / "code_attack_train.json")
    for kind, attacks in (("email", text_attacks), ("table", text_attacks), ("code", code_attacks)):
        with (base / f"{kind}_train.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                raw = json.loads(line)["context"]
                context = "\n".join(raw) if isinstance(raw, list) else str(raw)  # code answers are lists of lines
                split = split_of(context)
                yield Sample(context, 0, f"documents-{kind}", split)
                rng = random.Random(hashlib.sha256(context.encode("utf-8")).hexdigest())
                for position in POSITIONS:
                    category, attack = rng.choice(attacks[split])
                    attacked = insert_attack(context, attack, position)
                    yield Sample(attacked, 1, f"indirect-{kind}", split, attack, category)


def _locomo(path: Path) -> Iterator[Sample]:
    for conv in json.loads(path.read_text(encoding="utf-8")):
        split: Split = "val" if conv["sample_id"] in LOCOMO_VAL else "dev"
        talk = conv["conversation"]
        for key, turns in talk.items():
            if key.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    yield Sample(str(turn["text"]), 0, "locomo-turns", split)


def load_samples(root: Path, locomo: Path | None, splits: Sequence[Split]) -> list[Sample]:
    """Every sample of the given splits; LoCoMo turns only when ``locomo`` is given (never in train)."""
    sources = [_deepset(root), _jailbreak(root), _notinject(root), _bipia(root)]
    if locomo is not None:
        sources.append(_locomo(locomo))
    wanted = set(splits)
    return [s for source in sources for s in source if s.split in wanted]


# -- by source (leave-one-source-out) ------------------------------------------------------------------------
SOURCES: Final = ("deepset", "jailbreak", "notinject", "bipia-email", "bipia-table", "bipia-code")
"""The sources a detector is fitted on; LoCoMo (``locomo``) is only ever held out (CC BY-NC: evaluation only)."""


def attack_half(attack: str) -> int:
    """Which half (0 or 1) of BIPIA's text attacks an instruction falls in, by a stable hash of it: e-mails carry
    half 0 and tables half 1, so holding out one carrier also holds out the attacks it carries.
    """
    return int(hashlib.sha256(attack.encode("utf-8")).hexdigest()[:8], 16) % 2


def _bipia_by_carrier(root: Path) -> Iterator[tuple[str, Sample]]:
    base = root / "bipia_train"
    text = [
        (c, a) for c, items in json.loads((base / "text_attack_train.json").read_text("utf-8")).items() for a in items
    ]
    code = [
        (c, a) for c, items in json.loads((base / "code_attack_train.json").read_text("utf-8")).items() for a in items
    ]
    pools = {
        "email": [ca for ca in text if attack_half(ca[1]) == 0],
        "table": [ca for ca in text if attack_half(ca[1]) == 1],
        "code": code,
    }
    for kind, attacks in pools.items():
        with (base / f"{kind}_train.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                raw = json.loads(line)["context"]
                context = "\n".join(raw) if isinstance(raw, list) else str(raw)
                source = f"bipia-{kind}"
                group = hashlib.sha256(context.encode("utf-8")).hexdigest()
                yield source, Sample(context, 0, f"documents-{kind}", "train", group=group)
                rng = random.Random(group)
                for position in POSITIONS:
                    category, attack = rng.choice(attacks)
                    attacked = insert_attack(context, attack, position)
                    yield source, Sample(attacked, 1, f"indirect-{kind}", "train", attack, category, group)


def _locomo_turns(path: Path) -> Iterator[Sample]:
    """Each LoCoMo turn as ingest embeds it: the speaker's name, a colon, the text."""
    for conv in json.loads(path.read_text(encoding="utf-8")):
        for key, turns in conv["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                for turn in turns:
                    yield Sample(f"{turn['speaker']}: {turn['text']}", 0, "locomo-turns", "dev")


def load_sources(root: Path, locomo: Path | None = None) -> dict[str, list[Sample]]:
    """Every row of every source, by source name (``SOURCES``, and ``locomo`` when given); nothing split by row.

    BIPIA carriers are built as ``load_samples`` does (each context clean, and once with an attack at each
    position, drawn by a ``random.Random`` seeded from the context's hash), except that e-mails draw only from half
    0 of the text attacks and tables only from half 1 (``attack_half``).
    """
    out: dict[str, list[Sample]] = {name: [] for name in SOURCES}
    out["deepset"] = list(_deepset(root))
    out["jailbreak"] = list(_jailbreak(root))
    out["notinject"] = list(_notinject(root))
    for source, sample in _bipia_by_carrier(root):
        out[source].append(sample)
    if locomo is not None:
        out["locomo"] = list(_locomo_turns(locomo))
    return out
