"""``memlane mcp``, ``memlane worker`` and ``memlane serve`` open a store URL given to ``--db`` as that URL (not folded into a path)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

import memlane.cli.mcp
import memlane.cli.worker
from memlane import Memory
from memlane.cli import app

runner = CliRunner()


class _Opened(Memory):
    """A Memory that records where it was opened, then stops the command (a worker loops until interrupted)."""

    seen: ClassVar[list[str]] = []

    def __enter__(self) -> Memory:
        _Opened.seen.append(self.location)
        raise KeyboardInterrupt


@pytest.fixture
def url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)  # a folded path ('sqlite:/...') would land here, relative to the working directory
    monkeypatch.setenv("MEMLANE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMLANE_EMBEDDER", "hash")
    monkeypatch.delenv("MEMLANE_DB", raising=False)
    monkeypatch.delenv("MEMLANE_BROKER_URL", raising=False)
    _Opened.seen = []
    return f"sqlite:///{tmp_path / 'store' / 'm.db'}"


def _opened_at(url: str) -> None:
    assert len(_Opened.seen) == 1
    assert Path(_Opened.seen[0]).resolve() == Path(url.removeprefix("sqlite://")).resolve()
    assert not Path("sqlite:").exists()


def test_worker_opens_a_store_url(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memlane.cli.worker, "Memory", _Opened)
    result = runner.invoke(app, ["worker", "--db", url])
    assert result.exit_code == 0, result.output
    _opened_at(url)


def test_mcp_opens_a_store_url(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    served: list[Any] = []

    class _Served(Memory):
        def __enter__(self) -> Memory:
            _Opened.seen.append(self.location)
            return self

    monkeypatch.setattr(memlane.cli.mcp, "Memory", _Served)
    pytest.importorskip("mcp")
    monkeypatch.setattr("memlane.mcp.server.serve", lambda memory, scope, **kw: served.append(kw))
    result = runner.invoke(app, ["mcp", "--db", url])
    assert result.exit_code == 0, result.output
    assert served and served[0]["transport"] == "stdio"
    _opened_at(url)


def test_serve_is_given_a_store_url(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uvicorn = pytest.importorskip("uvicorn")
    import memlane.server

    settings: list[Any] = []
    monkeypatch.setattr(memlane.server, "create_app", lambda s: settings.append(s))
    monkeypatch.setattr(uvicorn, "run", lambda *a, **kw: None)
    result = runner.invoke(app, ["serve", "--db", url, "--data-dir", str(tmp_path / "srv")])
    assert result.exit_code == 0, result.output
    assert settings and settings[0].store == url
