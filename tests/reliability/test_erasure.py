"""Erasure as a property: after ``delete`` or ``delete_all``, no stored byte of the deleted text is found by any
search (every preset, as its owner or anyone else), by export, or in any table or index of the file.

``MEMLANE_ERASURE_EXAMPLES`` sets how many examples each property runs (default 10).
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from memlane import Config, Memory
from memlane.config import PRESETS
from tests.reliability import harness

SYLLABLES = ["zor", "quil", "vex", "mab", "tro", "pif", "gul", "nak"]
FRAMES = [
    "My locker code is {w}.",
    "I live in {w}ville.",
    "My sister {w} is a nurse.",
    "Got it, I'll keep {w} in mind.",
    "I love {w} soup.",
]
words = st.lists(st.sampled_from(SYLLABLES), min_size=3, max_size=3).map(lambda parts: "".join(parts))
turns = st.lists(st.tuples(st.sampled_from(FRAMES), words), min_size=1, max_size=5, unique_by=lambda t: t[1])
EXAMPLES = int(os.environ.get("MEMLANE_ERASURE_EXAMPLES", "10"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a failing example is reported as found, unshrunk
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def fill(memory: Memory, user: str, conversation: list[tuple[str, str]], *, tag: str, infer: bool) -> list[str]:
    texts = [frame.format(w=f"{word}{tag}") for frame, word in conversation]
    return [it.id for it in memory.add(texts, user_id=user, session_id="s1", infer=infer).items]


def leaks(memory: Memory, db: Path, word: str) -> list[str]:
    """Every way ``word`` can still be found."""
    found = []
    for user in ("ana", "ben"):
        if memory.search(word, user_id=user, preset_name="bm25", top_k=50):
            found.append(f"bm25 search as {user} matches it")
        for preset in PRESETS:
            for hit in memory.search(word, user_id=user, preset_name=preset, top_k=50):
                if word.lower() in hit.memory.text.lower() or word.lower() in str(hit.memory.metadata).lower():
                    found.append(f"{preset} search as {user} returns it")
    out = io.StringIO()
    memory.export(out)
    if word.lower() in out.getvalue().lower():
        found.append("export")
    return found + harness.stored_anywhere(db, word)


def memory_at(tmp: str, infer: bool) -> tuple[Memory, Path]:
    db = Path(tmp) / "store.db"
    config = Config(data_dir=Path(tmp) / "home", embedder="hash", infer=infer, background_worker=False)
    return Memory(db, embedder="hash", config=config), db


@SETTINGS
@given(conversation=turns, other=turns, infer=st.booleans())
def test_delete_all_leaves_no_byte_of_the_user_findable(
    conversation: list[tuple[str, str]], other: list[tuple[str, str]], infer: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        memory, db = memory_at(tmp, infer)
        with memory:
            fill(memory, "ana", conversation, tag="a", infer=infer)
            kept = fill(memory, "ben", other, tag="b", infer=infer)
            memory.search(conversation[0][1] + "a", user_id="ana")  # warm the caches first
            memory.delete_all(user_id="ana")
            for _, word in conversation:
                assert leaks(memory, db, f"{word}a") == []
            assert set(kept) <= {it.id for it in memory.list(user_id="ben", limit=1000)}
        harness.integrity(db)


@SETTINGS
@given(conversation=turns, infer=st.booleans(), data=st.data())
def test_delete_leaves_no_byte_of_the_memory_findable(
    conversation: list[tuple[str, str]], infer: bool, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        memory, db = memory_at(tmp, infer)
        with memory:
            ids = fill(memory, "ana", conversation, tag="a", infer=infer)
            i = data.draw(st.integers(0, len(ids) - 1))
            word = f"{conversation[i][1]}a"
            memory.search(word, user_id="ana")  # warm the caches first
            memory.delete(ids[i], user_id="ana")
            assert leaks(memory, db, word) == []
        harness.integrity(db)
