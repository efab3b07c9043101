r"""Tenants: the one function that turns ``(tenant, user_id)`` into the scope key every store query filters by.

The default tenant's key is the bare user id, so stores written before tenants existed keep working unchanged; any
other tenant's key is ``tenant + "\x1f" + user_id``. Validation refuses control characters in ids, so no user id of
the default tenant can contain the separator and two different pairs never share a key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TypeVar

from memlane.errors import ValidationError
from memlane.models import AddResult, ArchivedMemory, Hit, Job, MemoryItem

DEFAULT_TENANT = "default"
SEPARATOR = "\x1f"
TENANT_CHARS = 64
_TENANT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

T = TypeVar("T", MemoryItem, Hit, Job, ArchivedMemory, AddResult)


def check_tenant(tenant: object) -> str:
    """A tenant id: ``None`` is the default tenant; otherwise 1-64 characters of ``A-Z a-z 0-9 . _ -``."""
    if tenant is None:
        return DEFAULT_TENANT
    if not isinstance(tenant, str):
        raise ValidationError(f"tenant must be a string, got {type(tenant).__name__}")
    if not tenant or len(tenant) > TENANT_CHARS or not _TENANT_RE.fullmatch(tenant):
        raise ValidationError(
            f"tenant {tenant[:80]!r} must be 1 to {TENANT_CHARS} characters of letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return tenant


def scope_key(tenant: str | None, user_id: str) -> str:
    """The store's key for ``user_id`` within ``tenant`` (the bare user id for the default tenant)."""
    tenant = check_tenant(tenant)
    if SEPARATOR in user_id:
        raise ValidationError("user_id must not contain control characters")
    return user_id if tenant == DEFAULT_TENANT else f"{tenant}{SEPARATOR}{user_id}"


def split_key(key: str) -> tuple[str, str]:
    """The inverse of ``scope_key``: ``(tenant, user_id)``."""
    tenant, sep, user_id = key.partition(SEPARATOR)
    return (tenant, user_id) if sep else (DEFAULT_TENANT, key)


def in_tenant(key: str, tenant: str | None) -> bool:
    """Whether a stored scope key belongs to ``tenant``."""
    return split_key(key)[0] == check_tenant(tenant)


def _unscope_item(item: MemoryItem) -> MemoryItem:
    item.user_id = split_key(item.user_id)[1]
    return item


def unscope(value: T) -> T:
    """A result as the caller sees it: every user id back to the bare id of its tenant (changed in place)."""
    if isinstance(value, MemoryItem):
        _unscope_item(value)
    elif isinstance(value, Hit):
        for item in (value.memory, *value.related):  # the forms of a statement folded into the hit too
            _unscope_item(item)
    elif isinstance(value, ArchivedMemory):
        _unscope_item(value.memory)
    elif isinstance(value, Job):
        value.user_id = split_key(value.user_id)[1]
    else:
        for item in (*value.items, *value.memories):
            _unscope_item(item)
    return value


def unscope_all(values: Iterable[T]) -> list[T]:
    """``unscope`` over a list of results."""
    return [unscope(v) for v in values]
