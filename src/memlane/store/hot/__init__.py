"""Per-user read models in memory, rebuilt from and kept current with the database (which stays the truth)."""

from memlane.store.hot.rows import HotRow
from memlane.store.hot.scope import HotScope

__all__ = ["HotRow", "HotScope"]
