"""The byte forms a vector can take in an index file: float32, and the bf16 and f16 a compact graph stores."""

from __future__ import annotations

import numpy as np


def vector_forms(vector: np.ndarray) -> list[bytes]:
    """The vector as float32, as bf16 (truncated, and rounded to nearest even) and as f16, each as raw bytes."""
    v = np.ascontiguousarray(vector, dtype=np.float32).reshape(-1)
    bits = v.view(np.uint32)
    truncated = (bits >> 16).astype(np.uint16)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return [v.tobytes(), truncated.tobytes(), rounded.tobytes(), v.astype(np.float16).tobytes()]


def holds_any(data: bytes, vector: np.ndarray) -> bool:
    """Whether ``data`` holds the vector in any of its forms."""
    return any(form in data for form in vector_forms(vector))
