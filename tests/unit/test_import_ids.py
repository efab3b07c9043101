"""Import is no existence oracle across tenants: a line whose id another tenant holds imports exactly as a line
whose id exists nowhere (same answer, same stored form), and importing the same file again is a no-op.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest

from memlane import Memory
from memlane.errors import NotFoundError
from memlane.scope import scope_key
from memlane.security.import_ids import derived_id


@pytest.fixture
def memory() -> Iterator[Memory]:
    with Memory(":memory:", embedder="hash") as m:
        yield m


def _file(memory: Memory, ids: list[str]) -> str:
    memory.add("a line to export", user_id="tpl", tenant="tpl", infer=False)
    buf = io.StringIO()
    memory.export(buf, user_id="tpl", tenant="tpl")
    header, row = buf.getvalue().splitlines()
    memory.delete_all(user_id="tpl", tenant="tpl")
    lines = [header]
    for i, mid in enumerate(ids):
        lines.append(json.dumps({**json.loads(row), "id": mid, "text": f"line {i}", "content_hash": "0" * 64}))
    return "\n".join(lines) + "\n"


def test_an_id_held_in_another_tenant_imports_like_one_that_does_not_exist(memory: Memory) -> None:
    victim = memory.add("globex secret", user_id="ana", tenant="globex", infer=False).items[0].id
    unknown = victim[:16] + "0" * 16
    outcomes = []
    for mid in (victim, unknown):
        answer = memory.import_(io.StringIO(_file(memory, [mid])), user_id="eve", tenant="acme")
        with pytest.raises(NotFoundError):  # neither keeps the file's id: nothing tells them apart
            memory.get(mid, user_id="eve", tenant="acme")
        stored = memory.get(derived_id(scope_key("acme", "eve"), mid), user_id="eve", tenant="acme")
        outcomes.append((answer, stored.id[:16] == mid[:16], stored.id != mid))
    assert outcomes[0] == outcomes[1] == (1, True, True)
    assert memory.get(victim, user_id="ana", tenant="globex").text == "globex secret"  # untouched


def test_importing_the_same_file_again_is_a_no_op_and_an_own_export_is_skipped(memory: Memory) -> None:
    text = _file(memory, ["a" * 32, "b" * 32])
    assert memory.import_(io.StringIO(text), user_id="eve", tenant="acme") == 2
    assert memory.import_(io.StringIO(text), user_id="eve", tenant="acme") == 0
    buf = io.StringIO()
    memory.export(buf, user_id="eve", tenant="acme")
    assert memory.import_(io.StringIO(buf.getvalue()), user_id="eve", tenant="acme") == 0
    assert len(memory.list(user_id="eve", tenant="acme")) == 2


def test_derived_ids_differ_by_user_and_keep_the_time_prefix() -> None:
    mid = "01a22251d950000082c4e31d564bfb0f"
    a, b = derived_id(scope_key("acme", "eve"), mid), derived_id(scope_key("acme", "bob"), mid)
    assert a != b and a[:16] == b[:16] == mid[:16] and len(a) == 32
    assert len(derived_id(scope_key("acme", "eve"), "not-a-memlane-id")) == 32
