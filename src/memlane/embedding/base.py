"""The ``Embedder`` seam: texts in, L2-normalised float32 vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. Implementations must be deterministic for a given ``identity``.

    ``identity`` names the model and everything that changes its vectors (weights, pooling, dimension);
    the store records it and refuses to mix vectors of two identities.
    """

    @property
    def identity(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed documents: an ``(len(texts), dim)`` float32 array of unit-length rows."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """Embed one search query: a ``(dim,)`` float32 unit vector."""
        ...
