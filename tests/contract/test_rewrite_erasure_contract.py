"""On every backend: an ``update`` that rewrites a memory's text erases what was derived from the old text (typed
memories drawn from it alone, their entities and relations) in the same write, as ``delete`` does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memlane import Config, Memory, MemoryKind, NotFoundError
from tests.conftest import BACKENDS, open_backend


@pytest.fixture(params=BACKENDS)
def memory(request: pytest.FixtureRequest, tmp_path: Path, config: Config) -> Iterator[Memory]:
    m = open_backend(request.param, tmp_path, config.with_(infer=True))
    yield m
    m.close()


def test_a_rewrite_leaves_no_derived_copy_of_the_old_text(memory: Memory) -> None:
    turn = memory.add("My brother Tom lives in Porto.", user_id="u").items[0]
    typed = [it for it in memory.list(user_id="u") if it.kind is not MemoryKind.MESSAGE]
    assert typed and memory.graph("Tom", user_id="u").relations  # the premise: facts and a relation were derived
    memory.update(turn.id, user_id="u", text="My wifi password was changed")
    assert [it.text for it in memory.list(user_id="u")] == ["My wifi password was changed"]
    with pytest.raises(NotFoundError):
        memory.graph("Tom", user_id="u")
    hits = memory.search("Tom brother Porto", user_id="u", top_k=10)
    assert [h.memory.id for h in hits] == [turn.id]
    assert "Tom" not in memory.context("who is the user's brother Tom?", user_id="u").text
