"""Where an imported memory lands: the id it is stored under.

Memory ids are unique across the whole store, so an imported line cannot keep an id another user (of any tenant)
already holds; refusing it, or giving it a new id only then, would tell the importer that the id exists elsewhere.
So for a caller bound to a tenant (the REST server's every call) each imported line gets an id derived from the
importing user's scope key and the file's id (a hash):
the same answer whether the file's id exists elsewhere or nowhere, different users never collide, and importing the
same file again finds the same ids and skips them. A line whose own id this user already holds is skipped too (a
file exported from this user's memory). References within the file (a typed memory's sources, ``superseded_by``)
follow their memories to the new ids.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Final

from memlane.models import MemoryItem
from memlane.security.transfer import ImportLine

_MEMLANE_ID: Final = re.compile(r"[0-9a-f]{32}")

#: ``held(user_id, ids)``: which of ``ids`` that user's memory holds.
Held = Callable[[str, Sequence[str]], Collection[str]]


def derived_id(scope_key: str, file_id: str) -> str:
    """The id a line with ``file_id`` gets in the scope ``scope_key``. A memlane id keeps its first 16 hex digits
    (its creation time and order, which break ranking ties), the rest comes from the hash.
    """
    digest = hashlib.sha256(f"memlane-import\x1f{scope_key}\x1f{file_id}".encode()).hexdigest()
    return file_id[:16] + digest[:16] if _MEMLANE_ID.fullmatch(file_id) else digest[:32]


def place(lines: Sequence[ImportLine], held: Held) -> list[ImportLine]:
    """The lines to write (in file order), each with its derived id and references moved along; lines whose id
    (the file's, or the derived one) their user already holds are left out.
    """
    by_user: dict[str, list[ImportLine]] = {}
    for line in lines:
        by_user.setdefault(line.item.user_id, []).append(line)
    fresh: list[ImportLine] = []
    for user_id, group in by_user.items():
        own = set(held(user_id, [line.item.id for line in group]))
        group = [line for line in group if line.item.id not in own]
        moved = {line.item.id: derived_id(user_id, line.item.id) for line in group}
        again = set(held(user_id, list(moved.values())))
        for line in group:
            _move(line.item, moved)
        fresh.extend(line for line in group if line.item.id not in again)
    return sorted(fresh, key=lambda line: line.lineno)


def _move(item: MemoryItem, moved: Mapping[str, str]) -> None:
    item.id = moved.get(item.id, item.id)
    for ref in item.sources:
        ref.memory_id = moved.get(ref.memory_id, ref.memory_id)
    if item.superseded_by is not None:
        item.superseded_by = moved.get(item.superseded_by, item.superseded_by)
