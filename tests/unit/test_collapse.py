"""One hit per statement: a message and the typed memories that restate it fold into the best-ranked of them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from memlane import Memory, Message
from memlane.models import Hit, MemoryItem, MemoryKind, SourceRef
from memlane.retrieval.collapse import collapse, collapse_from, statement_of

T = datetime(2024, 1, 1, tzinfo=UTC)


def item(mid: str, kind: MemoryKind = MemoryKind.MESSAGE, sources: Sequence[str] = ()) -> MemoryItem:
    return MemoryItem(
        id=mid,
        user_id="u",
        kind=kind,
        text=mid,
        timestamp=T,
        created_at=T,
        updated_at=T,
        content_hash=mid,
        sources=[SourceRef(memory_id=s) for s in sources],
    )


def hit(it: MemoryItem, score: float) -> Hit:
    return Hit(memory=it, score=score)


def test_a_typed_memory_folds_into_its_message_and_the_place_goes_to_the_next_statement() -> None:
    m1, m2, m3 = item("m1"), item("m2"), item("m3")
    fact = item("f1", MemoryKind.FACT, ["m1"])
    event = item("e1", MemoryKind.EVENT, ["m1", "m2"])  # the first source is its statement
    out = collapse([hit(fact, 0.9), hit(m2, 0.8), hit(m1, 0.7), hit(event, 0.6), hit(m3, 0.5)], top_k=3)
    assert [h.memory.id for h in out] == ["f1", "m2", "m3"]
    assert [m.id for m in out[0].related] == ["m1", "e1"]
    assert out[1].related == [] and out[2].related == []
    assert [h.score for h in out] == [0.9, 0.8, 0.5]  # each hit keeps its own fused score


def test_entity_profiles_routines_and_sourceless_memories_are_statements_of_their_own() -> None:
    assert statement_of(item("x", MemoryKind.ENTITY, ["m1"])) == "x"
    assert statement_of(item("r", MemoryKind.ROUTINE, ["m1"])) == "r"
    assert statement_of(item("p", MemoryKind.PREFERENCE)) == "p"
    assert statement_of(item("p", MemoryKind.PREFERENCE, ["m9"])) == "m9"
    hits = [hit(item("m1"), 1.0), hit(item("x", MemoryKind.ENTITY, ["m1"]), 0.9)]
    assert [h.memory.id for h in collapse(hits, top_k=5)] == ["m1", "x"]


def test_later_forms_of_a_kept_statement_fold_even_past_top_k() -> None:
    hits = [
        hit(item("m1"), 1.0),
        hit(item("m2"), 0.9),
        hit(item("m3"), 0.8),
        hit(item("f", MemoryKind.FACT, ["m1"]), 0.7),
    ]
    out = collapse(hits, top_k=2)
    assert [h.memory.id for h in out] == ["m1", "m2"] and [m.id for m in out[0].related] == ["f"]


def _pairs(n: int) -> tuple[dict[str, MemoryItem], list[list[str]], Callable[[Sequence[str]], list[Hit]]]:
    """``n`` messages ``m<i>`` each with a fact ``f<i>`` of it, the reads a fetch made, and the fetch."""
    pool = {f"m{i}": item(f"m{i}") for i in range(n)} | {
        f"f{i}": item(f"f{i}", MemoryKind.FACT, [f"m{i}"]) for i in range(n)
    }
    reads: list[list[str]] = []

    def fetch(keys: Sequence[str]) -> list[Hit]:
        reads.append(list(keys))
        return [hit(pool[k], 1.0) for k in keys]

    return pool, reads, fetch


def test_more_candidates_are_read_only_while_folding_left_places_empty() -> None:
    _, reads, fetch = _pairs(10)
    # Nothing folds: one read of top_k keys.
    assert len(collapse_from([f"m{i}" for i in range(9)], fetch, 3)) == 3 and len(reads) == 1
    reads.clear()
    # Each message is followed by its fact: three statements need six candidates, read in two steps of three.
    ranked = [k for i in range(9) for k in (f"m{i}", f"f{i}")]
    out = collapse_from(ranked, fetch, 3)
    assert [h.memory.id for h in out] == ["m0", "m1", "m2"] and [m.id for m in out[2].related] == ["f2"]
    assert reads == [ranked[0:3], ranked[3:6]]
    reads.clear()
    # Fewer statements than top_k in the whole ranking: every candidate is read, and all are returned.
    assert len(collapse_from(["m0", "f0"], fetch, 3)) == 1 and reads == [["m0", "f0"]]


def test_search_returns_one_hit_per_statement_with_the_other_forms_attached() -> None:
    with Memory(":memory:", embedder="hash") as memory:
        memory.add(
            [Message(role="user", name="Kim", content="I moved to Austin.")],
            user_id="kim",
            timestamp="2024-05-01T10:00:00+00:00",
        )
        stored = memory.list(user_id="kim")
        assert {m.kind for m in stored} == {MemoryKind.MESSAGE, MemoryKind.FACT}  # the turn and a fact of it
        hits = memory.search("where does Kim live? Austin", user_id="kim", top_k=5)
        assert len(hits) == 1
        forms = {hits[0].memory.id, *(m.id for m in hits[0].related)}
        assert forms == {m.id for m in stored}


def test_hits_already_read_are_not_fetched_again() -> None:
    pool, reads, fetch = _pairs(6)
    ranked = [k for i in range(6) for k in (f"m{i}", f"f{i}")]
    first = [hit(pool[k], 1.0) for k in ranked[:3]]  # m0, f0, m1: two statements of the three wanted
    out = collapse_from(ranked, fetch, 3, read=first)
    assert [h.memory.id for h in out] == ["m0", "m1", "m2"] and reads == [ranked[3:6]]
