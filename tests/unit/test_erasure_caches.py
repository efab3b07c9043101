"""Erased text does not stay in the process's caches: enrichment's and the query vectors' are emptied on erasure."""

from __future__ import annotations

from pathlib import Path

from memlane import Config, Memory
from memlane.embedding.cache import CachedQueryEmbedder
from memlane.embedding.fake import HashEmbedder
from memlane.enrich import temporal
from memlane.enrich.cues import ascii_words
from memlane.enrich.entities import canonical

SECRET = "Yesterday Marisol told me her PIN is 4471"


def _cached() -> dict[str, int]:
    return {
        "words": ascii_words.cache_info().currsize,
        "names": canonical.cache_info().currsize,
        "phrases": temporal._resolve.cache_info().currsize,
    }


def _words_cached(text: str) -> bool:
    hits = ascii_words.cache_info().hits
    ascii_words(text)
    return ascii_words.cache_info().hits > hits


def test_delete_all_empties_the_caches_that_held_the_text(tmp_path: Path) -> None:
    embedder = CachedQueryEmbedder(HashEmbedder())
    config = Config(data_dir=tmp_path / "home", infer=False, background_worker=False)
    with Memory(tmp_path / "m.db", embedder=embedder, config=config) as m:
        m.add(SECRET, user_id="ana", session_id="s")
        m.search("what is Marisol's PIN?", user_id="ana")
        assert embedder.misses and all(_cached().values())  # the text reached every cache
        m.delete_all(user_id="ana")
        assert _cached() == {"words": 0, "names": 0, "phrases": 0}
        assert embedder.embed_query("what is Marisol's PIN?") is not None and embedder.hits == 0


def test_delete_and_update_empty_them_too(tmp_path: Path) -> None:
    config = Config(data_dir=tmp_path / "home", infer=False, background_worker=False)
    with Memory(tmp_path / "m.db", embedder=HashEmbedder(), config=config) as m:
        first = m.add(SECRET, user_id="ana", session_id="s").items[0].id
        m.update(first, user_id="ana", text="Marisol changed her PIN")
        assert not _words_cached(SECRET)
        m.add("Tomorrow Marisol flies to Lima", user_id="ana", session_id="s")
        m.delete(first, user_id="ana")
        assert _cached() == {"words": 0, "names": 0, "phrases": 0}
