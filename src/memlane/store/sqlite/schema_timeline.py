"""The SQLite store's timeline migration (``memlane.store.timeline``), appended to ``schema.MIGRATIONS``."""

from __future__ import annotations

from typing import Final

# The timeline walks (user, time, id) newest first, within a kind or a category when filtered by one; the kind index
# has the old (user_id, kind) as its prefix and serves every lookup that served.
TIMELINE_MIGRATIONS: Final[tuple[tuple[str, str], ...]] = (
    (
        "0019_timeline",
        """
        CREATE INDEX memories_user_timeline ON memories(user_id, coalesce(event_time, created_at), id);
        CREATE INDEX memories_user_kind_timeline ON memories(user_id, kind, coalesce(event_time, created_at), id);
        CREATE INDEX memories_user_category_timeline ON memories(user_id, category, coalesce(event_time, created_at), id)
            WHERE category IS NOT NULL;
        DROP INDEX IF EXISTS memories_user_kind
        """,
    ),
)
