"""The admin-store contract: keys and the audit log behave the same in SQLite (``server.db``) and in the PostgreSQL
store's database, and the server picks the one that goes with its store.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the REST server needs memlane[server]")

from memlane.errors import NotFoundError, StoreError, ValidationError
from memlane.server import AdminDB, AdminStore, open_admin_store
from memlane.server.admin_store import is_postgres
from memlane.server.keys import Scope, key_hash

KINDS = ["sqlite", "postgres"]


def _opener(kind: str, tmp_path: Path) -> Callable[[], AdminStore]:
    """A function opening one more handle on the same key database (as another process would)."""
    if kind == "sqlite":
        return lambda: open_admin_store(tmp_path, tmp_path / "memlane.db")
    from tests.pg_server import postgres_url

    url = postgres_url()
    return lambda: open_admin_store(tmp_path, url)


@pytest.fixture(params=KINDS)
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], AdminStore]]:
    opened: list[AdminStore] = []

    def open_one() -> AdminStore:
        store = _opener(request.param, tmp_path)()
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()


def test_the_store_follows_the_memory_store() -> None:
    assert is_postgres("postgresql://u@h/db") and is_postgres("postgres://h/db")
    assert not is_postgres("sqlite:///x.db") and not is_postgres(Path("postgresql:/x")) and not is_postgres(None)


def test_keys_created_on_one_handle_verify_on_another(opener: Callable[[], AdminStore]) -> None:
    one, two = opener(), opener()
    assert isinstance(one, AdminStore)
    new = one.create_key("acme", "read,write", "ci")
    found = two.verify(new.secret)
    assert found is not None and found == new.key
    assert found.scopes == frozenset({Scope.READ, Scope.WRITE}) and found.tenant == "acme" and not found.revoked
    assert two.verify(new.secret[:-1] + ("0" if new.secret[-1] != "0" else "1")) is None  # wrong secret
    assert two.verify("ml_" + "0" * 12 + "_" + "0" * 64) is None  # unknown prefix
    assert two.verify("not a key") is None
    assert [k.prefix for k in two.list_keys()] == [new.key.prefix] and two.count_keys() == 1


def test_revoke_is_seen_everywhere_and_keeps_the_first_time(opener: Callable[[], AdminStore]) -> None:
    one, two = opener(), opener()
    new = one.create_key("acme", "admin")
    first = two.revoke(f"ml_{new.key.prefix}")
    assert first.revoked and first.revoked_at is not None
    again = one.revoke(new.secret)  # the whole key names it too
    assert again.revoked_at == first.revoked_at
    seen = one.verify(new.secret)
    assert seen is not None and seen.revoked
    with pytest.raises(NotFoundError, match="no key with prefix"):
        one.revoke("ml_ffffffffffff")


def test_bad_keys_are_refused_before_anything_is_stored(opener: Callable[[], AdminStore]) -> None:
    store = opener()
    with pytest.raises(ValidationError, match="unknown scope"):
        store.create_key("acme", "read,root")
    with pytest.raises(ValidationError, match="at least one scope"):
        store.create_key("acme", [])
    with pytest.raises(ValidationError, match="name"):
        store.create_key("acme", "read", "a\nb")
    with pytest.raises(ValidationError):
        store.create_key("bad tenant!", "read")
    assert store.count_keys() == 0


def test_bootstrap_creates_one_key_however_many_start_at_once(opener: Callable[[], AdminStore]) -> None:
    handles = [opener() for _ in range(4)]
    made: list[Any] = []
    barrier = threading.Barrier(len(handles))

    def start(store: AdminStore) -> None:
        barrier.wait(10)
        made.append(store.bootstrap_key("default", "admin,read,write", "first start"))

    threads = [threading.Thread(target=start, args=(h,)) for h in handles]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    created = [m for m in made if m is not None]
    assert len(made) == 4 and len(created) == 1
    assert handles[0].count_keys() == 1 and handles[3].verify(created[0].secret) is not None
    assert handles[1].bootstrap_key("default", "admin") is None


def test_audit_lines_are_one_log_in_commit_order(opener: Callable[[], AdminStore]) -> None:
    one, two = opener(), opener()
    for i, store in enumerate([one, two, one, two, one]):
        store.record(key_prefix=f"p{i}", tenant="acme", action="add" if i % 2 == 0 else "search", status=200)
    two.record(key_prefix=None, tenant="globex", action="add", status=503, user_id="u", target="t", detail="x" * 900)
    lines = one.audit("acme")
    assert [e.key_prefix for e in lines] == ["p0", "p1", "p2", "p3", "p4"]
    assert lines == two.audit("acme")
    seqs = [e.seq for e in lines]
    assert seqs == sorted(seqs) and len(set(seqs)) == 5
    assert [e.at for e in lines] == sorted(e.at for e in lines)
    assert [e.key_prefix for e in one.audit("acme", after=seqs[1], limit=2)] == ["p2", "p3"]
    assert [e.key_prefix for e in two.audit("acme", action="search")] == ["p1", "p3"]
    [other] = one.audit("globex")
    assert (other.status, other.user_id, other.target, len(other.detail)) == (503, "u", "t", 500)
    assert one.audit("nobody") == []


def test_concurrent_audit_lines_are_all_kept_and_numbered_once(opener: Callable[[], AdminStore]) -> None:
    handles = [opener() for _ in range(3)]

    def write(store: AdminStore, n: int) -> None:
        for i in range(20):
            store.record(key_prefix=f"h{n}", tenant="acme", action="add", status=200, target=str(i))

    threads = [threading.Thread(target=write, args=(h, n)) for n, h in enumerate(handles)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    lines = handles[0].audit("acme", limit=1000)
    assert len(lines) == 60 and len({e.seq for e in lines}) == 60
    for n in range(3):
        assert [e.target for e in lines if e.key_prefix == f"h{n}"] == [str(i) for i in range(20)]


def _tamper(store: AdminStore, sql: str) -> None:
    """Run ``sql`` on the store's own tables, as an operator with a SQL prompt would."""
    if isinstance(store, AdminDB):
        with pytest.raises((sqlite3.DatabaseError, StoreError), match="append-only"):
            store._db.execute(sql.replace("server_audit", "audit"))
        return
    with pytest.raises(StoreError, match="append-only"):
        store._db.read(sql)  # type: ignore[attr-defined]


def test_the_audit_log_is_append_only(opener: Callable[[], AdminStore]) -> None:
    store = opener()
    store.record(key_prefix="p", tenant="acme", action="add", status=200)
    _tamper(store, "UPDATE server_audit SET status = 500")
    _tamper(store, "DELETE FROM server_audit")
    assert [e.status for e in store.audit("acme")] == [200]


def test_only_the_hash_of_a_key_is_stored(opener: Callable[[], AdminStore], tmp_path: Path) -> None:
    store = opener()
    new = store.create_key("acme", "read")
    if isinstance(store, AdminDB):
        rows = store._db.execute("SELECT * FROM api_keys").fetchall()
    else:
        rows = store._db.read("SELECT * FROM server_keys")  # type: ignore[attr-defined]
    stored = repr([tuple(r) for r in rows])
    assert key_hash(new.secret) in stored and new.secret.split("_")[2] not in stored


def test_the_same_calls_give_the_same_answers_on_both(tmp_path: Path) -> None:
    """Congruence: one script of calls on each store, the answers compared with what differs by nature (random
    prefixes, clock times, sequence numbers) taken out.
    """

    def script(store: AdminStore) -> list[Any]:
        out: list[Any] = []
        a = store.create_key("acme", "write,read", "a")
        b = store.create_key("globex", ["admin"])
        out.append(store.bootstrap_key("default", "admin"))
        out.append(store.count_keys())
        out.append([(k.tenant, sorted(k.scopes), k.name, k.revoked) for k in store.list_keys()])
        out.append(store.revoke(b.key.prefix).revoked)
        for secret in (a.secret, b.secret, "ml_x"):
            found = store.verify(secret)
            out.append(None if found is None else (found.tenant, sorted(found.scopes), found.revoked))
        for i in range(4):
            store.record(key_prefix=a.key.prefix, tenant="acme", action=f"a{i % 2}", status=200 + i, detail="d" * i)
        for query in ({}, {"action": "a1"}, {"limit": 1}, {"after": 10**9}):
            out.append([(e.action, e.status, e.detail) for e in store.audit("acme", **query)])
        return out

    sqlite_side = AdminDB(tmp_path / "server.db")
    from tests.pg_server import postgres_url

    pg_side = open_admin_store(tmp_path, postgres_url())
    try:
        assert script(sqlite_side) == script(pg_side)
    finally:
        sqlite_side.close()
        pg_side.close()
