"""Fixtures of the REST API tests: one app over an in-memory store, keys in two tenants."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the REST server needs memlane[server]")

from fastapi.testclient import TestClient

from memlane import Memory
from memlane.config import Config
from memlane.server import AdminDB, ServerSettings, create_app


@dataclass
class Api:
    client: TestClient
    admin: AdminDB
    memory: Memory
    keys: dict[str, str]

    def h(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[who]}"}


def make_api(tmp_path: Path, **overrides: object) -> Iterator[Api]:
    settings = ServerSettings(data_dir=tmp_path, **overrides)  # type: ignore[arg-type]
    admin = AdminDB(settings.admin_db)
    config = Config(data_dir=tmp_path, background_worker=False)
    with Memory(":memory:", embedder="hash", config=config) as memory:
        keys = {
            "acme": admin.create_key("acme", "read,write").secret,
            "globex": admin.create_key("globex", "read,write").secret,
            "acme_read": admin.create_key("acme", "read").secret,
            "acme_admin": admin.create_key("acme", "admin").secret,
            "globex_admin": admin.create_key("globex", "admin").secret,
        }
        app = create_app(settings, memory=memory, admin=admin)
        with TestClient(app) as client:
            yield Api(client, admin, memory, keys)
    admin.close()


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    yield from make_api(tmp_path)
