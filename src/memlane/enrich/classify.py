"""Labelling memories with a topic category and an intent: nearest label prototypes in embedding space, plus rules."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memlane.embedding.base import Embedder, Vectors
from memlane.enrich.cues import ascii_words, cue_words, may_hold

log = logging.getLogger(__name__)

Scored = list[tuple[str, float]]

#: Topic labels, each with prototype sentences that the label's centroid is computed from.
CATEGORIES: Final[Mapping[str, tuple[str, ...]]] = {
    "work": (
        "I had a long meeting with my boss at the office today.",
        "I got promoted at my job and my salary went up.",
        "My coworkers and I are finishing a big project before the deadline.",
        "I'm thinking about changing careers and applying for new jobs.",
        "The client presentation at work went well.",
    ),
    "family": (
        "My kids and I spent the weekend with my parents.",
        "My sister just had a baby, so I'm an aunt now.",
        "We had a big family dinner with my grandparents and cousins.",
        "My son started school and my daughter is learning to walk.",
        "My husband and I are celebrating our anniversary with the children.",
    ),
    "health": (
        "I've been sick with the flu and went to see the doctor.",
        "I started going to the gym and running every morning to get fit.",
        "My therapist helps me manage anxiety and stress.",
        "I broke my leg and I'm recovering after surgery.",
        "I'm trying to sleep better and eat healthier.",
    ),
    "hobbies": (
        "I love painting landscapes on the weekend.",
        "I've been learning to play the guitar and writing songs.",
        "We went hiking and camping in the mountains.",
        "I finished reading a great novel and started knitting a scarf.",
        "I play video games and board games with friends.",
    ),
    "travel": (
        "We flew to Paris for a week-long vacation.",
        "I'm planning a road trip across the country this summer.",
        "Our hotel by the beach had an amazing view of the ocean.",
        "I visited Japan and explored Tokyo and Kyoto.",
        "My flight was delayed at the airport and I missed my connection.",
    ),
    "food": (
        "I baked chocolate chip cookies and a banana bread.",
        "We tried a new Italian restaurant and the pasta was delicious.",
        "I'm cooking a vegetarian curry for dinner tonight.",
        "My favorite breakfast is pancakes with maple syrup.",
        "I've been learning new recipes and trying different cuisines.",
    ),
    "finance": (
        "I'm saving money to buy a house and pay off my loans.",
        "I invested in stocks and my retirement fund grew.",
        "Our monthly budget is tight because rent went up.",
        "I paid off my credit card debt this year.",
        "Taxes are due and I need to sort out my bank account.",
    ),
    "education": (
        "I'm studying for my final exams at university.",
        "I enrolled in an online course to learn data science.",
        "My professor gave great feedback on my thesis.",
        "I graduated from college with a degree in psychology.",
        "I'm taking classes to get a teaching certificate.",
    ),
    "relationships": (
        "My boyfriend and I have been dating for two years.",
        "I went on a first date last night and it went well.",
        "My best friend and I had a falling out, but we made up.",
        "We got engaged and we're planning our wedding.",
        "I met some new friends at the community group and we hang out a lot.",
    ),
    "preferences": (
        "My favorite color is blue and I love jazz music.",
        "I prefer tea over coffee in the morning.",
        "I really enjoy science fiction movies and fantasy books.",
        "I can't stand horror films, I don't like them at all.",
        "I'm really into photography and vintage cameras.",
    ),
    "goals": (
        "My dream is to open my own bakery someday.",
        "I want to run a marathon by the end of next year.",
        "My goal is to become a counselor and help people.",
        "I hope to write and publish a book one day.",
        "I'm working toward learning Spanish fluently.",
    ),
    "technical": (
        "The server crashed with a connection reset error after the deploy.",
        "I fixed the bug in the Python script by updating the dependency.",
        "How do I configure the database and the API keys?",
        "My laptop keeps freezing after the software update.",
        "We migrated the code to a new framework and wrote unit tests.",
    ),
    "smalltalk": (
        "Hey! Good to see you, how have you been?",
        "Thanks so much, that means a lot!",
        "Wow, that's awesome, congrats!",
        "Bye, talk to you later, take care!",
        "Haha, totally, I know what you mean.",
    ),
}

#: Intent labels, each with prototype sentences; ``IntentClassifier`` adds cheap rules on top.
INTENTS: Final[Mapping[str, tuple[str, ...]]] = {
    "fact": (
        "I work as a nurse at the city hospital.",
        "My brother lives in Chicago with his wife.",
        "I went to the support group yesterday.",
        "We adopted a dog three years ago.",
        "I graduated from college in 2019.",
        "We just got back from a trip to the lake with the kids.",
        "I made pasta for dinner last night.",
        "My boss gave me a raise at work.",
        "I've been saving up for a new laptop.",
    ),
    "preference": (
        "I love hiking in the mountains.",
        "I prefer cats to dogs.",
        "I hate waking up early.",
        "My favorite food is sushi.",
        "I really enjoy listening to classical music.",
    ),
    "plan": (
        "I'm going to visit my parents next week.",
        "I plan to start a new job in the fall.",
        "We will move to a bigger apartment next month.",
        "I'm thinking of signing up for a pottery class soon.",
        "Next summer we're taking the kids to the beach.",
    ),
    "question": (
        "What did you do last weekend?",
        "How have you been lately?",
        "Where did you go on vacation?",
        "Do you have any pets?",
        "Why did you decide to change jobs?",
    ),
    "request": (
        "Can you remind me to call my mom tomorrow?",
        "Please send me the recipe.",
        "Could you recommend a good book?",
        "Help me plan a trip to Italy.",
        "Let me know if you have any tips.",
    ),
    "emotion": (
        "I'm so happy and grateful right now!",
        "I feel really sad and lonely lately.",
        "I'm stressed and anxious about everything.",
        "I'm so proud of myself!",
        "I was really angry and frustrated yesterday.",
    ),
}


@runtime_checkable
class Classifier(Protocol):
    """The seam for labelling texts (prototypes by default, an LLM later): labels with scores, best first."""

    @property
    def labels(self) -> tuple[str, ...]: ...

    def classify_texts(self, texts: Sequence[str]) -> list[Scored]:
        """For each text, every label with its score in [0, 1], best first."""
        ...


def _softmax_rows(scores: npt.NDArray[np.float32], temperature: float) -> npt.NDArray[np.float32]:
    shifted = (scores - scores.max(axis=1, keepdims=True)) / temperature
    weights = np.exp(shifted)
    result: npt.NDArray[np.float32] = (weights / weights.sum(axis=1, keepdims=True)).astype(np.float32)
    return result


class PrototypeClassifier:
    """Nearest label prototypes: each label is the unit centroid of its prototype sentences' embeddings.

    Scores are a softmax over the cosine similarities to the centroids (``temperature`` sets how peaked). The
    prototypes are embedded once, on first use, with the same embedder the memories are embedded with, so that
    ``classify`` works on vectors already computed at ingest.
    """

    def __init__(
        self, embedder: Embedder, labels: Mapping[str, Sequence[str]] = CATEGORIES, *, temperature: float = 0.05
    ) -> None:
        if not labels or any(not examples for examples in labels.values()):
            raise ValueError("every label needs at least one prototype sentence")
        if temperature <= 0:
            raise ValueError("temperature must be positive")
        self._embedder = embedder
        self._examples = {label: tuple(examples) for label, examples in labels.items()}
        self._labels = tuple(self._examples)
        self._temperature = temperature
        self._centroids: Vectors | None = None

    def __repr__(self) -> str:
        return f"PrototypeClassifier(labels={list(self._labels)!r})"

    @property
    def labels(self) -> tuple[str, ...]:
        return self._labels

    def _prototypes(self) -> Vectors:
        if self._centroids is None:
            rows = []
            for label in self._labels:
                vectors = self._embedder.embed(list(self._examples[label]))
                centroid = vectors.mean(axis=0)
                rows.append(centroid / max(float(np.linalg.norm(centroid)), 1e-12))
            self._centroids = np.asarray(rows, dtype=np.float32)
            log.debug("computed %d label prototypes", len(rows))
        return self._centroids

    def probabilities(self, vectors: Vectors) -> npt.NDArray[np.float32]:
        """An ``(n, len(labels))`` matrix of label scores (rows sum to 1), columns in ``labels`` order."""
        matrix = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if matrix.shape[0] == 0:
            return np.zeros((0, len(self._labels)), dtype=np.float32)
        return _softmax_rows(matrix @ self._prototypes().T, self._temperature)

    def _ranked(self, probabilities: npt.NDArray[np.float32]) -> list[Scored]:
        order = np.argsort(-probabilities, axis=1, kind="stable")
        return [
            [(self._labels[j], float(row[j])) for j in ranking]
            for row, ranking in zip(probabilities, order, strict=True)
        ]

    def classify(self, vectors: Vectors) -> list[Scored]:
        """For each (unit) vector, every label with its score, best first."""
        return self._ranked(self.probabilities(vectors))

    def _top(self, probabilities: npt.NDArray[np.float32]) -> list[tuple[str, float]]:
        if probabilities.shape[0] == 0:
            return []
        best = probabilities.argmax(axis=1)
        scores = probabilities[np.arange(probabilities.shape[0]), best]
        return [(self._labels[j], float(v)) for j, v in zip(best.tolist(), scores.tolist(), strict=True)]

    def best(self, vectors: Vectors) -> list[tuple[str, float]]:
        """For each (unit) vector, its best label and that label's score (what ``classify(...)[i][0]`` gives)."""
        return self._top(self.probabilities(vectors))

    def classify_texts(self, texts: Sequence[str]) -> list[Scored]:
        """Embed ``texts`` and classify them."""
        if not texts:
            return []
        return self.classify(self._embedder.embed(list(texts)))


_QUESTION_START: Final = re.compile(
    r"^\W*(?:who|whom|whose|what|when|where|which|why|how|is|are|am|was|were|do|does|did|have|has|had|can|could|"
    r"would|will|should|shall|may|might|isn't|aren't|don't|doesn't|didn't|haven't|won't|wouldn't)\b",
    re.IGNORECASE,
)
_REQUEST: Final = re.compile(
    r"\b(?:please|pls|can you|could you|would you|will you|would you mind|remind me|let me know|help me|tell me|"
    r"show me|send me|give me)\b|^\W*(?:recommend|suggest|find|make|write|explain|list)\b",
    re.IGNORECASE,
)
_PREFERENCE: Final = re.compile(
    r"\b(?:i|we)\s+(?:really\s+|absolutely\s+|just\s+|totally\s+)?(?:love|adore|like|prefer|enjoy|hate|dislike|"
    r"can't stand|cannot stand|am into|'m into|am a big fan of|'m a big fan of)\b|\bmy fav(?:ou?rite)?\b",
    re.IGNORECASE,
)
_PLAN: Final = re.compile(
    r"\b(?:i|we)\s*(?:am|'m|are|'re)\s+(?:going to|gonna|planning|about to|thinking (?:of|about))\b|"
    r"\b(?:i|we)\s*(?:will|'ll|plan to|plan on|intend to|want to|hope to)\b|\bmy plan\b|\bnext (?:week|month|year)\b",
    re.IGNORECASE,
)

# The three patterns above without IGNORECASE, for plain ASCII text lower-cased: their letters are all small and
# ASCII, so in ASCII text each matches exactly where its IGNORECASE form matches the original (lower-casing ASCII
# keeps every offset, word boundary and class), and a case-sensitive scan is about twice as fast.
_REQUEST_LOWER: Final = re.compile(_REQUEST.pattern)
_PREFERENCE_LOWER: Final = re.compile(_PREFERENCE.pattern)
_PLAN_LOWER: Final = re.compile(_PLAN.pattern)

_QUESTION_MARKS: Final = ("?", "؟", "？")  # Latin, Arabic, full-width (CJK)

# A request holds "please"/"pls", an asking verb with "you", a verb with "me", or opens with an imperative.
_ASKING: Final = cue_words("can could would will")
_FOR_ME: Final = cue_words("remind let help tell show send give")
_OPENING_REQUESTS: Final = cue_words("recommend suggest find make write explain list")
_FIRST_WORD: Final = re.compile(r"\w+")
# Words one of which every match of the pattern holds (see ``memlane.enrich.cues``): a preference's verb (after a
# space: "'m into" holds "m", "can't stand" "can") or "fav..."; a plan's verb, also glued to "i"/"we" where the
# pattern allows no space ("iwill"), or "plan", "next".
_PREFERENCE_CUES: Final = cue_words("love adore like prefer enjoy hate dislike can cannot am m fav favorite favourite")
_PLAN_CUES: Final = cue_words("going gonna planning about thinking ll plan next") | {
    f"{who}{verb}" for who in ("", "i", "we") for verb in ("will", "plan", "intend", "want", "hope")
}


def _may_request(text: str) -> bool:
    """False only when ``_REQUEST`` cannot match plain ASCII ``text`` (see ``memlane.enrich.cues``)."""
    words = ascii_words(text)
    if words is None or "please" in words or "pls" in words:
        return True
    if ("you" in words and not _ASKING.isdisjoint(words)) or ("me" in words and not _FOR_ME.isdisjoint(words)):
        return True
    first = _FIRST_WORD.search(text)  # "^\W*(?:recommend|...)\b": the first word is the imperative
    return first is not None and first.group().lower() in _OPENING_REQUESTS


def rule_intent(text: str) -> str | None:
    """The intent cheap rules can see: question, request, preference or plan; None when no rule fires.

    A question mark (also Arabic or full-width) near the end, or an English wh-/auxiliary start, is a question
    unless it is a request ("can you ...?").
    """
    stripped = text.strip()
    if not stripped:
        return None
    lower = stripped.lower() if stripped.isascii() else None
    if _may_request(stripped) and _found(_REQUEST, _REQUEST_LOWER, stripped, lower):
        return "request"
    if any(mark in stripped[-3:] for mark in _QUESTION_MARKS) or _QUESTION_START.match(stripped):
        return "question"
    if may_hold(stripped, _PREFERENCE_CUES) and _found(_PREFERENCE, _PREFERENCE_LOWER, stripped, lower):
        return "preference"
    if may_hold(stripped, _PLAN_CUES) and _found(_PLAN, _PLAN_LOWER, stripped, lower):
        return "plan"
    return None


def _found(pattern: re.Pattern[str], lowered: re.Pattern[str], text: str, lower: str | None) -> bool:
    """Whether ``pattern`` (IGNORECASE) matches ``text``; ``lower`` is ``text`` lower-cased when it is plain ASCII,
    where ``lowered`` (the same pattern, case-sensitive) finds the same.
    """
    return (pattern.search(text) if lower is None else lowered.search(lower)) is not None


class IntentClassifier:
    """Intent from rules and prototypes: a firing rule takes half the probability mass, the prototypes the rest.

    With ``rule_weight=0.5`` a rule's label always comes first; the prototypes order the others and decide alone
    when no rule fires (statements of fact, emotions). The ``rule_gated`` labels (question, request) are left to
    the rules: when no rule fires their prototype scores are zeroed, since the prototypes confuse short
    statements with questions.
    """

    def __init__(
        self,
        embedder: Embedder,
        labels: Mapping[str, Sequence[str]] = INTENTS,
        *,
        rule_weight: float = 0.5,
        rule_gated: Sequence[str] = ("question", "request"),
        temperature: float = 0.05,
    ) -> None:
        if not 0.0 <= rule_weight <= 1.0:
            raise ValueError("rule_weight must be within [0, 1]")
        self._prototypes = PrototypeClassifier(embedder, labels, temperature=temperature)
        self._embedder = embedder
        self._rule_weight = rule_weight
        names = self._prototypes.labels
        self._gated = [names.index(label) for label in rule_gated if label in names]
        if len(self._gated) == len(names):
            raise ValueError("at least one label must be left to the prototypes")

    @property
    def labels(self) -> tuple[str, ...]:
        return self._prototypes.labels

    def classify(self, vectors: Vectors, texts: Sequence[str]) -> list[Scored]:
        """Intents for memories whose vectors were already computed, with their texts for the rules."""
        return self._prototypes._ranked(self._probabilities(vectors, texts))

    def best(self, vectors: Vectors, texts: Sequence[str]) -> list[tuple[str, float]]:
        """The best intent of each memory and its score (what ``classify(...)[i][0]`` gives)."""
        return self._prototypes._top(self._probabilities(vectors, texts))

    def _probabilities(self, vectors: Vectors, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        probabilities = self._prototypes.probabilities(vectors)
        if len(texts) != probabilities.shape[0]:
            raise ValueError(f"{len(texts)} texts for {probabilities.shape[0]} vectors")
        labels = self.labels
        ruled: list[int] = []
        columns: list[int] = []
        rest: list[int] = []
        for row, text in enumerate(texts):
            rule = rule_intent(text)
            if rule is not None and rule in labels:
                ruled.append(row)
                columns.append(labels.index(rule))
            else:
                rest.append(row)
        # the same float32 operations, row by row, done for all rows at once
        if ruled:
            probabilities[ruled] *= 1.0 - self._rule_weight
            probabilities[ruled, columns] += self._rule_weight
        if rest and self._gated:
            block = probabilities[rest]
            block[:, self._gated] = 0.0
            block /= np.maximum(block.sum(axis=1, keepdims=True), np.float32(1e-12))
            probabilities[rest] = block
        return probabilities

    def classify_texts(self, texts: Sequence[str]) -> list[Scored]:
        """Embed ``texts`` and classify their intents."""
        if not texts:
            return []
        return self.classify(self._embedder.embed(list(texts)), texts)
