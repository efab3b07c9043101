"""``StaticEmbedder``: a model2vec static model distilled once from the bundled MiniLM, numpy-only at query time."""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from memlane.embedding._common import (
    MINILM_DIM,
    MINILM_NAME,
    default_cache_dir,
    minilm_dir,
    minilm_identity,
    minilm_version,
    set_offline_env,
)
from memlane.embedding.base import Vectors
from memlane.errors import ConfigError, EmbeddingError

log = logging.getLogger(__name__)

MAX_TOKENS = 512


def _model2vec_version() -> str:
    try:
        return metadata.version("model2vec")
    except metadata.PackageNotFoundError as e:
        raise EmbeddingError("the static embedder needs model2vec; reinstall memlane") from e


class StaticEmbedder:
    """Token vectors of the bundled MiniLM (model2vec distillation): a text is the mean of its tokens' vectors.

    The first use distills the model (about 20 s on two cores, torch on CPU, offline) into ``cache_dir``;
    later loads read it from there and need only numpy and tokenizers (thousands of texts per second,
    sub-millisecond queries). Much weaker than MiniLM on paraphrases, but word-overlap retrieval is strong.

    ``pca_dims=None`` (default) keeps all 384 dimensions; on LoCoMo turns it retrieved better than PCA to
    256 or 128. ``sif_coefficient`` down-weights frequent tokens (model2vec's default).
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
        self._model: Any = None

    def __repr__(self) -> str:
        return f"StaticEmbedder(pca_dims={self._pca_dims}, path={str(self.path)!r})"

    @property
    def _params(self) -> str:
        pca = f"pca{self._pca_dims}" if self._pca_dims is not None else "nopca"
        return f"{pca}-sif{self._sif:g}-model2vec{_model2vec_version()}"

    @property
    def identity(self) -> str:
        return f"static-distilled({minilm_identity()})/{self._params}"

    @property
    def dim(self) -> int:
        return self._pca_dims if self._pca_dims is not None else MINILM_DIM

    @property
    def path(self) -> Path:
        """Directory holding the distilled model (``model.safetensors``, ``tokenizer.json``, ``config.json``)."""
        return self._cache_dir / f"static-{MINILM_NAME}-{minilm_version()}-{self._params}"

    def load(self) -> None:
        """Load (distilling first if needed) now instead of at the first embedding call."""
        self._get_model()

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed documents: an ``(len(texts), dim)`` float32 array of unit rows."""
        texts = list(texts)
        for text in texts:
            if not isinstance(text, str):
                raise EmbeddingError(f"embed() takes strings, got {type(text).__name__}")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._get_model()
        try:
            raw = model.encode(texts, max_length=MAX_TOKENS, use_multiprocessing=False, normalize=False)
        except Exception as e:
            raise EmbeddingError(f"static model at {self.path} failed to encode: {e}") from e
        out = np.asarray(raw, dtype=np.float32)
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
    def _get_model(self) -> Any:
        model = self._model
        if model is None:
            with self._lock:
                if self._model is None:
                    self._model = self._load()
                model = self._model
        return model

    def _load(self) -> Any:
        if not (self.path / "model.safetensors").is_file():
            self._distill()
        try:
            from model2vec import StaticModel

            return StaticModel.from_pretrained(self.path, quantize_to="float32")  # f32 means: faster and exact
        except Exception as e:
            raise EmbeddingError(f"could not load the static model from {self.path}: {e}") from e

    def _distill(self) -> None:
        """Distill from the bundled MiniLM into a temporary directory, then move it into place atomically."""
        set_offline_env()
        source = minilm_dir()
        try:
            from model2vec.distill import distill
        except ImportError as e:
            raise EmbeddingError(f"distilling the static model needs model2vec's distill dependencies: {e}") from e
        self._cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = self._cache_dir / f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp"
        started = time.perf_counter()
        log.info("distilling a static model from %s into %s (once)", MINILM_NAME, self.path)
        try:
            model = distill(str(source), pca_dims=self._pca_dims, sif_coefficient=self._sif, device="cpu")
            model.save_pretrained(tmp)
            try:
                tmp.rename(self.path)
            except OSError:
                if not (self.path / "model.safetensors").is_file():  # not just "another process won the race"
                    raise
        except Exception as e:
            raise EmbeddingError(f"could not distill the static model into {self.path}: {e}") from e
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        log.info("distilled the static model in %.1f s", time.perf_counter() - started)
