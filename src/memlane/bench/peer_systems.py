"""The systems ``memlane bench peers`` compares, behind one small interface: add texts, search, close.

Each peer is configured for local use as its documentation describes, with its data in a temporary folder,
telemetry off and the network guarded (see ``memlane.bench.netguard``). Peer packages are imported only when
a peer is built; a missing one raises ``MissingDependencyError`` naming ``pip install 'memlane[bench]'``.
"""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from memlane.bench.common import forget_queries
from memlane.config import Config
from memlane.embedding import make_embedder
from memlane.embedding._common import minilm_dir
from memlane.embedding.base import Embedder
from memlane.engine import Memory
from memlane.errors import MissingDependencyError
from memlane.models import Message

log = logging.getLogger(__name__)

SYSTEMS: tuple[str, ...] = ("memlane", "bm25s", "chroma", "lancedb", "mem0")
#: The PyPI package behind each peer (memlane is this project).
PACKAGES: dict[str, str] = {"bm25s": "bm25s", "chroma": "chromadb", "lancedb": "lancedb", "mem0": "mem0ai"}
_MODULES: dict[str, str] = {"bm25s": "bm25s", "chroma": "chromadb", "lancedb": "lancedb", "mem0": "mem0"}
T0 = datetime(2023, 1, 1, tzinfo=UTC)


def require(system: str) -> Any:
    """The top-level module of a peer, or ``MissingDependencyError`` if its package is not installed."""
    try:
        return importlib.import_module(_MODULES[system])
    except ImportError:
        raise MissingDependencyError(f"the {system} peer benchmark", "bench") from None


def available(system: str) -> bool:
    """Whether a system can be built here (memlane always can)."""
    if system == "memlane":
        return True
    try:
        require(system)
    except MissingDependencyError:
        return False
    return True


def version(system: str) -> str:
    """The installed version of a system's package."""
    return metadata.version("memlane" if system == "memlane" else PACKAGES[system])


class System(Protocol):
    """One system under test, holding texts in user scopes."""

    name: str
    setup: str

    def add(self, user: str, ids: Sequence[str], texts: Sequence[str]) -> None:
        """Store texts (with their ids) in a user's scope."""

    def finish(self) -> None:
        """Whatever must happen after the last add before searching (index builds); part of ingest time."""

    def search(self, user: str, query: str, k: int) -> list[tuple[str, str]]:
        """The ``k`` best ``(id, text)`` of a user's scope for a query, best first."""

    def close(self) -> None:
        """Release everything."""


class MemlaneSystem:
    """memlane: ``Memory`` on a SQLite file, the default embedder and retrieval preset (or those given)."""

    name = "memlane"

    def __init__(self, folder: Path, *, embedder: str | None = None, preset_name: str | None = None) -> None:
        config = Config.from_env()
        self._memory = Memory(folder / "memlane.db", embedder=embedder or config.embedder, config=config)
        self._memory.embedder.embed(["warm up"])
        self._preset = preset_name
        self._n = 0
        self._users: dict[str, None] = {}
        self.setup = (
            f"Memory(file), embedder {embedder or config.embedder}, preset {preset_name or config.preset}, "
            f"infer {'on' if config.infer else 'off'}"
        )

    def add(self, user: str, ids: Sequence[str], texts: Sequence[str]) -> None:
        msgs = []
        for rid, text in zip(ids, texts, strict=True):
            msgs.append(Message(content=text, metadata={"rid": rid}, timestamp=T0 + timedelta(minutes=self._n)))
            self._n += 1
        self._memory.add(msgs, user_id=user)
        self._users.setdefault(user)

    def finish(self) -> None:
        # A scope's vector index is opened by its first search, and a scope past exact_below (50k) gets its HNSW
        # graph on a background thread: waited for here, so that it counts in ingest, as LanceDB's and bm25s's index
        # builds do.
        for user in self._users:
            self._memory.search("index", user_id=user, top_k=1, preset_name=self._preset)
        self._memory.wait_for_index()

    def forget_queries(self) -> None:
        forget_queries(self._memory.embedder)

    def search(self, user: str, query: str, k: int) -> list[tuple[str, str]]:
        hits = self._memory.search(query, user_id=user, top_k=k, preset_name=self._preset)
        return [(str(h.memory.metadata["rid"]), h.memory.text) for h in hits]

    def close(self) -> None:
        self._memory.close()


class Bm25sSystem:
    """bm25s: one BM25 index per user scope, English stopwords, built after the last add (the BM25 floor)."""

    name = "bm25s"
    setup = "bm25s.BM25() per user scope, bm25s.tokenize(stopwords='en'), default k1/b"

    def __init__(self, folder: Path) -> None:
        self._bm25s = require("bm25s")
        self._docs: dict[str, tuple[list[str], list[str]]] = {}
        self._index: dict[str, Any] = {}

    def add(self, user: str, ids: Sequence[str], texts: Sequence[str]) -> None:
        got = self._docs.setdefault(user, ([], []))
        got[0].extend(ids)
        got[1].extend(texts)
        self._index.pop(user, None)

    def finish(self) -> None:
        for user, (_, texts) in self._docs.items():
            if user not in self._index:
                index = self._bm25s.BM25()
                index.index(self._bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
                self._index[user] = index

    def search(self, user: str, query: str, k: int) -> list[tuple[str, str]]:
        ids, texts = self._docs[user]
        tokens = self._bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        docs, _ = self._index[user].retrieve(tokens, k=min(k, len(ids)), show_progress=False)
        return [(ids[int(i)], texts[int(i)]) for i in docs[0]]

    def close(self) -> None:
        self._index.clear()


class SharedEmbedding:
    """A peer-side embedding function backed by memlane's bundled MiniLM (the same weights and runtime)."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    def documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [row.tolist() for row in self._embedder.embed(list(texts))]

    def query(self, text: str) -> list[float]:
        vector: list[float] = self._embedder.embed_query(text).tolist()
        return vector

    def forget_queries(self) -> None:
        forget_queries(self._embedder)


def _shared_embedding(embedder_name: str | None) -> SharedEmbedding:
    """The embedder of that name (MiniLM by default), so that a peer embeds with exactly what memlane uses."""
    embedder = make_embedder(embedder_name or "minilm")
    embedder.embed(["warm up"])
    return SharedEmbedding(embedder)


class ChromaSystem:
    """Chroma: ``PersistentClient`` in a temp folder, one cosine collection, a local MiniLM embedding function."""

    name = "chroma"
    setup = (
        "chromadb.PersistentClient(path=tmp, Settings(anonymized_telemetry=False)), one collection with "
        "hnsw space=cosine, a custom EmbeddingFunction running memlane's embedder (MiniLM unless --embedder names "
        "another), scope by where={'user_id': U}"
    )

    def __init__(self, folder: Path, *, embedder: str | None = None) -> None:
        chromadb = require("chroma")
        settings = importlib.import_module("chromadb.config").Settings(anonymized_telemetry=False)
        ef_base = importlib.import_module("chromadb.api.types").EmbeddingFunction
        shared = _shared_embedding(embedder)

        class MiniLMFunction(ef_base):  # type: ignore[misc,valid-type]
            def __init__(self) -> None:
                return None

            def __call__(self, input: Sequence[str]) -> list[Any]:  # chroma's parameter name
                return shared.documents(input)

            @staticmethod
            def name() -> str:
                return "memlane-bundled-minilm"

            def get_config(self) -> dict[str, Any]:
                return {}

            @staticmethod
            def build_from_config(config: dict[str, Any]) -> MiniLMFunction:
                return MiniLMFunction()

        self._client = chromadb.PersistentClient(path=str(folder / "chroma"), settings=settings)
        self._collection = self._client.get_or_create_collection(
            "bench", embedding_function=MiniLMFunction(), metadata={"hnsw:space": "cosine"}
        )
        self._max_batch = int(self._client.get_max_batch_size())

    def add(self, user: str, ids: Sequence[str], texts: Sequence[str]) -> None:
        for start in range(0, len(ids), self._max_batch):
            chunk = slice(start, start + self._max_batch)
            self._collection.add(
                ids=list(ids[chunk]),
                documents=list(texts[chunk]),
                metadatas=[{"user_id": user}] * len(ids[chunk]),
            )

    def finish(self) -> None:
        return None

    def search(self, user: str, query: str, k: int) -> list[tuple[str, str]]:
        res = self._collection.query(query_texts=[query], n_results=k, where={"user_id": user})
        return list(zip(res["ids"][0], res["documents"][0], strict=True))

    def close(self) -> None:
        self._collection = None
        self._client = None


class LanceDBSystem:
    """LanceDB: a local table with our MiniLM vectors, its native full-text index, hybrid search + RRF reranker."""

    name = "lancedb"
    setup = (
        "lancedb.connect(tmp), one table (id, user_id, text, vector[384]) with vectors from memlane's embedder (the bundled MiniLM "
        "unless --embedder names another), "
        "create_fts_index('text', with_position=True) (native, default tokenizer), "
        "search(query_type='hybrid').vector(v).text(q).where(user_id=U, prefilter).rerank(RRFReranker())"
    )

    def __init__(self, folder: Path, *, embedder: str | None = None) -> None:
        self._lancedb = require("lancedb")
        self._pa = importlib.import_module("pyarrow")
        self._rrf = importlib.import_module("lancedb.rerankers").RRFReranker()
        self._embed = _shared_embedding(embedder)
        self._db = self._lancedb.connect(str(folder / "lancedb"))
        self._table: Any = None

    def add(self, user: str, ids: Sequence[str], texts: Sequence[str]) -> None:
        vectors = self._embed.documents(texts)
        pa = self._pa
        batch = pa.table(
            {
                "id": pa.array(list(ids), pa.string()),
                "user_id": pa.array([user] * len(ids), pa.string()),
                "text": pa.array(list(texts), pa.string()),
                "vector": pa.array(vectors, pa.list_(pa.float32(), 384)),
            }
        )
        if self._table is None:
            self._table = self._db.create_table("bench", data=batch)
        else:
            self._table.add(batch)

    def finish(self) -> None:
        # Positions are needed for phrase queries: a question with a quoted title is one.
        self._table.create_fts_index("text", replace=True, with_position=True)

    def forget_queries(self) -> None:
        self._embed.forget_queries()

    def search(self, user: str, query: str, k: int) -> list[tuple[str, str]]:
        rows = (
            self._table.search(query_type="hybrid")
            .vector(self._embed.query(query))
            .text(query)
            .where(f"user_id = {json.dumps(user)}".replace('"', "'"), prefilter=True)
            .rerank(self._rrf)
            .limit(k)
            .to_list()
        )
        return [(str(r["id"]), str(r["text"])) for r in rows]

    def close(self) -> None:
        self._table = None


class Mem0System:
    """mem0 open source: ``Memory.from_config`` with its default local vector store (Qdrant on a local path),
    the HuggingFace embedder on the bundled MiniLM folder, and raw messages stored with ``infer=False``.

    mem0 requires an LLM configuration even when ``infer=False``; an OpenAI-compatible client pointed at a closed
    loopback port is configured and is never called (the network guard would record any attempt).
    """

    name = "mem0"
    setup = (
        "mem0.Memory.from_config: vector_store qdrant (its default) at a temp path, embedder huggingface with "
        "model=<bundled all-MiniLM-L6-v2 folder>, llm openai at 127.0.0.1:9 (never called), "
        "add(..., infer=False) per message, search(filters={'user_id': U}, threshold=0.0)"
    )

    def __init__(self, folder: Path) -> None:
        mem0 = require("mem0")
        config = {
            "vector_store": {
                "provider": "qdrant",
                "config": {"collection_name": "bench", "path": str(folder / "qdrant"), "embedding_model_dims": 384},
            },
            "embedder": {"provider": "huggingface", "config": {"model": str(minilm_dir()), "embedding_dims": 384}},
            "llm": {
                "provider": "openai",
                "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1", "model": "unused"},
            },
            "history_db_path": str(folder / "history.db"),
        }
        self._memory = mem0.Memory.from_config(config)
        self._memory.embedding_model.embed("warm up", "add")

    def add(self, user: str, ids: Sequence[str], texts: Sequence[str]) -> None:
        for rid, text in zip(ids, texts, strict=True):
            self._memory.add([{"role": "user", "content": text}], user_id=user, infer=False, metadata={"rid": rid})

    def finish(self) -> None:
        return None

    def search(self, user: str, query: str, k: int) -> list[tuple[str, str]]:
        res = self._memory.search(query, filters={"user_id": user}, top_k=k, threshold=0.0)
        return [(str(r["metadata"]["rid"]), str(r["memory"])) for r in res["results"]]

    def close(self) -> None:
        self._memory = None


def build_setup(system: str) -> str:
    """How a system is set up, without building it."""
    classes: dict[str, Any] = {"memlane": MemlaneSystem, "bm25s": Bm25sSystem, "chroma": ChromaSystem,
                               "lancedb": LanceDBSystem, "mem0": Mem0System}  # fmt: skip
    if system == "memlane":
        infer = "on" if Config.from_env().infer else "off"
        return f"Memory(file), the default embedder and retrieval preset, infer {infer} (MEMLANE_INFER)"
    return str(classes[system].setup)


def build(system: str, folder: Path, *, embedder: str | None = None) -> System:
    """The system called ``system``, its data under ``folder``."""
    if system == "memlane":
        return MemlaneSystem(folder, embedder=embedder)
    if system == "bm25s":
        return Bm25sSystem(folder)
    if system == "chroma":
        return ChromaSystem(folder, embedder=embedder)
    if system == "lancedb":
        return LanceDBSystem(folder, embedder=embedder)
    if system == "mem0":
        return Mem0System(folder)
    raise MissingDependencyError(f"unknown system {system!r}", "bench")
