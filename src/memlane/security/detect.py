"""Prompt-injection detection on stored text: the ``Detector`` protocol, its verdict, the rules and classifier
detectors, and the default that combines them (with an LLM judge when one is configured).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memlane.errors import ConfigError
from memlane.security.classifier import ClassifierModel
from memlane.security.head import DetectorHead, stack_one
from memlane.security.obfuscation import Unmasked, unmask
from memlane.security.rules import scan_rules

log = logging.getLogger(__name__)

# Evidence the hiding tricks themselves give (an ordinary message has no invisible characters or mixed scripts).
TRICK_WEIGHTS: Final = {
    "invisible_characters": 0.3,
    "tag_characters": 0.6,
    "homoglyphs": 0.4,
    "spaced_letters": 0.1,
    "compatibility_letters": 0.1,
}


@dataclass(frozen=True)
class Verdict:
    """What a detector says of one text: a score in [0, 1], whether it is flagged, and why."""

    score: float
    flagged: bool
    reasons: tuple[str, ...] = ()
    detector: str = ""


@runtime_checkable
class Detector(Protocol):
    """Scores texts for prompt injection; one verdict per text, in order."""

    @property
    def name(self) -> str:
        """A short name recorded with each flag (e.g. ``rules+classifier``)."""
        ...

    def scan(self, texts: Sequence[str]) -> list[Verdict]:
        """A verdict for each text."""
        ...


def _noisy_or(weights: Sequence[float]) -> float:
    rest = 1.0
    for w in weights:
        rest *= 1.0 - min(max(w, 0.0), 1.0)
    return 1.0 - rest


class RulesDetector:
    """The pattern rules alone: flags when the evidence of the matching rules and tricks reaches ``threshold``."""

    def __init__(self, threshold: float = 0.9) -> None:
        self.threshold = threshold

    @property
    def name(self) -> str:
        return "rules"

    def evidence(self, text: str) -> tuple[float, list[str]]:
        """The combined weight of the rules and tricks found in ``text``, and their names."""
        return self.evidence_of(unmask(text))

    def evidence_of(self, unmasked: Unmasked) -> tuple[float, list[str]]:
        """``evidence`` of a text already unmasked."""
        matches = scan_rules(unmasked)
        if not matches and not unmasked.tricks:  # most text: no evidence (``_noisy_or(())`` is exactly 0.0)
            return 0.0, []
        reasons = [m.name for m in matches] + [f"trick:{t}" for t in unmasked.tricks]
        strongest: dict[str, float] = {}  # a family's rules are readings of one sign: it counts once
        for m in matches:
            strongest[m.group] = max(strongest.get(m.group, 0.0), m.weight)
        weights = [*strongest.values()] + [TRICK_WEIGHTS.get(t, 0.0) for t in unmasked.tricks]
        return _noisy_or(weights), reasons

    def scan(self, texts: Sequence[str]) -> list[Verdict]:
        out = []
        for text in texts:
            score, reasons = self.evidence(text)
            out.append(Verdict(round(score, 4), score >= self.threshold, tuple(reasons), self.name))
        return out


class CombinedDetector:
    """Rules, the offline n-gram classifier and (given the text's embedding) the embedding head.

    With the shipped ``DetectorHead`` the score is the noisy-or of the rules' evidence and the stacker's probability
    over the classifier's logit, the text's window count and, when the vectors come from the embedder the head was
    fitted for, the head's logit; each path has its own threshold, chosen on leave-one-source-out scores. A custom
    ``model`` without a ``head`` keeps the plain combination: the noisy-or of the rules and the classifier's
    probability, at the model's threshold. ``threshold`` (``Config.injection_threshold``) overrides both paths.
    """

    def __init__(
        self, model: ClassifierModel | None = None, threshold: float | None = None, head: DetectorHead | None = None
    ) -> None:
        self.head = head if head is not None or model is not None else DetectorHead.load()
        self.model = model or ClassifierModel.load()
        self._override = threshold
        self.threshold = threshold if threshold is not None else self._plain_threshold()
        if not 0.0 < self.threshold <= 1.0:
            raise ConfigError(f"the injection threshold must be within (0, 1], got {self.threshold}")
        self._rules = RulesDetector()

    def _plain_threshold(self) -> float:
        return self.head.plain_threshold if self.head is not None else self.model.threshold

    @property
    def name(self) -> str:
        return "rules+classifier"

    def reads_vectors(self, identity: str | None, dim: int | None = None) -> bool:
        """Whether vectors of the embedder ``identity`` sharpen the verdict (the head was fitted on them)."""
        return self.head is not None and self.head.reads(identity, dim)

    def score(self, text: str) -> tuple[float, list[str]]:
        """The combined score of one text and its reasons (without an embedding)."""
        return self.scores([text])[0]

    def scores(
        self, texts: Sequence[str], vectors: npt.NDArray[np.float32] | None = None
    ) -> list[tuple[float, list[str]]]:
        """``score`` of each text; the classifier reads them all at once; ``vectors`` (one row per text, from the
        embedder the head was fitted for) add the head.
        """
        unmasked = [unmask(text) for text in texts]  # once, for the rules and the classifier alike
        logits = self.model.logits_of(unmasked)
        heads: list[float | None] = [None] * len(texts)
        if vectors is not None and self.head is not None:
            heads = [float(h) for h in self.head.head.logits(vectors)]
        out = []
        for text, u, logit, head in zip(texts, unmasked, logits, heads, strict=True):
            evidence, reasons = self._rules.evidence_of(u)
            if self.head is None:
                p = 1.0 / (1.0 + math.exp(-logit))
                if p >= 0.5:
                    reasons.append(f"classifier:{p:.2f}")
            else:
                stacker = self.head.plain_stacker if head is None else self.head.stacker
                z = float(np.dot(stacker.coef, stack_one(logit, head, len(text)))) + stacker.bias
                p = 1.0 / (1.0 + math.exp(-min(max(z, -50.0), 50.0)))
                if p >= 0.5:
                    reasons.append(f"classifier:{p:.2f}" if head is None else f"classifier+embedding:{p:.2f}")
            out.append((_noisy_or([evidence, p]), reasons))
        return out

    def scan(self, texts: Sequence[str]) -> list[Verdict]:
        return self.scan_embedded(texts, None)

    def scan_embedded(self, texts: Sequence[str], vectors: npt.NDArray[np.float32] | None) -> list[Verdict]:
        """``scan`` with each text's embedding (``None``: without); only pass vectors ``reads_vectors`` accepts."""
        threshold = self.threshold
        if vectors is not None and self.head is not None and self._override is None:
            threshold = self.head.threshold
        return [
            Verdict(round(s, 4), s >= threshold, tuple(reasons), self.name)
            for s, reasons in self.scores(texts, vectors)
        ]


class LayeredDetector:
    """A fast detector first; texts it scores at or above ``escalate`` but does not flag go to a slower judge."""

    def __init__(self, fast: Detector, judge: Detector, escalate: float = 0.2) -> None:
        self.fast, self.judge, self.escalate = fast, judge, escalate

    @property
    def name(self) -> str:
        return f"{self.fast.name}+{self.judge.name}"

    def reads_vectors(self, identity: str | None, dim: int | None = None) -> bool:
        """Whether the fast detector reads vectors of the embedder ``identity``."""
        return isinstance(self.fast, CombinedDetector) and self.fast.reads_vectors(identity, dim)

    def scan(self, texts: Sequence[str]) -> list[Verdict]:
        return self.scan_embedded(texts, None)

    def scan_embedded(self, texts: Sequence[str], vectors: npt.NDArray[np.float32] | None) -> list[Verdict]:
        """``scan`` with each text's embedding for the fast detector (see ``CombinedDetector.scan_embedded``)."""
        if vectors is not None and isinstance(self.fast, CombinedDetector):
            verdicts = self.fast.scan_embedded(texts, vectors)
        else:
            verdicts = self.fast.scan(texts)
        doubtful = [i for i, v in enumerate(verdicts) if not v.flagged and v.score >= self.escalate]
        if doubtful:
            judged = self.judge.scan([texts[i] for i in doubtful])
            for i, j in zip(doubtful, judged, strict=True):
                fast = verdicts[i]
                verdicts[i] = Verdict(
                    max(fast.score, j.score),
                    j.flagged,
                    (*fast.reasons, *j.reasons),
                    self.name if j.flagged else fast.detector,
                )
        return verdicts
