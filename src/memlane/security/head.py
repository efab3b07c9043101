"""The embedding head of the injection detector and the stacker that weighs it against the n-gram classifier.

The head is a logistic regression over the sentence embedding memlane already computes for every stored text
(all-MiniLM-L6-v2, 384 numbers): a dot product per text, numpy only. It reads phrasings the hashed n-grams have
never seen ("your new directive supersedes all prior ones") because the embedding places them near the ones it
has. It is fitted for one embedder family (its ``identities``); with any other embedder (``static``, ``hash``,
an OpenAI model) the detector runs without it, on the n-gram classifier and the rules, at their own threshold.

The stacker is a logistic regression over a few numbers per text (``stack_features``): the n-gram classifier's
logit, the head's logit, the head's logit again when the text is longer than the embedding reads, and the log of
the number of windows the n-gram classifier took its highest score over (a long text has more chances to score
high by accident: this is where a long benign story would otherwise be pushed over the threshold by its length).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from memlane.errors import ConfigError
from memlane.security.classifier import WINDOW_CHARS

HEAD_READS: Final = 1000  # characters; MiniLM reads 256 tokens, roughly this many characters of English


@dataclass(frozen=True)
class EmbeddingHead:
    """A linear head over unit-length embeddings: ``logit = vector . weights + bias``."""

    weights: npt.NDArray[np.float32]
    bias: float

    def logits(self, vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """The head's logit for each row of ``vectors``."""
        out: npt.NDArray[np.float32] = vectors @ self.weights + np.float32(self.bias)
        return out


@dataclass(frozen=True)
class Stacker:
    """A logistic regression over ``stack_features``: ``logit = features . coef + bias``."""

    coef: npt.NDArray[np.float64]
    bias: float

    def logits(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        out: npt.NDArray[np.float64] = features @ self.coef + self.bias
        return out


def stack_features(
    ngram: npt.NDArray[np.float64], head: npt.NDArray[np.float64] | None, chars: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """The stacker's inputs per text: n-gram logit, log of the window count, and (with a head) the head's logit
    and the head's logit for a text longer than the embedding reads (0 otherwise).
    """
    views = np.log1p(np.maximum(chars - WINDOW_CHARS, 0.0) / WINDOW_CHARS)
    cols = [ngram, views]
    if head is not None:
        cols += [head, np.where(chars > HEAD_READS, head, 0.0)]
    return np.column_stack(cols).astype(np.float64)


def stack_one(ngram: float, head: float | None, chars: int) -> list[float]:
    """``stack_features`` of one text, in plain floats (the hot path at ingest)."""
    views = math.log1p(max(chars - WINDOW_CHARS, 0) / WINDOW_CHARS)
    if head is None:
        return [ngram, views]
    return [ngram, views, head, head if chars > HEAD_READS else 0.0]


HEAD_FILE: Final = "injection_head.npz"


@dataclass(frozen=True)
class DetectorHead:
    """What the combined detector adds to the n-gram classifier: the embedding head and the stacker and threshold
    to use with it (for an embedder among ``identities``), and the stacker and threshold to use without it.
    """

    head: EmbeddingHead
    stacker: Stacker
    threshold: float
    plain_stacker: Stacker
    plain_threshold: float
    identities: tuple[str, ...]

    def reads(self, identity: str | None, dim: int | None = None) -> bool:
        """Whether the head was fitted on vectors of the embedder ``identity`` (and of dimension ``dim``)."""
        return identity in self.identities and (dim is None or dim == self.head.weights.size)

    def save(self, path: Path) -> None:
        meta = json.dumps(
            {
                "head_bias": self.head.bias,
                "stacker_bias": self.stacker.bias,
                "threshold": self.threshold,
                "plain_bias": self.plain_stacker.bias,
                "plain_threshold": self.plain_threshold,
                "identities": list(self.identities),
            }
        )
        with path.open("wb") as fh:
            np.savez_compressed(
                fh,
                head=self.head.weights.astype(np.float32),
                stacker=self.stacker.coef.astype(np.float64),
                plain=self.plain_stacker.coef.astype(np.float64),
                meta=np.array(meta),
            )

    @classmethod
    def load(cls, path: Path | None = None) -> DetectorHead:
        """The head at ``path``, or the one shipped in the package."""
        try:
            if path is None:
                with resources.as_file(resources.files("memlane.security") / "data" / HEAD_FILE) as shipped:
                    return cls._read(shipped)
            return cls._read(path)
        except (OSError, KeyError, ValueError, TypeError) as exc:
            raise ConfigError(f"cannot load the injection detector's embedding head: {exc}") from exc

    @classmethod
    def _read(cls, path: Path) -> DetectorHead:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            head = data["head"].astype(np.float32)
            stacker = data["stacker"].astype(np.float64)
            plain = data["plain"].astype(np.float64)
        if head.ndim != 1 or stacker.shape != (4,) or plain.shape != (2,):
            raise ValueError(f"{path.name} holds arrays of unexpected shapes")
        return cls(
            EmbeddingHead(head, float(meta["head_bias"])),
            Stacker(stacker, float(meta["stacker_bias"])),
            float(meta["threshold"]),
            Stacker(plain, float(meta["plain_bias"])),
            float(meta["plain_threshold"]),
            tuple(str(i) for i in meta["identities"]),
        )
