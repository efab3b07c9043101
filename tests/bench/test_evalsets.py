"""The labelled sets beyond LoCoMo: fixtures well-formed, splits disjoint, and the bench commands run end to end.

The runs use the hash embedder (a test double): their numbers say nothing about quality, only that the harness
ingests, searches, scores and writes a report.
"""

from __future__ import annotations

import json
import unicodedata
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memlane.bench.dialogue import SPECS, derive_specs, load_dialogue_locomo, read_specs
from memlane.bench.dialogue_original import FIXTURE, FIXTURE2, FIXTURE3, load_dialogue_original
from memlane.bench.labelled import LabelledMemory, LabelledQuery, LabelledSet, SetReport, run_set
from memlane.bench.locomo import read_text
from memlane.bench.locomo_data import TUNE_SPLIT
from memlane.bench.memorybank import BUNDLED, LABELS, load_memorybank
from memlane.cli import app
from memlane.errors import ValidationError

LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"
needs_locomo = pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not found beside the repository")


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def check_report(report: SetReport, *, groups: set[str]) -> None:
    assert sum(r.is_default for r in report.results) == 1
    for res in report.results:
        assert {g.name for g in res.groups} == groups
        for g in res.groups:
            for est in [*g.recall.values(), g.ndcg10, g.mrr]:
                assert 0.0 <= est.low <= est.mean <= est.high <= 1.0
            assert g.recall[20].mean >= g.recall[5].mean
        assert all(len(q.retrieved) == len(set(q.retrieved)) <= 20 for q in res.questions)
    assert report.comparisons and all(0 < c.p_value <= 1 for c in report.comparisons)


# -- fixtures --------------------------------------------------------------------------------------------------------
def test_memorybank_labels_point_at_pairs_of_the_users_history() -> None:
    evalset = load_memorybank()
    history = {k.strip(): v["history"] for k, v in json.loads((BUNDLED / "memory_bank_en.json").read_text()).items()}
    assert len(evalset.queries) == 100 and len({q.scope for q in evalset.queries}) == 15
    for q in evalset.queries:
        for label in q.evidence:
            user, day, index = label.split("/")
            assert user == q.scope and int(index) < len(history[user][day])
    assert [q.qid for q in evalset.queries if not q.evidence] == ["John Zhang/q4"]
    # every pair is stored as its user query and its assistant response, dated with its day
    pairs = [m for m in evalset.memories if m.mid == "Emily/2023-04-30/3"]
    assert [(m.role, m.name) for m in pairs] == [("user", "Emily"), ("assistant", "AI companion")]
    assert pairs[0].timestamp == datetime(2023, 4, 30, tzinfo=UTC)


def test_memorybank_splits_are_disjoint_and_cover_every_user() -> None:
    fixture = json.loads(LABELS.read_text())
    tune, holdout = set(fixture["split"]["tune"]), set(fixture["split"]["holdout"])
    assert not tune & holdout and len(tune | holdout) == 15
    evalset = load_memorybank()
    assert {q.scope for q in evalset.select("tune").queries} == tune
    assert {q.scope for q in evalset.select("holdout").queries} == holdout


def test_original_set_labels_and_splits() -> None:
    evalset = load_dialogue_original()
    events = {m.mid: m.content for m in evalset.memories}
    assert len(events) == len(evalset.memories) >= 150 and len(evalset.queries) >= 50
    split_of: dict[str, str] = {}
    for q in evalset.queries:
        assert q.evidence and all(e.startswith(q.group.lower() + "-") for e in q.evidence)
        side = "tune" if q.split == "tune" else "held out"
        assert split_of.setdefault(q.group, side) == side
        assert not any(events[e].rstrip(".") in q.text for e in q.evidence), "a query copies its event"
    assert {"tune", "held out"} == set(split_of.values())
    assert {q.split for q in evalset.queries} == {"tune", "holdout", "holdout2", "holdout3", "holdout4"}
    assert json.loads(FIXTURE.read_text())["split"]["tune"] == sorted(
        {p for p, s in split_of.items() if s == "tune"}, key=list(split_of).index
    )


@pytest.mark.parametrize(("fixture", "name"), [(FIXTURE2, "dialogue-original2"), (FIXTURE3, "dialogue-original3")])
def test_later_cohorts_labels_and_splits(fixture: Path, name: str) -> None:
    """Ten more people in each fixture: the same rules, a person split declared beforehand (every second person in
    file order tunes), events only their person's queries point at, no person of an earlier cohort.
    """
    doc = json.loads(fixture.read_text())
    evalset = load_dialogue_original(fixture)
    assert evalset.name == name and len(evalset.queries) >= 200 and len(evalset.memories) >= 190
    people = list(dict.fromkeys(q.group for q in evalset.queries))
    assert doc["split"]["tune"] == people[0::2] and doc["split"]["holdout"] == people[1::2]
    earlier = {q.group for f in (FIXTURE, FIXTURE2) if f != fixture for q in load_dialogue_original(f).queries}
    assert not earlier & set(people)
    events = {m.mid: m.content for m in evalset.memories}
    for q in evalset.queries:
        folded = unicodedata.normalize("NFKD", q.group).encode("ascii", "ignore").decode().lower()
        assert q.evidence and all(e.startswith(folded + "-") for e in q.evidence)
        assert q.split == ("tune" if q.group in doc["split"]["tune"] else "holdout")
        assert not any(events[e].rstrip(".") in q.text for e in q.evidence), "a query copies its event"
        lines = q.text.splitlines()
        assert len(lines) == 3 and any(line.startswith(q.group + ": ") for line in lines)


@needs_locomo
def test_dialogue_fixture_is_what_the_rule_derives_and_holds_no_locomo_text() -> None:
    specs = read_specs()
    assert specs == derive_specs(LOCOMO) and len(specs) >= 150
    evalset = load_dialogue_locomo(LOCOMO)
    assert len(evalset.queries) == len(specs)
    committed = SPECS.read_text()
    samples = json.loads(LOCOMO.read_text())
    texts = [str(qa["question"]) for s in samples for qa in s["qa"]]
    texts += [str(t) for s in samples for v in s["observation"].values() for items in v.values() for t, _ in items]
    assert not [t for t in texts if len(t) > 25 and t in committed]
    assert {q.scope for q in evalset.select("tune").queries} == set(TUNE_SPLIT)
    assert not {q.scope for q in evalset.select("holdout").queries} & set(TUNE_SPLIT)


def test_a_label_of_no_memory_or_a_group_in_both_splits_is_rejected() -> None:
    when = datetime(2024, 1, 1, tzinfo=UTC)
    mems = [LabelledMemory("a", "u1", "s", "user", "alpha", when), LabelledMemory("b", "u2", "s", "user", "beta", when)]

    def with_queries(*queries: LabelledQuery) -> LabelledSet:
        return LabelledSet(name="t", description="", memories=mems, queries=list(queries))

    with pytest.raises(ValidationError, match="no memory"):
        with_queries(LabelledQuery("q1", "u1", "alpha?", ("zzz",), "tune")).validate()
    with pytest.raises(ValidationError, match="another scope"):
        with_queries(LabelledQuery("q1", "u1", "beta?", ("b",), "tune")).validate()
    with pytest.raises(ValidationError, match="both splits"):
        with_queries(
            LabelledQuery("q1", "u1", "alpha?", ("a",), "tune"), LabelledQuery("q2", "u1", "alpha?", ("a",), "holdout")
        ).validate()
    with pytest.raises(ValidationError, match="appears twice"):
        with_queries(
            LabelledQuery("q1", "u1", "alpha?", ("a",), "tune"), LabelledQuery("q1", "u2", "beta?", ("b",), "holdout")
        ).validate()
    with pytest.raises(ValidationError, match="both splits"):
        with_queries(
            LabelledQuery("q1", "u1", "alpha?", ("a",), "tune"), LabelledQuery("q2", "u1", "alpha?", ("a",), "holdout2")
        ).validate()
    # both held-out rounds may ask about the same group
    with_queries(
        LabelledQuery("q1", "u1", "alpha?", ("a",), "holdout"), LabelledQuery("q2", "u1", "alpha?", ("a",), "holdout2")
    ).validate()


# -- runs ------------------------------------------------------------------------------------------------------------
def test_a_query_with_no_evidence_is_counted_and_not_scored() -> None:
    when = datetime(2024, 1, 1, tzinfo=UTC)
    mems = [
        LabelledMemory("a1", "u1", "s", "user", "I adopted a grey cat called Pepper", when),
        LabelledMemory("a2", "u1", "s", "user", "I work as a nurse in Lyon", when),
        LabelledMemory("b1", "u2", "s", "user", "I sold my old bicycle", when),
    ]
    queries = [
        LabelledQuery("q1", "u1", "what is my cat called?", ("a1",), "tune"),
        LabelledQuery("q2", "u1", "where did I grow up?", (), "tune"),
        LabelledQuery("q3", "u2", "which bicycle did I sell?", ("b1",), "holdout"),
    ]
    evalset = LabelledSet(name="tiny", description="", memories=mems, queries=queries)
    report = run_set(evalset, presets=["bm25"], embedder="hash")
    assert report.no_evidence == ["q2"] and report.queries == 3
    for res in report.results:
        assert [r.qid for r in res.questions] == ["q1", "q3"]
        assert res.group("all").recall[10].mean == 1.0  # each scope holds its answer among at most two memories
    holdout = run_set(evalset, presets=["bm25"], split="holdout", embedder="hash")
    assert holdout.scopes == ["u2"] and holdout.memories == 1
    assert [g.name for g in holdout.results[0].groups] == ["holdout"]


def test_bench_memorybank_quick_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "memorybank.json.gz"
    text = invoke("bench", "memorybank", "--quick", "--embedder", "hash", "--config", "bm25", "--json", str(out))
    assert "R@10 (95% CI)" in text
    report = SetReport.model_validate_json(read_text(out))
    assert report.set_name == "memorybank" and report.scopes == ["Emily", "Frank"]
    assert {r.name for r in report.results} == {"bm25", "multi"}
    check_report(report, groups={"tune", "holdout", "all"})


def test_bench_dialogue_original_holdout_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "original.json"
    invoke("bench", "dialogue", "--set", "original", "--quick", "--split", "holdout", "--embedder", "hash",
           "--config", "dense", "--json", str(out))  # fmt: skip
    report = SetReport.model_validate_json(out.read_text())
    assert report.set_name == "dialogue-original" and report.split == "holdout"
    assert {q.qid.split("-")[0] for r in report.results for q in r.questions} == {"tomas"}
    check_report(report, groups={"holdout"})


@needs_locomo
def test_bench_dialogue_locomo_quick_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "dialogue.json"
    invoke("bench", "dialogue", "--data", str(LOCOMO), "--quick", "--embedder", "hash", "--config", "bm25",
           "--json", str(out))  # fmt: skip
    report = SetReport.model_validate_json(out.read_text())
    assert report.set_name == "dialogue-locomo" and len(report.scopes) == 2 and report.queries == 50
    check_report(report, groups={"tune", "holdout", "all"})


def test_bench_dialogue_needs_data_for_the_derived_set() -> None:
    result = CliRunner().invoke(app, ["bench", "dialogue", "--embedder", "hash"])
    assert result.exit_code == 2 and "--data" in result.output
