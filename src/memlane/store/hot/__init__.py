"""Per-user read models in memory, rebuilt from and kept current with the database (which stays the truth)."""

from memlane.store.hot.scope import HotRow, HotScope

__all__ = ["HotRow", "HotScope"]
