"""The household scenario of ``memlane bench ask``: its shape, and that ask() routes and scores every question."""

from __future__ import annotations

from memlane import Memory
from memlane.bench.ask import (
    AskReport,
    ingest_scenario,
    kind_scores,
    load_scenario,
    locomo_match,
    normalise_answer,
    render,
    run_scenario,
)

STRUCTURED_KINDS = {"count", "exists", "list", "first", "last", "order", "range"}


def test_the_scenario_has_forty_questions_of_every_kind() -> None:
    frames, sessions, questions = load_scenario()
    assert len(questions) >= 40 and len(frames) >= 40 and len(sessions) >= 5
    assert {q.kind for q in questions} >= STRUCTURED_KINDS


def test_every_structured_question_is_routed_and_scored() -> None:
    with Memory(":memory:", embedder="hash") as memory:
        rows = run_scenario(memory, ingest_scenario(memory))
    for r in rows:  # a rule claims every structured question; one that finds nothing hands it to search
        if r.kind in STRUCTURED_KINDS:
            assert r.route == "structured" or ("found nothing" in r.reason and r.reason.startswith("rule")), r
    assert all(r.route == "search" for r in rows if r.kind not in STRUCTURED_KINDS)
    report = AskReport(embedder="hash", machine="test", kinds=kind_scores(rows), rows=rows)
    assert sum(k.questions for k in report.kinds) == len(rows)
    assert "| **all** |" in render(report)


def test_normalised_match_of_free_text_answers() -> None:
    assert normalise_answer("Twice.") == "2"
    assert normalise_answer("The beach, and the mountains") == "beach and mountains"


def test_locomo_match_compares_counts_yes_no_dates_and_lists() -> None:
    from memlane.answer.ask import Answer
    from memlane.structured.query import Op
    from memlane.structured.run import StructuredResult

    def answer(op: Op, text: str, value: object) -> Answer:
        result = StructuredResult(query="q", op=op, answer=text, value=value)  # type: ignore[arg-type]
        return Answer(question="q", route="structured", reason="r", structured=result)

    assert locomo_match("Twice", answer(Op.COUNT, "2", 2))[1]
    assert not locomo_match("3", answer(Op.COUNT, "2", 2))[1]
    assert locomo_match("Yes, she did", answer(Op.EXISTS, "yes", True))[1]
    assert locomo_match("7 May 2023", answer(Op.FIRST, "7 May 2023, 13:56: ...", "2023-05-07"))[1]
    assert locomo_match("beach, mountains", answer(Op.LIST, "x", ["Beach", "Mountains", "forest"]))[1]
    assert not locomo_match("beach, lake", answer(Op.LIST, "x", ["beach"]))[1]
