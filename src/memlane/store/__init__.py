"""Storage backends behind small protocols; backend names live only in this package."""

from memlane.store.base import Store, open_store

__all__ = ["Store", "open_store"]
