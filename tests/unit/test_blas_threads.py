"""BLAS is held to ``Config.blas_threads`` while memlane's calls run, and given back afterwards."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from memlane import Config, Memory
from memlane.blas import blas_threads
from memlane.embedding.fake import HashEmbedder
from memlane.errors import ConfigError


def _blas_threads() -> int:
    return min(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")


def test_the_limit_holds_inside_and_is_given_back() -> None:
    before = _blas_threads()
    with blas_threads(1):
        assert _blas_threads() == 1
        with blas_threads(1):  # nested
            assert _blas_threads() == 1
        assert _blas_threads() == 1  # the outer block still holds it
    assert _blas_threads() == before
    with blas_threads(None):
        assert _blas_threads() == before


def test_memory_calls_run_under_the_configured_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    embedder = HashEmbedder()
    inner = embedder.embed_query

    def spy(text: str) -> np.ndarray:
        seen.append(_blas_threads())
        return inner(text)

    monkeypatch.setattr(embedder, "embed_query", spy)
    with Memory(tmp_path / "m.db", embedder=embedder, config=Config(data_dir=tmp_path, infer=False)) as m:
        m.add("I adopted a beagle", user_id="ana")
        m.search("beagle", user_id="ana")
    assert seen and set(seen) == {1}
    with pytest.raises(ConfigError, match="blas_threads"):
        Config(blas_threads=0)
    assert Config.from_env({"MEMLANE_BLAS_THREADS": "none"}).blas_threads is None
    assert Config.from_env({"MEMLANE_BLAS_THREADS": "2"}).blas_threads == 2
