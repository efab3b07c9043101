"""A server that opens its own store loads the embedder's model before it serves: the static model's one-off
distillation (about a minute on two cores) used to run inside the first request, whose client timed out."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memlane.embedding.fake import HashEmbedder
from memlane.server.app import create_app
from memlane.server.service import ServerSettings


def test_the_model_is_loaded_at_startup_before_any_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[int] = []
    monkeypatch.setattr(HashEmbedder, "load", lambda self: loaded.append(self.dim), raising=False)
    settings = ServerSettings(data_dir=tmp_path, store=tmp_path / "m.db", embedder="hash:16", insecure_dev=True)
    app = create_app(settings)
    assert loaded == []
    with TestClient(app) as client:
        assert loaded == [16]  # during start-up, before the first request
        assert client.get("/health").status_code == 200
    assert loaded == [16]
