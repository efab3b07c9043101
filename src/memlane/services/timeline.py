"""A user's timeline (``Memory.timeline``): the request checked, an entity name resolved to its canonical entity,
one page read from the store's ``TimelineIndex`` and the cursor of the next.
"""

from __future__ import annotations

from dataclasses import replace

from memlane.errors import ValidationError
from memlane.graph.neighbourhood import resolve_entity
from memlane.models import MemoryKind
from memlane.records.timeline import TimelineCursor, TimelineFilter, TimelinePage, timeline_time
from memlane.scope import unscope_all
from memlane.security.validation import check_bool, check_int, check_text
from memlane.services.core import Core
from memlane.services.scope import Scope


def timeline_page(
    core: Core, scope: Scope, where: TimelineFilter | None, limit: object, after: TimelineCursor | str | None
) -> TimelinePage:
    """One page of the user's timeline (see ``Memory.timeline``)."""
    where = checked_filter(core, scope, where or TimelineFilter())
    size = check_int(limit, what="limit", low=1, high=core.limits.top_k)
    if isinstance(after, str):
        after = TimelineCursor.decode(check_text(after, max_chars=core.limits.cursor_chars, what="after"))
    elif after is not None and not isinstance(after, TimelineCursor):
        raise ValidationError("after must be a TimelineCursor, its encoded string, or None")
    rows = core.store.timeline(scope.key, where, size + 1, after)
    page = rows[:size]
    nxt = TimelineCursor(timeline_time(page[-1]), page[-1].id) if len(rows) > size else None
    return TimelinePage(unscope_all(page), nxt)


def checked_filter(core: Core, scope: Scope, where: TimelineFilter) -> TimelineFilter:
    """The filter with its fields checked and its entity (a name or an alias) resolved for this user."""
    if not isinstance(where, TimelineFilter):
        raise ValidationError("where must be a TimelineFilter")
    if where.kind is not None and not isinstance(where.kind, MemoryKind):
        raise ValidationError(f"kind must be a MemoryKind, got {where.kind!r:.40}")
    if where.category is not None:
        check_text(where.category, max_chars=core.limits.name_chars, what="category")
    check_bool(where.include_superseded, what="include_superseded")
    check_bool(where.flagged_only, what="flagged_only")
    if where.entity is None:
        return where
    name = check_text(where.entity, max_chars=core.limits.name_chars, what="entity")
    return replace(where, entity=resolve_entity(core.store, scope.key, name))
