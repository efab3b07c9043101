"""``StaticEmbedder``: one vector per vocabulary token, distilled once from MiniLM; a text is the mean of its tokens.

The distillation is model2vec's recipe, done with memlane's own MiniLM runtime (no torch, no model2vec): every
vocabulary token is embedded alone (``[CLS] token [SEP]``, mean pooled), optionally reduced by PCA, and weighted by
SIF over a Zipf estimate of its frequency (token ids of a BERT vocabulary are roughly in frequency order).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from memlane.embedding._common import MINILM_DIM, MINILM_NAME, default_cache_dir, int8_identity
from memlane.embedding._minilm_runtime import Tokenizer
from memlane.embedding.base import Vectors
from memlane.embedding.minilm import MiniLMEmbedder
from memlane.errors import ConfigError, EmbeddingError, MemlaneError

F32 = npt.NDArray[np.float32]

log = logging.getLogger(__name__)

MAX_TOKENS = 512
FORMAT = 2  # 1 was model2vec's distillation through torch; bump when the recipe changes
DISTILL_BATCH = 512
_SKIPPED = re.compile(r"^\[(unused\d+|PAD|UNK|CLS|SEP|MASK)\]$")


@dataclass(frozen=True)
class StaticTable:
    """The distilled token vectors: row ``i`` belongs to token id ``i``; ``known[i]`` is false for skipped tokens."""

    vectors: npt.NDArray[np.float32]
    known: npt.NDArray[np.bool_]


def distill_table(model: MiniLMEmbedder, *, pca_dims: int | None, sif_coefficient: float) -> StaticTable:
    """Embed every vocabulary token through ``model`` and weight it: the static model's whole content."""
    tokenizer = model.tokenizer()
    vocab = tokenizer.vocab()
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    size = tokenizer.vocab_size
    kept = np.array(sorted(i for token, i in vocab.items() if not _SKIPPED.match(token)), dtype=np.int64)
    pooled = model.pooled([[cls, int(i), sep] for i in kept])
    pooled = np.nan_to_num(pooled)
    if pca_dims is not None:
        centred = pooled - pooled.mean(0)
        _, eigenvectors = np.linalg.eigh(centred.T @ centred / (len(centred) - 1))
        pooled = centred @ eigenvectors[:, ::-1][:, :pca_dims]
    inverse_rank = 1.0 / np.arange(2, len(kept) + 2)
    weights = sif_coefficient / (sif_coefficient + inverse_rank / inverse_rank.sum())
    vectors = np.zeros((size, pooled.shape[1]), dtype=np.float32)
    vectors[kept] = pooled * weights[:, None]
    known = np.zeros(size, dtype=bool)
    known[kept] = True
    return StaticTable(vectors=vectors, known=known)


def _token_sums(vectors: F32, flat: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]) -> F32:
    """Per text, the sum of its tokens' rows (``flat`` holds the texts' token ids one text after another).

    Added position by position over the texts still running (longest first): about as many numpy steps as the
    longest text has tokens, each over a few hundred rows, instead of ``np.add.reduceat`` over a gathered copy of
    every token's row (slow along axis 0: 3x the time on 500 turns). Each text's sum runs in token order, so a
    text's vector does not depend on the batch it came in.
    """
    n = len(lengths)
    out = np.zeros((n, vectors.shape[1]), dtype=np.float32)
    if not n or not int(lengths.max()):
        return out
    order = np.argsort(-lengths, kind="stable")
    longest_first = lengths[order]
    starts = (np.cumsum(lengths) - lengths)[order]
    running = int(np.count_nonzero(longest_first > 0))
    block = out[:running]
    block[:] = vectors[flat[starts[:running]]]
    for j in range(1, int(longest_first[0])):
        running = int(np.count_nonzero(longest_first > j))
        block[:running] += vectors[flat[starts[:running] + j]]
    result = np.empty_like(out)
    result[order] = out
    return result


class StaticEmbedder:
    """Token vectors of the int8 MiniLM: a text is the mean of its tokens' vectors. numpy-only at query time.

    The first use distils the table into ``cache_dir`` (seconds on two cores: 30k three-token inputs through
    onnxruntime); later loads read one ``.npy`` file. Much weaker than MiniLM on paraphrases, but word-overlap
    retrieval is strong, and embedding costs microseconds.

    ``pca_dims=None`` (default) keeps all 384 dimensions. ``sif_coefficient`` down-weights frequent tokens.
    """

    def __init__(
        self, cache_dir: Path | None = None, *, pca_dims: int | None = None, sif_coefficient: float = 1e-4
    ) -> None:
        if pca_dims is not None and not 2 <= pca_dims <= MINILM_DIM:
            raise ConfigError(f"pca_dims must be None or between 2 and {MINILM_DIM}, got {pca_dims}")
        if not 0 < sif_coefficient < 1:
            raise ConfigError(f"sif_coefficient must be in (0, 1), got {sif_coefficient}")
        self._cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self._pca_dims = pca_dims
        self._sif = sif_coefficient
        self._lock = threading.Lock()
        self._loaded: tuple[Tokenizer, StaticTable] | None = None

    def __repr__(self) -> str:
        return f"StaticEmbedder(pca_dims={self._pca_dims}, path={str(self.path)!r})"

    @property
    def _params(self) -> str:
        pca = f"pca{self._pca_dims}" if self._pca_dims is not None else "nopca"
        return f"{pca}-sif{self._sif:g}-v{FORMAT}"

    @property
    def identity(self) -> str:
        return f"static-distilled({int8_identity()})/{self._params}"

    @property
    def dim(self) -> int:
        return self._pca_dims if self._pca_dims is not None else MINILM_DIM

    @property
    def path(self) -> Path:
        """The distilled table (``.npy``: a row per token id, its vector then a 0/1 flag for tokens in use)."""
        return self._cache_dir / f"static-{MINILM_NAME}-int8-{self._params}.npy"

    def load(self) -> None:
        """Load (distilling first if needed) now instead of at the first embedding call."""
        self._model()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed documents: an ``(len(texts), dim)`` float32 array of unit rows."""
        texts = list(texts)
        for text in texts:
            if not isinstance(text, str):
                raise EmbeddingError(f"embed() takes strings, got {type(text).__name__}")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        tokenizer, table = self._model()
        encoded = tokenizer.encode(texts, special_tokens=False)
        if len(texts) == 1:  # a query: its tokens' rows added in token order, as ``_token_sums`` adds them
            ids = [t for t in encoded[0] if table.known[t]]
            lengths = np.array([len(ids)], dtype=np.int64)
            out = np.zeros((1, table.vectors.shape[1]), dtype=np.float32)
            row = out[0]
            for t in ids:
                row += table.vectors[t]
        else:
            counts = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
            flat = np.fromiter(itertools.chain.from_iterable(encoded), dtype=np.int64, count=int(counts.sum()))
            known = table.known[flat]
            flat = flat[known]  # the tokens in use, text after text
            lengths = np.bincount(np.repeat(np.arange(len(texts)), counts)[known], minlength=len(texts))
            out = _token_sums(table.vectors, flat, lengths)
        present = lengths > 0
        out[present] /= lengths[present, None]
        norms = np.linalg.norm(out, axis=1)
        empty = ~np.isfinite(norms) | (norms == 0)  # no known token (e.g. an empty text): a fixed unit vector
        out[empty] = 0.0
        out[empty, 0] = 1.0
        norms[empty] = 1.0
        return np.ascontiguousarray(out / norms[:, None], dtype=np.float32)

    def embed_query(self, text: str) -> Vectors:
        """Embed one search query: a ``(dim,)`` float32 unit vector."""
        vector: Vectors = self.embed([text])[0]
        return vector

    # -- loading -----------------------------------------------------------------------------------------------
    def _model(self) -> tuple[Tokenizer, StaticTable]:
        loaded = self._loaded
        if loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = (Tokenizer(MAX_TOKENS), self._table())
                loaded = self._loaded
        return loaded

    def _table(self) -> StaticTable:
        if not self.path.is_file():
            self._distill()
        try:
            stored = np.load(self.path, allow_pickle=False)
            table = StaticTable(vectors=np.ascontiguousarray(stored[:, :-1], dtype=np.float32), known=stored[:, -1] > 0)
        except (OSError, ValueError) as e:
            raise EmbeddingError(f"could not load the static model from {self.path}: {e}; delete it to rebuild") from e
        if table.vectors.shape[1] != self.dim:
            raise EmbeddingError(f"{self.path} holds {table.vectors.shape[1]}-d vectors, expected {self.dim}")
        return table

    def _distill(self) -> None:
        """Distil with the default MiniLM into a temporary file, then move it into place atomically."""
        started = time.perf_counter()
        log.info("distilling a static model from %s into %s (once)", MINILM_NAME, self.path)
        self._cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp.npy")
        try:
            model = MiniLMEmbedder(weights="int8", batch_size=DISTILL_BATCH)  # the source its identity names
            table = distill_table(model, pca_dims=self._pca_dims, sif_coefficient=self._sif)
            np.save(tmp, np.hstack([table.vectors, table.known.astype(np.float32)[:, None]]), allow_pickle=False)
            os.replace(tmp, self.path)
        except MemlaneError:
            raise
        except Exception as e:
            raise EmbeddingError(f"could not distill the static model into {self.path}: {e}") from e
        finally:
            tmp.unlink(missing_ok=True)
        seconds = time.perf_counter() - started
        self.path.with_suffix(".json").write_text(json.dumps({"source": int8_identity(), "seconds": seconds}))
        log.info("distilled the static model in %.1f s", seconds)
