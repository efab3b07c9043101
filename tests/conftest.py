"""Shared fixtures: every store backend behind one parametrized fixture, and a fast test embedder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memlane import Config, Memory
from memlane.embedding.fake import HashEmbedder

BACKENDS = ["sqlite-memory", "sqlite-file", "sqlite-qdrant-local"]


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
    raise AssertionError(kind)


@pytest.fixture(params=BACKENDS)
def memory(request: pytest.FixtureRequest, tmp_path: Path, config: Config) -> Iterator[Memory]:
    m = open_backend(request.param, tmp_path, config)
    yield m
    m.close()
