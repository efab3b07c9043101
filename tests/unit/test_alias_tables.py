"""The per-process cache of users' entity tables: served only at the token it was read at, bounded, forgettable."""

from __future__ import annotations

from memlane.enrich.entities import AliasRow
from memlane.store.alias_tables import AliasTables

ANNA = AliasRow("anna", "anna", "person", "Anna")


def test_rows_are_served_only_at_the_token_they_were_read_at() -> None:
    tables = AliasTables()
    tables.put("u", 7, [ANNA])
    assert tables.token("u") == 7
    served = tables.get("u", 7)
    assert served == [ANNA]
    served.append(ANNA)  # a caller's list is its own
    assert tables.get("u", 7) == [ANNA]
    assert tables.get("u", 8) is None  # the table changed: dropped, not served
    assert tables.token("u") is None and tables.get("u", 7) is None


def test_a_user_without_a_token_is_never_held() -> None:
    tables = AliasTables()
    tables.put("u", None, [ANNA])
    assert tables.token("u") is None
    tables.put("u", 3, [ANNA])
    assert tables.get("u", None) is None and tables.token("u") is None  # the token row went (user erased)


def test_the_least_recently_read_users_go_first_and_forget_drops_one() -> None:
    tables = AliasTables(capacity=2)
    tables.put("a", 1, [ANNA])
    tables.put("b", 2, [])
    assert tables.get("a", 1) == [ANNA]  # "a" read last
    tables.put("c", 3, [])
    assert tables.token("b") is None and tables.token("a") == 1 and tables.token("c") == 3
    tables.forget("a")
    assert tables.get("a", 1) is None
