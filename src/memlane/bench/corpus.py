"""Large benchmark corpora built from real conversation text (LoCoMo turns and MemoryBank dialogues).

The seed texts are every LoCoMo turn (with its image caption, as the paper's protocol appends it) and every
English MemoryBank user message and assistant reply. A corpus of ``n`` texts starts with the distinct seeds in a
fixed shuffled order; every further text is a variant of a seed: the seed, followed by the first sentence of
another seed chosen at random, with the people's names replaced by names from a pool that rotates with each
pass over the seeds. Variants are checked to be distinct from every earlier text, so no two memories are exact
duplicates (and no embedding cache can skip work), while their length, vocabulary and style stay those of real
conversation. The corpus of size ``n`` is a prefix of that of any larger size.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memlane.bench.locomo_data import load_locomo
from memlane.errors import ValidationError

NAME_POOL: tuple[str, ...] = (
    "Alex", "Priya", "Tomas", "Mei", "Jordan", "Aisha", "Lukas", "Sofia", "Kenji", "Amara",
    "Diego", "Hana", "Omar", "Elena", "Ravi", "Nora", "Mateo", "Yuki", "Samir", "Clara",
    "Felix", "Leila", "Iker", "Zoe", "Tariq", "Ingrid", "Kofi", "Lucia", "Arjun", "Maren",
)  # fmt: skip
_SENTENCE = re.compile(r"^(.+?[.!?])(\s|$)")


@dataclass(frozen=True)
class Seeds:
    """The distinct real texts a corpus is built from, the names that occur in them, and real questions."""

    texts: list[str]
    names: list[str]
    questions: list[str]


def _memorybank(folder: Path) -> tuple[list[str], list[str], list[str]]:
    bank = folder / "en" / "memory_bank_en.json"
    probes = folder / "en" / "probing_questions_en.jsonl"
    try:
        users = json.loads(bank.read_text(encoding="utf-8"))
        texts = [
            str(pair[key])
            for user in users.values()
            for day in user["history"].values()
            for pair in day
            for key in ("query", "response")
            if str(pair.get(key, "")).strip()
        ]
        questions = [str(q) for line in probes.read_text(encoding="utf-8").splitlines() if line.strip()
                     for qs in json.loads(line).values() for q in qs]  # fmt: skip
    except (OSError, json.JSONDecodeError, KeyError, AttributeError) as exc:
        raise ValidationError(f"cannot read MemoryBank data under {folder}: {exc}") from None
    return texts, list(users), questions


def load_seeds(locomo: Path, memorybank: Path | None = None) -> Seeds:
    """Seed texts, names and questions from a LoCoMo file and, optionally, the MemoryBank folder."""
    dataset = load_locomo(locomo)
    texts = [t.content for c in dataset.conversations for t in c.turns]
    names = sorted({s for c in dataset.conversations for s in c.speakers})
    questions = [q.question for c in dataset.conversations for q in c.questions]
    if memorybank is not None:
        mb_texts, mb_names, mb_questions = _memorybank(memorybank)
        texts += mb_texts
        names = sorted({*names, *mb_names})
        questions += mb_questions
    distinct = list(dict.fromkeys(t.strip() for t in texts if t.strip()))
    random.Random(0).shuffle(distinct)
    return Seeds(texts=distinct, names=names, questions=questions)


def _first_sentence(text: str) -> str:
    m = _SENTENCE.match(text.strip())
    return m.group(1) if m else text.strip()


def _renamer(name_index: dict[str, int], rotation: int) -> Callable[[re.Match[str]], str]:
    def rename(m: re.Match[str]) -> str:
        return NAME_POOL[(name_index[m.group(1)] + rotation) % len(NAME_POOL)]

    return rename


def corpus(seeds: Seeds, n: int, *, seed: int = 0) -> Iterator[str]:
    """``n`` distinct texts: the seeds, then varied seeds (see the module docstring). Deterministic."""
    base = seeds.texts
    if not base:
        raise ValidationError("no seed texts to build a corpus from")
    rng = random.Random(seed)
    names = re.compile(r"\b(" + "|".join(map(re.escape, seeds.names)) + r")\b") if seeds.names else None
    name_index = {name: i for i, name in enumerate(seeds.names)}
    seen: set[str] = set()
    k = 0
    while len(seen) < n:
        i = k % len(base)
        rotation = k // len(base)
        k += 1
        if rotation == 0:
            text = base[i]
        else:
            tail = _first_sentence(base[rng.randrange(len(base))])
            text = f"{base[i]} {tail}"
            if names is not None:
                text = names.sub(_renamer(name_index, rotation), text)
        if text in seen:
            continue
        seen.add(text)
        yield text


def queries(seeds: Seeds, n: int, *, seed: int = 1) -> list[str]:
    """``n`` real questions (LoCoMo and MemoryBank), sampled with a fixed seed (repeated if there are fewer)."""
    pool = list(dict.fromkeys(seeds.questions))
    if not pool:
        raise ValidationError("no questions to query with")
    rng = random.Random(seed)
    out = rng.sample(pool, min(n, len(pool)))
    while len(out) < n:
        out.append(rng.choice(pool))
    return out
