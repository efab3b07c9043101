"""Category and intent classifiers: mechanics with a counting fake embedder, and the intent rules.

Whether the prototypes label real turns well is a quality claim for a benchmark with the real model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from memlane.embedding.base import Vectors
from memlane.embedding.fake import HashEmbedder
from memlane.enrich.classify import (
    CATEGORIES,
    INTENTS,
    Classifier,
    IntentClassifier,
    PrototypeClassifier,
    rule_intent,
)


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(dim=256)
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        return super().embed(texts)


TOY = {"pets": ("dog cat puppy", "my dog and my cat"), "food": ("pasta pizza bread", "cooking pasta dinner")}


def test_label_sets_have_prototypes() -> None:
    assert {"work", "family", "health", "hobbies", "travel", "food", "finance", "education"} <= set(CATEGORIES)
    assert {"relationships", "preferences", "goals", "technical"} <= set(CATEGORIES)
    assert set(INTENTS) == {"fact", "preference", "plan", "question", "request", "emotion"}
    assert all(len(examples) >= 3 for examples in [*CATEGORIES.values(), *INTENTS.values()])


def test_prototypes_are_embedded_once_lazily() -> None:
    embedder = CountingEmbedder()
    classifier = PrototypeClassifier(embedder, TOY)
    assert embedder.calls == 0
    vectors = embedder.embed(["my puppy", "pizza for dinner"])
    classifier.classify(vectors)
    classifier.classify(vectors)
    assert embedder.calls == 1 + len(TOY)


def test_classify_ranks_every_label_best_first() -> None:
    classifier = PrototypeClassifier(HashEmbedder(dim=256), TOY)
    ranked = classifier.classify_texts(["my dog", "pasta dinner"])
    assert [r[0][0] for r in ranked] == ["pets", "food"]
    for row in ranked:
        scores = [score for _, score in row]
        assert scores == sorted(scores, reverse=True)
        assert sum(scores) == pytest.approx(1.0, abs=1e-5)
        assert {label for label, _ in row} == set(TOY)


def test_empty_inputs() -> None:
    classifier = PrototypeClassifier(HashEmbedder(), TOY)
    assert classifier.classify_texts([]) == []
    assert classifier.classify(np.zeros((0, 64), dtype=np.float32)) == []


def test_invalid_configuration() -> None:
    with pytest.raises(ValueError):
        PrototypeClassifier(HashEmbedder(), {})
    with pytest.raises(ValueError):
        PrototypeClassifier(HashEmbedder(), {"a": ()})
    with pytest.raises(ValueError):
        IntentClassifier(HashEmbedder(), rule_weight=2.0)


def test_both_classifiers_fit_the_seam() -> None:
    assert isinstance(PrototypeClassifier(HashEmbedder(), TOY), Classifier)
    assert isinstance(IntentClassifier(HashEmbedder()), Classifier)


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("Where did you go on vacation?", "question"),
        ("how was the concert", "question"),
        ("Did you like it", "question"),
        ("Can you remind me to call mom?", "request"),
        ("Please send me the recipe.", "request"),
        ("I love hiking in the mountains.", "preference"),
        ("I really prefer tea to coffee.", "preference"),
        ("My favorite band is Queen.", "preference"),
        ("I'm going to visit Paris next week.", "plan"),
        ("We plan to move in the fall.", "plan"),
        ("I'll start the course soon.", "plan"),
        ("I went to the support group yesterday.", None),
        ("", None),
        ("今天天气很好 😀", None),
        ("Ich gehe morgen ins Kino.", None),
        ("هل ذهبت إلى القاهرة؟", "question"),
        ("你昨天去哪儿了？", "question"),
    ],
)
def test_rule_intent(text: str, intent: str | None) -> None:
    assert rule_intent(text) == intent


def test_a_firing_rule_comes_first_and_the_prototypes_order_the_rest() -> None:
    classifier = IntentClassifier(HashEmbedder(dim=256))
    texts = ["Please send me the recipe.", "What did you do last weekend?", "I went to the support group yesterday."]
    ranked = classifier.classify_texts(texts)
    assert ranked[0][0][0] == "request"
    assert ranked[1][0][0] == "question"
    assert ranked[0][0][1] >= 0.5
    for row in ranked:
        assert sum(score for _, score in row) == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ValueError):
        classifier.classify(HashEmbedder(dim=256).embed(texts), texts[:1])


@pytest.mark.parametrize("text", ["我昨天去了北京。", "ذهبت إلى القاهرة أمس", "🎉🎂😀", "Schönes Wochenende!"])
def test_non_english_and_emoji_do_not_crash(text: str) -> None:
    assert len(PrototypeClassifier(HashEmbedder(), CATEGORIES).classify_texts([text])[0]) == len(CATEGORIES)
    assert len(IntentClassifier(HashEmbedder()).classify_texts([text])[0]) == len(INTENTS)


def test_question_and_request_are_left_to_the_rules() -> None:
    classifier = IntentClassifier(HashEmbedder(dim=256))
    ranked = classifier.classify_texts(["what did you do last weekend", "I made pasta for dinner."])
    assert ranked[0][0][0] == "question"
    scores = dict(ranked[1])
    assert scores["question"] == 0.0
    assert scores["request"] == 0.0
    assert sum(scores.values()) == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ValueError):
        IntentClassifier(HashEmbedder(), {"question": ("why?",)}, rule_gated=("question",))
