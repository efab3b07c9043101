"""Per-scope vector indexes: exact while small, usearch HNSW once large, incremental, persisted, repaired on open.

Backend-neutral: the owner (a store) keeps the vectors and a change log as the source of truth and feeds the index
through the ``ChangeFeed`` protocol; this package never imports a store backend. See ``docs/ann.md``.
"""

from memlane.store.ann.index import VectorIndex
from memlane.store.ann.sync import SyncReport, apply_changes, open_index, rebuild
from memlane.store.ann.types import Batch, Change, ChangeFeed, Hit, IndexMeta, IndexSettings

__all__ = [
    "Batch",
    "Change",
    "ChangeFeed",
    "Hit",
    "IndexMeta",
    "IndexSettings",
    "SyncReport",
    "VectorIndex",
    "apply_changes",
    "open_index",
    "rebuild",
]
