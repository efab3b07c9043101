"""Memory.users: a tenant's users in order of arrival with their memory counts, paged, never another tenant's."""

from __future__ import annotations

import pytest

from memlane.errors import ValidationError


def test_users_of_a_tenant_with_counts(memory):
    memory.add(["one", "two", "three"], user_id="ana", tenant="acme", infer=False)
    memory.add(["four"], user_id="bo", tenant="acme", infer=False)
    memory.add(["five", "six"], user_id="ana", tenant="globex", infer=False)
    memory.add(["seven"], user_id="cy", infer=False)
    acme = memory.users(tenant="acme")
    assert [(u.user_id, u.memories) for u in acme] == [("ana", 3), ("bo", 1)]
    assert [(u.user_id, u.memories) for u in memory.users(tenant="globex")] == [("ana", 2)]
    assert [u.user_id for u in memory.users()] == ["cy"]
    assert [u.user_id for u in memory.users(tenant="acme", limit=1, offset=1)] == ["bo"]
    assert memory.users(tenant="acme", limit=5, offset=2) == []
    with pytest.raises(ValidationError):
        memory.users(tenant="not a tenant!")
    with pytest.raises(ValidationError):
        memory.users(tenant="acme", limit=-1)
