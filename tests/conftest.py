"""Shared fixtures: every store backend behind one parametrized fixture, and a fast test embedder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from memlane import Config, Memory
from memlane.embedding.fake import HashEmbedder

# No per-example time limit: speed is measured by `memlane bench`, never by a test, and a loaded 2-core machine can
# take longer than hypothesis's default 200 ms on any example.
settings.register_profile("memlane", deadline=None)
settings.load_profile("memlane")

BACKENDS = ["sqlite-memory", "sqlite-file", "sqlite-qdrant-local", "postgres"]


@pytest.fixture
def config(tmp_path: Path) -> Config:
    # The suites test the message path; extraction tests turn `infer` on explicitly.
    return Config(data_dir=tmp_path / "home", embedder="hash", infer=False)


def open_backend(kind: str, tmp_path: Path, config: Config) -> Memory:
    if kind == "sqlite-memory":
        return Memory(":memory:", embedder=HashEmbedder(), config=config)
    if kind == "sqlite-file":
        return Memory(tmp_path / "store.db", embedder=HashEmbedder(), config=config)
    if kind == "sqlite-qdrant-local":  # records and text in SQLite, vectors in Qdrant's local mode
        pytest.importorskip("qdrant_client", reason="memlane[qdrant] is not installed: pip install -e '.[dev]'")
        return Memory(f"sqlite:///{tmp_path / 'store.db'}?vectors=qdrant+local", embedder=HashEmbedder(), config=config)
    if kind == "postgres":  # a real server (tests/pg_server.py), its test database emptied
        from tests.pg_server import postgres_url

        return Memory(postgres_url(), embedder=HashEmbedder(), config=config)
    raise AssertionError(kind)


@pytest.fixture(params=BACKENDS)
def memory(request: pytest.FixtureRequest, tmp_path: Path, config: Config) -> Iterator[Memory]:
    m = open_backend(request.param, tmp_path, config)
    yield m
    m.close()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say in the test log which PostgreSQL the PostgreSQL backend's tests ran against (if any ran)."""
    from tests.pg_server import STARTED

    for line in STARTED:
        terminalreporter.write_line(f"PostgreSQL for the tests: {line}")
