"""A real ``memlane serve`` on 127.0.0.1 for the client suites, with a key per tenant."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the client suites start a real server: memlane[server]")
pytest.importorskip("httpx", reason="the HTTP client needs memlane[client]")

from memlane.bench.load import spawned_server
from memlane.server.keys import AdminDB


@dataclass
class Served:
    url: str
    home: Path
    admin_key: str  # of tenant 'default'

    def key(self, tenant: str, scopes: str = "admin,read,write") -> str:
        db = AdminDB(self.home / "server.db")
        try:
            return db.create_key(tenant, scopes, f"test key of {tenant}").secret
        finally:
            db.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("served")
    with spawned_server("hash", home) as (url, key):
        yield Served(url, home, key)
