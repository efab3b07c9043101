"""Storage backends behind small capability protocols; backend names live only in this package."""

from memlane.store.base import Store
from memlane.store.opener import open_store

__all__ = ["Store", "open_store"]
