"""Fusion tells the truth about evidence, and the planner weighs dimensions by the query's shape."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from memlane import Memory, Message
from memlane.cli.demo import DEMO_SESSIONS
from memlane.config import preset
from memlane.retrieval.fusion import CONVEX, fuse, minmax
from memlane.retrieval.query import analyse_query
from memlane.retrieval.search import Planner, recencies
from memlane.retrieval.shape import names_someone, query_shape
from memlane.store.records import CandidateFacts

NOW = datetime(2025, 6, 1, tzinfo=UTC)
EXCERPT = (
    "Sam: You look shattered.\n"
    "Priya: Up at six again. He needs his walk before I log on or he cries at the door.\n"
    "Sam: Is he settling in any better? How long ago did you get him?"
)
# the same turns with the question put after them rather than said in them: not a follow-up
ASKED = EXCERPT.replace("Sam: Is he", "Is he")


def test_a_dimension_where_nothing_matched_contributes_nothing() -> None:
    assert minmax({"a": 0.0, "b": 0.0}) == {"a": 0.0, "b": 0.0}
    assert minmax({"a": 2.0, "b": 2.0}) == {"a": 1.0, "b": 1.0}
    fused = fuse({"dense": {"a": 0.9, "b": 0.5}, "lexical": {"a": 0.0, "b": 0.0}}, CONVEX)
    assert [f.key for f in fused] == ["a", "b"]
    assert fused[0].score == 0.7 and "lexical" not in fused[0].breakdown


def test_zero_match_query_gets_no_bm25_credit_after_the_demo() -> None:
    """Regression: with no stored turn sharing a word with the query, min-max gave every hit lexical 1.00 (+0.40)."""
    with Memory(":memory:", embedder="hash") as memory:
        for n, (when, turns) in enumerate(DEMO_SESSIONS, start=1):
            msgs = [Message(role="user" if w != "assistant" else "assistant", name=w, content=t) for w, t in turns]
            memory.add(msgs, user_id="maya", session_id=f"session-{n}", timestamp=when)
        hits = memory.search("what is my cat's favourite toy?", user_id="maya", top_k=10)
        matched = memory.search("what is my dog's name?", user_id="maya", top_k=10)
    assert hits
    for hit in hits:
        assert "lexical" not in hit.breakdown, hit.breakdown
        assert hit.score == sum(b.contribution for b in hit.breakdown.values())
    # a query whose words do match still gets BM25's full credit on its best match
    assert max(h.breakdown["lexical"].normalized for h in matched if "lexical" in h.breakdown) == 1.0


def test_query_shape() -> None:
    shape = query_shape(EXCERPT)
    assert (shape.turns, shape.lines, shape.is_question, shape.is_dialogue) == (3, 3, True, True)
    assert shape.last_turn == "Is he settling in any better? How long ago did you get him?"
    short = query_shape("What did Caroline paint last week?")
    assert (short.turns, short.is_question, short.is_dialogue, short.words) == (0, True, False, 6)
    assert not query_shape("see https://example.com/x: it fails").is_dialogue
    assert query_shape(" ".join(["word"] * 60)).is_long
    assert shape.speakers == ("Sam", "Priya") and shape.said.splitlines()[0] == "You look shattered."
    assert short.speakers == () and short.said == "What did Caroline paint last week?"


def test_a_name_said_only_as_a_speaker_label_does_not_start_the_graph_walk() -> None:
    """In "Sam: When did you start?", Sam talks; the excerpt is not about Sam (the walk from Sam reached the memory
    "Priya's best friend Sam moved back to Leeds" above the answer)."""
    graph = preset("multi-graph")
    plan = Planner().plan(analyse_query(EXCERPT, NOW), graph, entities=["sam", "priya"])
    assert plan.entities == ["sam", "priya"] and plan.spoken_of == []
    named = EXCERPT + "\nPriya: Sam, you asked me that last week."
    assert Planner().plan(analyse_query(named, NOW), graph, entities=["sam", "priya"]).spoken_of == ["sam"]
    question = Planner().plan(analyse_query("Sam: when did Priya get her dog?", NOW), graph, ["sam", "priya"])
    assert question.spoken_of == ["sam", "priya"]  # one turn is a question, not an excerpt: names stay


def test_a_dialogue_excerpt_lowers_the_keyword_weight_and_searches_its_last_turn() -> None:
    tuned = replace(preset("multi"), dialogue_lexical=0.25, dialogue_last_turn=True)
    plan = Planner().plan(analyse_query(ASKED, NOW), tuned, entities=[])
    assert plan.fusion.weights["lexical"] == 0.4 * 0.25
    assert plan.terms == ["settling", "better", "long", "ago"]
    assert "shattered" not in plan.terms and "dialogue excerpt of 2 turns" in plan.triggers["lexical"]
    # a short question is planned as before
    plain = Planner().plan(analyse_query("how long ago did Priya get her dog?", NOW), tuned, entities=[])
    assert plain.fusion.weights["lexical"] == 0.4 and plain.lexical_terms is None
    # exact-match terms keep their boost even inside an excerpt
    coded = Planner().plan(analyse_query(EXCERPT + "\nSam: it says ERR_CONN_RESET_42", NOW), tuned, entities=[])
    assert coded.fusion.weights["lexical"] == 0.8 and coded.lexical_terms is None


def test_the_default_preset_reads_a_dialogue_excerpt_by_its_last_turn() -> None:
    plan = Planner().plan(analyse_query(ASKED, NOW), preset("default"), entities=[])
    assert plan.fusion.weights["lexical"] == 0.4 * 0.5 and plan.terms == ["settling", "better", "long", "ago"]
    assert plan.semantic_query == ASKED and plan.focus_query == query_shape(ASKED).last_turn
    assert "averaged" in plan.triggers["dense"]
    short = Planner().plan(analyse_query("Where did Priya get her dog?", NOW), preset("default"), entities=[])
    assert short.focus_query == "" and short.fusion.weights["lexical"] == 0.4


def test_a_last_turn_without_content_words_is_not_what_the_excerpt_is_about() -> None:
    """ "When was that?" says what is asked, not about what: the whole excerpt is embedded alone, BM25 gets no share."""
    thin = EXCERPT.rsplit("\n", 1)[0] + "\nWhen was that?"
    plan = Planner().plan(analyse_query(thin, NOW), preset("default"), entities=[])
    assert plan.focus_query == "" and plan.semantic_query == thin
    assert "lexical" not in plan.dimensions and "0 content word(s)" in plan.triggers["lexical"]
    one = Planner().plan(analyse_query(thin.replace("When was that?", "Which year?"), NOW), preset("default"), [])
    assert one.focus_query == "" and one.fusion.weights["lexical"] == 0.4 * 0.5 * 0.5
    # two content words are enough to say what the excerpt asks about
    two = Planner().plan(analyse_query(thin + " What happened to your foot?", NOW), preset("default"), entities=[])
    assert two.focus_query == "When was that? What happened to your foot?"
    assert two.fusion.weights["lexical"] == 0.4 * 0.5


def test_a_follow_up_is_read_by_the_whole_excerpt() -> None:
    """ "Sam: How long ago did you get him?" says what is asked in the conversation's words ("long", "ago"); what it
    is about (the dog, the walk) is in the turns before: the whole excerpt is embedded alone and BM25 reads every
    turn at a quarter weight.
    """
    shape = query_shape(EXCERPT)
    assert shape.is_follow_up and not query_shape(ASKED).is_follow_up
    assert not query_shape(EXCERPT.replace("did you get him?", "did Priya get him?")).is_follow_up  # names someone
    assert not query_shape("Sam: How long ago did you get him?").is_follow_up  # one turn: a question
    # what opens a sentence (as the entity extractor reads it) names no one; "I" never does; "the MRI" names something
    assert not names_someone('Congratulations!  When was it? "Great." Did I tell you? I\'m lost.')
    assert names_someone("When did you get the MRI?") and names_someone("So when did Maria move?")
    plan = Planner().plan(analyse_query(EXCERPT, NOW), preset("default"), entities=[])
    assert plan.semantic_query == EXCERPT and plan.focus_query == ""
    assert plan.fusion.weights["lexical"] == 0.4 * 0.25
    assert plan.terms[:2] == ["look", "shattered"] and plan.terms[-2:] == ["long", "ago"]
    assert "ending in a follow-up" in plan.triggers["lexical"] and "excerpt's turns" in plan.triggers["lexical"]
    # a follow-up without a content word still reads the turns before it
    bare = Planner().plan(
        analyse_query(EXCERPT.rsplit("\n", 1)[0] + "\nSam: When was that?", NOW), preset("default"), []
    )
    assert bare.fusion.weights["lexical"] == 0.4 * 0.25 and "walk" in bare.terms and bare.focus_query == ""
    # presets without the rule read a follow-up as any excerpt
    plain = Planner().plan(analyse_query(EXCERPT, NOW), replace(preset("multi"), follow_up_lexical=None,
                           follow_up_terms="last", follow_up_dense=None), entities=[])  # fmt: skip
    assert plain.terms == ["settling", "better", "long", "ago"] and plain.focus_query == shape.last_turn


def test_recency_halves_each_half_life_and_counts_the_future_as_now() -> None:
    now = datetime(2024, 5, 1, 12, tzinfo=UTC)
    facts = {
        "now": CandidateFacts(now, 0.5),
        "one": CandidateFacts(now - timedelta(days=30), 0.5),
        "two": CandidateFacts(now - timedelta(days=60), 0.5),
        "later": CandidateFacts(now + timedelta(days=3), 0.5),
    }
    got = recencies(facts, now, 30.0)
    assert list(got) == list(facts)
    assert got["now"] == 1.0 and got["later"] == 1.0
    assert abs(got["one"] - 0.5) < 1e-12 and abs(got["two"] - 0.25) < 1e-12
    assert recencies({}, now, 30.0) == {}


def test_the_default_preset_walks_the_graph_for_a_dialogue_excerpt_only() -> None:
    plan = Planner().plan(analyse_query(EXCERPT, NOW), preset("default"), entities=["priya"])
    assert plan.fusion.weights["graph"] == 0.1 and "graph" in plan.dimensions
    assert "dialogue excerpt of 3 turns" in plan.triggers["graph"]
    short = Planner().plan(analyse_query("Where did Priya get her dog?", NOW), preset("default"), entities=["priya"])
    assert "graph" not in short.fusion.weights and "graph" not in short.triggers
    # a preset that has the graph keeps its own weight and says nothing about the excerpt
    own = Planner().plan(analyse_query(EXCERPT, NOW), preset("multi-graph"), entities=["priya"])
    assert own.fusion.weights["graph"] == 0.1 and "excerpt" not in own.triggers["graph"]


def test_an_excerpt_names_a_speaker_by_another_of_their_names() -> None:
    """ "Anna, is it far?" names the speaker "Anna Lee" through her alias: she starts the walk; Sam, only a label,
    does not."""
    with Memory(":memory:", embedder="hash") as memory:
        memory.add(
            [
                Message(role="user", name="Maya", content="My friend Anna Lee moved to Denver."),
                Message(role="user", name="Maya", content="Sam and I went hiking on Saturday."),
            ],
            user_id="u",
        )
        excerpt = (
            "Anna Lee: I love the new flat.\nSam: Anna, is it far from the office?\nAnna Lee: Not really, ten minutes."
        )
        plan = memory._retriever.plan(excerpt, "u", preset("multi-graph"), NOW)
        assert {"anna lee", "sam"} <= set(plan.entities)
        assert "anna lee" in plan.spoken_of and "sam" not in plan.spoken_of
