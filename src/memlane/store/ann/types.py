"""The typed values that cross the vector-index seam: hits, changes, the feed protocol, settings and file metadata."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]

#: Bumped when the on-disk layout changes; a file of another format is rebuilt. 2: a graph of ``graph_dtype`` with
#: its float32 rows in a file of their own (1: a float32 graph alone).
FORMAT = 2


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result: the owner's integer key and its inner product with the query (cosine for unit vectors)."""

    key: int
    score: float


@dataclass(frozen=True, slots=True)
class Change:
    """One committed write of a scope's vectors, in sequence order.

    ``vector`` is the key's new vector (an add or a replacement), or ``None`` when the key was deleted.
    """

    seq: int
    key: int
    vector: F32 | None


@dataclass(frozen=True, slots=True)
class Batch:
    """A run of keys and their vectors (one row each), as a snapshot yields them."""

    keys: I64
    vectors: F32


class ChangeFeed(Protocol):
    """What the owner of a scope's vectors (the store) offers so that an index can catch up with it.

    Sequences are positive integers that grow with every committed write of the scope (gaps are allowed, e.g. a
    sequence shared by all scopes); the write of a vector and its change-log row commit in one transaction, and the
    index is told after the commit. ``head`` is the sequence of the scope's last committed change (0 when it has none).
    ``changes_since(seq)`` yields the scope's changes with a sequence greater than ``seq``, oldest first, or returns
    ``None`` when the log has been pruned past ``seq`` (the index is then rebuilt from a snapshot). ``snapshot``
    returns the sequence it is consistent with and every current vector of the scope, in batches.
    """

    def head(self) -> int:
        """The sequence of the scope's last committed change, 0 if none."""
        ...

    def changes_since(self, seq: int) -> Iterable[Change] | None:
        """Changes after ``seq``, oldest first; ``None`` if the log no longer reaches back to ``seq``."""
        ...

    def snapshot(self) -> tuple[int, Iterator[Batch]]:
        """``(head, batches)``: every current vector of the scope, consistent with ``head``."""
        ...


class IndexSettings(BaseModel):
    """How an index searches: where it switches from exact to HNSW, and the HNSW parameters (see ``docs/ann.md``)."""

    model_config = ConfigDict(frozen=True)

    exact_below: int = Field(50_000, ge=0, description="exact search while the scope holds fewer vectors than this")
    connectivity: int = Field(32, ge=4, le=128, description="HNSW M: links per node")
    expansion_add: int = Field(200, ge=8, description="HNSW ef_construction")
    expansion_search: int = Field(
        512, ge=8, description="HNSW ef at query time up to 100,000 vectors (raised to the count asked for)"
    )
    expansion_growth: float = Field(
        0.7,
        ge=0.0,
        description="above 100,000 vectors the ef grows as (vectors / 100,000) ** this (0: fixed): 0.7 gives 2,565 at "
        "1M, where the recall of ef 512 fell to 0.92 (docs/ann.md)",
    )
    graph_dtype: Literal["f32", "f16", "bf16"] = Field(
        "bf16",
        description="the vectors the graph is walked with: bf16 or f16 halve the bytes each step reads (a graph search "
        "at 100k took 2.7-2.9 ms in f32, 1.5-1.9 in bf16); the float32 rows are kept beside it and rescore what it finds",
    )
    graph_oversample: float = Field(
        2.0, ge=1.0, description="a graph of bf16 or f16 is asked for this many candidates per hit, rescored in float32"
    )
    filter_exact_max: int = Field(
        4_096, ge=0, description="a filter allowing at most this many keys is answered by exact search over them"
    )
    filter_oversample: float = Field(2.0, ge=1.0, description="HNSW candidates per wanted hit, over the allowed share")
    background_build: bool = Field(
        True,
        description="build the graph on a background thread when a scope reaches exact_below (exact search serves "
        "meanwhile); off: in the call that crossed it",
    )
    build_threads: int = Field(
        0, ge=0, description="threads inserting into a graph built in the background (0: every core)"
    )


class IndexMeta(BaseModel):
    """The commit record of a saved index (``meta.json``): what it holds and up to which change it is current."""

    model_config = ConfigDict(frozen=True)

    format: int = FORMAT
    identity: str = Field(description="the owner's name for the vector space: model identity, dimension, database")
    dim: int = Field(ge=1)
    applied_seq: int = Field(ge=0, description="the last change of the feed that the saved data includes")
    count: int = Field(ge=0)
    kind: Literal["exact", "hnsw"]
    data_file: str = Field(description="the data file of this generation, beside meta.json")
    data_bytes: int = Field(ge=0)
    rows_file: str | None = Field(
        None, description="a graph of bf16 or f16: the float32 rows it is rescored from, a file of the same generation"
    )
    rows_bytes: int = Field(0, ge=0)
