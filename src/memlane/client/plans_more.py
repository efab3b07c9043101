"""The plans of the calls beyond the memories' own (see ``memlane.client.plans``): the entity graph, routines, the
archive and capacity, failed jobs, and the keys of the tenant.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, TypeAdapter

from memlane.apikeys import KeyInfo, NewKeyInfo, ScopeName
from memlane.client.plans import ITEM, ITEMS, OBJECT, no_tenant, present, required_user
from memlane.client.wire import Plan, Request, segment
from memlane.errors import ValidationError
from memlane.graph.neighbourhood import Neighbourhood
from memlane.graph.types import RelationEdge
from memlane.models import ArchivedMemory, MemoryItem, MemoryKind
from memlane.records.timeline import TimelineCursor, TimelineFilter, TimelinePage
from memlane.security.validation import check_bool

_EDGES = TypeAdapter(list[RelationEdge])
_NEIGHBOURHOOD = TypeAdapter(Neighbourhood)
_ARCHIVED = TypeAdapter(list[ArchivedMemory])
_IDS = TypeAdapter(list[str])


class _Page(BaseModel):
    items: list[MemoryItem]
    next: str | None


_PAGE = TypeAdapter(_Page)


def timeline(
    *,
    user_id: str,
    where: TimelineFilter | None = None,
    limit: int = 50,
    after: TimelineCursor | str | None = None,
    tenant: str | None = None,
) -> Plan[TimelinePage]:
    """``Memory.timeline``: one page of the user's memories newest first, and the cursor of the next."""
    no_tenant(tenant)
    if where is None:
        where = TimelineFilter()
    elif not isinstance(where, TimelineFilter):
        raise ValidationError("where must be a TimelineFilter")
    if where.kind is not None and not isinstance(where.kind, MemoryKind):  # as the library refuses them
        raise ValidationError(f"kind must be a MemoryKind, got {where.kind!r:.40}")
    check_bool(where.include_superseded, what="include_superseded")
    check_bool(where.flagged_only, what="flagged_only")
    if isinstance(after, TimelineCursor):
        after = after.encode()
    elif after is not None and not isinstance(after, str):
        raise ValidationError("after must be a TimelineCursor, its encoded string, or None")
    params = {
        "user_id": required_user(user_id),
        "limit": limit,
        "include_superseded": where.include_superseded,
        "flagged_only": where.flagged_only,
        **present(kind=None if where.kind is None else str(where.kind), category=where.category),
        **present(entity=where.entity, after=after),
    }
    reply = yield Request("GET", "/v1/timeline", params=params)
    page = reply.parse(_PAGE)
    return TimelinePage(page.items, None if page.next is None else TimelineCursor.decode(page.next))


def graph(entity: str, *, user_id: str, tenant: str | None = None, limit: int = 10) -> Plan[Neighbourhood]:
    """``Memory.graph``: an entity's neighbourhood."""
    no_tenant(tenant)
    reply = yield Request(
        "GET", "/v1/graph", params={"user_id": required_user(user_id), "entity": entity, "limit": limit}
    )
    return reply.parse(_NEIGHBOURHOOD)


def relations(
    *, user_id: str, tenant: str | None = None, entity: str | None = None, current_only: bool = False
) -> Plan[list[RelationEdge]]:
    """``Memory.relations``: the typed relations of the user's graph."""
    no_tenant(tenant)
    params = {"user_id": required_user(user_id), "current_only": current_only, **present(entity=entity)}
    reply = yield Request("GET", "/v1/relations", params=params)
    return reply.parse(_EDGES)


def routines(*, user_id: str, tenant: str | None = None, min_occurrences: int = 3) -> Plan[list[MemoryItem]]:
    """``Memory.routines``: detect and store recurring actions; the user's current routines."""
    no_tenant(tenant)
    body = {"user_id": required_user(user_id), "min_occurrences": min_occurrences}
    reply = yield Request("POST", "/v1/routines", body=body)
    return reply.parse(ITEMS)


def archive(
    *, user_id: str, limit: int = 100, offset: int = 0, tenant: str | None = None
) -> Plan[list[ArchivedMemory]]:
    """``Memory.archive``: memories evicted beyond capacity, most recently archived first."""
    no_tenant(tenant)
    reply = yield Request(
        "GET", "/v1/archive", params={"user_id": required_user(user_id), "limit": limit, "offset": offset}
    )
    return reply.parse(_ARCHIVED)


def restore(memory_id: str, *, user_id: str, tenant: str | None = None) -> Plan[MemoryItem]:
    """``Memory.restore``: bring an archived memory back into every index."""
    no_tenant(tenant)
    path = f"/v1/archive/{segment(memory_id)}/restore"
    reply = yield Request("POST", path, body={"user_id": required_user(user_id)})
    return reply.parse(ITEM)


def forget(*, user_id: str, hard: bool = False, tenant: str | None = None) -> Plan[list[str]]:
    """``Memory.forget``: enforce the configured capacity now; the ids evicted."""
    no_tenant(tenant)
    reply = yield Request("POST", "/v1/forget", body={"user_id": required_user(user_id), "hard": hard})
    return reply.parse(_IDS)


def merge_entities(source: str, target: str, *, user_id: str, tenant: str | None = None) -> Plan[int]:
    """``Memory.merge_entities``: make ``source`` the same entity as ``target``; how many memories moved."""
    no_tenant(tenant)
    body = {"user_id": required_user(user_id), "source": source, "target": target}
    reply = yield Request("POST", "/v1/entities/merge", body=body)
    return int(reply.parse(OBJECT)["count"])


def split_entity(
    entity: str, new_name: str, *, user_id: str, memory_ids: Sequence[str], tenant: str | None = None
) -> Plan[int]:
    """``Memory.split_entity``: split memories off ``entity`` into ``new_name``; how many moved."""
    no_tenant(tenant)
    body = {"user_id": required_user(user_id), "entity": entity, "new_name": new_name, "memory_ids": list(memory_ids)}
    reply = yield Request("POST", "/v1/entities/split", body=body)
    return int(reply.parse(OBJECT)["count"])


def retry_jobs(*, user_id: str | None = None, tenant: str | None = None) -> Plan[int]:
    """``Memory.retry_jobs``: queue a user's failed jobs again (over REST, one user's); how many."""
    no_tenant(tenant)
    reply = yield Request("POST", "/v1/jobs/retry", body={"user_id": required_user(user_id)})
    return int(reply.parse(OBJECT)["count"])


# -- keys of the tenant (admin keys; not ``Memory`` methods) ------------------------------------------------------------
def create_key(scopes: Sequence[ScopeName], *, name: str = "") -> Plan[NewKeyInfo]:
    """A new key of the caller's tenant; its ``secret`` is in this answer only."""
    reply = yield Request("POST", "/admin/keys", body={"scopes": list(scopes), "name": name})
    return reply.parse(TypeAdapter(NewKeyInfo))


def list_keys() -> Plan[list[KeyInfo]]:
    """The keys of the caller's tenant, revoked ones too, without their secrets."""
    reply = yield Request("GET", "/admin/keys")
    return reply.parse(TypeAdapter(list[KeyInfo]))


def revoke_key(prefix: str) -> Plan[KeyInfo]:
    """Revoke a key of the caller's tenant by its prefix (``ml_<prefix>``)."""
    reply = yield Request("DELETE", f"/admin/keys/{segment(prefix)}")
    return reply.parse(TypeAdapter(KeyInfo))
