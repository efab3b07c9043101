"""The offline injection classifier: logistic regression over hashed word and character n-grams, numpy only.

The weights ship in the package (``security/data/injection_model.npz``, written by
``memlane bench injection --train``); nothing is downloaded. A long text is scored whole and in windows of a few
sentences, and its score is the highest of them, so one injected sentence inside a long e-mail or table is not
drowned by the benign text around it.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from memlane.errors import ConfigError
from memlane.security.features import BITS as BITS
from memlane.security.features import FeatureRuns, feature_runs
from memlane.security.features import feature_ids as feature_ids
from memlane.security.features import feature_sets as feature_sets
from memlane.security.obfuscation import Unmasked, unmask

WINDOW_CHARS: Final = 400
MAX_WINDOWS: Final = 64
MODEL_FILE: Final = "injection_model.npz"
_BREAK: Final = re.compile(r"(?<=[.!?\n|])\s+")
# ``_BREAK`` with the break kept in a group: ``re`` skips ahead on its first character instead of trying the
# look-behind everywhere. The leftmost break followed by whitespace is where ``_BREAK`` finds its leftmost match,
# and both take the whole run of whitespace after it, so ``_parts`` splits exactly where ``_BREAK.split`` does.
_BREAK_KEPT: Final = re.compile(r"([.!?\n|])\s+")


def _parts(text: str) -> list[str]:
    """``_BREAK.split(text)``: each piece with the break that ends it."""
    pieces = _BREAK_KEPT.split(text)
    out = [pieces[i] + pieces[i + 1] for i in range(0, len(pieces) - 1, 2)]
    out.append(pieces[-1])
    return out


def windows(text: str, size: int = WINDOW_CHARS, limit: int = MAX_WINDOWS) -> list[str]:
    """``text`` cut at sentence, line and table-cell ends into pieces of about ``size`` characters (one piece when
    it is short); at most ``limit`` pieces, the rest joined into the last.
    """
    if len(text) <= size:
        return [text]
    out: list[str] = []
    current = ""
    for part in _parts(text):
        if current and len(current) + len(part) > size:
            out.append(current)
            current = ""
        current = f"{current} {part}" if current else part
        while len(current) > 2 * size:
            out.append(current[:size])
            current = current[size:]
    if current:
        out.append(current)
    if len(out) > limit:
        out = [*out[: limit - 1], " ".join(out[limit - 1 :])]
    return out


def views(text: str) -> Iterator[str]:
    """What the classifier scores of one (unmasked) text: the whole, then its windows when there are several."""
    yield text
    parts = windows(text)
    if len(parts) > 1:
        yield from parts


@dataclass(frozen=True)
class ClassifierModel:
    """Weights of the logistic regression over hashed features, its bias, and the decision threshold."""

    weights: npt.NDArray[np.float32]
    bias: float
    threshold: float
    bits: int
    info: str = ""

    def logit(self, text: str) -> float:
        """The raw score of one view (features are binary, L2-normalised)."""
        return self._logits(feature_runs([text], self.bits))[0]

    def _logits(self, runs: FeatureRuns) -> list[float]:
        """The logit of each text of ``runs``: the float32 sum of its features' weights (in id order, on which the
        sum depends) over the square root of their number, plus the bias.
        """
        weights = self.weights[runs.ids]  # one gather for the batch; each text reads its slice
        bounds = runs.bounds.tolist()
        bias = self.bias
        total = np.add.reduce  # ``ndarray.sum`` without its Python wrapper: the same pairwise float32 sum
        return [
            float(total(weights[lo:hi])) / math.sqrt(hi - lo) + bias if hi > lo else bias
            for lo, hi in itertools.pairwise(bounds)
        ]

    def probability(self, text: str) -> float:
        """The injection probability of ``text``: the highest over its views, after unmasking."""
        return self.probability_of(unmask(text))

    def probability_of(self, unmasked: Unmasked) -> float:
        """``probability`` of a text already unmasked."""
        return self.probabilities_of([unmasked])[0]

    def probabilities_of(self, texts: Sequence[Unmasked]) -> list[float]:
        """``probability_of`` of each text, their views and payloads featurised together."""
        return [float(1.0 / (1.0 + np.exp(-b))) for b in self.logits_of(texts)]

    def logits_of(self, texts: Sequence[Unmasked]) -> list[float]:
        """The highest logit over the views and payloads of each text, all featurised together."""
        owner: list[int] = []
        views_of: list[str] = []
        for i, unmasked in enumerate(texts):
            for view in (*views(unmasked.text), *unmasked.payloads):
                owner.append(i)
                views_of.append(view)
        best = [-math.inf] * len(texts)
        for i, logit in zip(owner, self._logits(feature_runs(views_of, self.bits)), strict=True):
            best[i] = max(best[i], logit)
        return best

    def save(self, path: Path) -> None:
        """Write the model as a compressed ``.npz`` (weights as float16: the file stays small)."""
        meta = json.dumps({"bias": self.bias, "threshold": self.threshold, "bits": self.bits, "info": self.info})
        with path.open("wb") as fh:
            np.savez_compressed(fh, weights=self.weights.astype(np.float16), meta=np.array(meta))

    @classmethod
    def load(cls, path: Path | None = None) -> ClassifierModel:
        """The model at ``path``, or the one shipped in the package."""
        try:
            if path is None:
                with resources.as_file(resources.files("memlane.security") / "data" / MODEL_FILE) as shipped:
                    return cls._read(shipped)
            return cls._read(path)
        except (OSError, KeyError, ValueError) as exc:
            raise ConfigError(f"cannot load the injection classifier: {exc}") from exc

    @classmethod
    def _read(cls, path: Path) -> ClassifierModel:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            weights = data["weights"].astype(np.float32)
        bits = int(meta["bits"])
        if weights.shape != (1 << bits,):
            raise ValueError(f"{path.name} holds {weights.shape} weights, expected {1 << bits}")
        return cls(weights, float(meta["bias"]), float(meta["threshold"]), bits, str(meta.get("info", "")))


def probabilities(model: ClassifierModel, texts: Sequence[str]) -> list[float]:
    """``model.probability`` of each text."""
    return [model.probability(t) for t in texts]
