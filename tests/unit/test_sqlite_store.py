"""SQLite-specific behaviour: file checks, migrations, model identity, atomic writes."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

import memlane.store.sqlite.text as sqlite_text
from memlane import Config, CorruptStoreError, EmbedderMismatchError, Memory, Message, SchemaError, StoreError
from memlane.embedding.fake import HashEmbedder


def test_garbage_file_is_a_clear_error(tmp_path: Path, config: Config) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(CorruptStoreError, match=r"junk\.db"):
        Memory(path, embedder=HashEmbedder(), config=config)


def test_foreign_sqlite_file_is_refused_untouched(tmp_path: Path, config: Config) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(CorruptStoreError, match="another application"):
        Memory(path, embedder=HashEmbedder(), config=config)
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"invoices"}


def test_migrations_are_recorded_and_reopen_is_idempotent(tmp_path: Path, config: Config) -> None:
    path = tmp_path / "m.db"
    Memory(path, embedder=HashEmbedder(), config=config).close()
    with Memory(path, embedder=HashEmbedder(), config=config) as m:
        m.add("still here", user_id="u")
    with sqlite3.connect(path) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM migrations")]
        assert names == [
            "0001_initial",
            "0002_enrichment",
            "0003_feedback",
            "0004_lifecycle",
            "0005_fts_context",
            "0006_fts_context_refresh",
            "0007_vector_log",
            "0008_job_leases",
            "0009_validity",
            "0010_job_dispatch",
            "0011_graph",
            "0012_security",
            "0013_vector_mirror",
            "0014_fact_log",
            "0015_drop_redundant_session_index",
            "0016_entity_versions",
            "0017_alias_sources",
            "0018_passages",
            "0019_timeline",
            "0020_reply_context",
        ]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_unknown_newer_migration_is_refused(tmp_path: Path, config: Config) -> None:
    path = tmp_path / "new.db"
    Memory(path, embedder=HashEmbedder(), config=config).close()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO migrations VALUES ('9999_from_the_future', 'now')")
    with pytest.raises(SchemaError, match="9999_from_the_future"):
        Memory(path, embedder=HashEmbedder(), config=config)


def test_other_embedder_names_reindex_and_reindex_fixes_it(tmp_path: Path, config: Config) -> None:
    path = tmp_path / "e.db"
    with Memory(path, embedder=HashEmbedder(dim=64), config=config) as m:
        m.add(["the red kite soars", "a bowl of ramen"], user_id="u")
    with Memory(path, embedder=HashEmbedder(dim=32), config=config) as m:
        with pytest.raises(EmbedderMismatchError, match="memlane reindex"):
            m.search("kite", user_id="u")
        with pytest.raises(EmbedderMismatchError):
            m.add("more", user_id="u")
        assert m.reindex() == 2
        assert m.stats().embedder == HashEmbedder(dim=32).identity
        assert m.search("red kite", user_id="u", top_k=1)[0].memory.text == "the red kite soars"


def test_failed_write_leaves_nothing_behind(tmp_path: Path, config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory(tmp_path / "a.db", embedder=HashEmbedder(), config=config) as m:
        m.add("before", user_id="u")
        real = sqlite_text.scope_token
        calls = {"n": 0}

        def flaky(user_id: str) -> str:
            calls["n"] += 1
            if calls["n"] == 3:
                raise sqlite3.OperationalError("disk I/O error (simulated)")
            return real(user_id)

        monkeypatch.setattr(sqlite_text, "scope_token", flaky)
        with pytest.raises(StoreError, match="simulated"):
            m.add(["one", "two", "three"], user_id="u")
        monkeypatch.setattr(sqlite_text, "scope_token", real)
        assert [it.text for it in m.list(user_id="u")] == ["before"]
        assert [h.memory.text for h in m.search("one two three before", user_id="u")] == ["before"]


def test_second_connection_sees_writes(tmp_path: Path, config: Config) -> None:
    path = tmp_path / "shared.db"
    with (
        Memory(path, embedder=HashEmbedder(), config=config) as a,
        Memory(path, embedder=HashEmbedder(), config=config) as b,
    ):
        a.add("first note about kites", user_id="u")
        assert b.search("kites", user_id="u")[0].memory.text == "first note about kites"
        b.add("second note about kites", user_id="u")
        assert {h.memory.text for h in a.search("kites", user_id="u")} == {
            "first note about kites",
            "second note about kites",
        }


def test_embedding_cache_reuses_vectors(tmp_path: Path, config: Config) -> None:
    class Counting(HashEmbedder):
        calls = 0

        def embed(self, texts):  # type: ignore[no-untyped-def]
            Counting.calls += len(texts)
            return super().embed(texts)

    with Memory(tmp_path / "c.db", embedder=Counting(), config=config) as m:
        m.add("warm up: the classifiers embed their label prototypes once", user_id="w")
        Counting.calls = 0
        m.add(["same words", "same words", "other words"], user_id="u")
        assert Counting.calls == 2
        m.add("same words", user_id="v")
        assert Counting.calls == 2


def test_a_store_of_the_first_schema_is_upgraded_with_positions(tmp_path: Path, config: Config) -> None:
    from memlane.store.sqlite.schema import APPLICATION_ID, MIGRATIONS

    path = tmp_path / "old.db"
    name, sql = MIGRATIONS[0]
    conn = sqlite3.connect(path)
    for statement in sql.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    conn.execute("INSERT INTO migrations VALUES (?, datetime('now'))", (name,))
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    rows = [("a", "s", "first", 1), ("b", "s", "second", 2), ("c", "s", "third", 2), ("d", "t", "elsewhere", 1)]
    for mid, session, text, ts in rows:
        conn.execute(
            "INSERT INTO memories (id, user_id, session_id, kind, text, ts, created_at, updated_at, importance, "
            "confidence, content_hash, embed_hash) VALUES (?, 'u', ?, 'message', ?, ?, 0, 0, 0.5, 1.0, 'h', 'e')",
            (mid, session, text, ts),
        )
    conn.commit()
    conn.close()
    with Memory(path, embedder=HashEmbedder(), config=config) as m:
        items = m.list(user_id="u")
        assert [(it.text, it.position) for it in items] == [("first", 0), ("elsewhere", 0), ("second", 1), ("third", 2)]
        [added] = m.add("fourth", user_id="u", session_id="s").items
        assert added.position == 3


def test_sqlite_store_implements_every_capability(tmp_path: Path) -> None:
    from memlane.store import base
    from memlane.store.sqlite import SQLiteStore

    store = SQLiteStore(tmp_path / "caps.db")
    try:
        for capability in (
            base.RecordReader,
            base.RecordWriter,
            base.TextIndex,
            base.VectorStore,
            base.CandidateIndex,
            base.EntityIndex,
            base.ValidityIndex,
            base.FeedbackLog,
            base.HistoryLog,
            base.JobQueue,
            base.Archive,
            base.StoreInfo,
            base.Store,
        ):
            assert isinstance(store, capability), capability.__name__
    finally:
        store.close()


def test_upgrade_drops_words_of_turns_deleted_before_the_fix(tmp_path: Path, config: Config) -> None:
    path = tmp_path / "stale.db"
    said = ["My locker code is 7 quixotrel.", "Got it, I'll keep that in mind.", "Thanks"]
    turns = [Message(role=("user", "assistant")[i % 2], content=t) for i, t in enumerate(said)]  # replies: context
    with Memory(path, embedder=HashEmbedder(), config=config) as m:
        first = m.add(turns, user_id="u", session_id="s").items[0].id
    with sqlite3.connect(path) as conn:  # a delete as it was before: the next turn's context kept the words
        pk = conn.execute("SELECT pk FROM memories WHERE id = ?", (first,)).fetchone()[0]
        conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (pk,))
        conn.execute("DELETE FROM memories WHERE pk = ?", (pk,))
        conn.execute("DELETE FROM migrations WHERE name = '0006_fts_context_refresh'")
        stale = conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'quixotrel'").fetchone()[0]
        assert stale == 1
    with Memory(path, embedder=HashEmbedder(), config=config) as m:
        assert m.search("quixotrel", user_id="u", preset_name="bm25") == []
        assert [h.memory.text for h in m.search("thanks", user_id="u", preset_name="bm25")] == ["Thanks"]


_FULL_BM25 = (
    "SELECT m.id, -bm25(memories_fts, 1.0, 0.4, 0.0), m.pk, m.valid_until IS NULL FROM memories_fts "
    "JOIN memories m ON m.pk = memories_fts.rowid WHERE memories_fts MATCH ?"
)


@pytest.mark.parametrize("seed", range(4))
def test_top_k_bm25_and_completion_equal_full_scoring(tmp_path: Path, config: Config, seed: int) -> None:
    """Top-k BM25 plus the scores of chosen members equal scoring every match and sorting, and with one user in the
    file (where FTS5's whole-file statistics are that user's) every score is FTS5's own ``bm25()``.
    """
    from memlane.models import Filters
    from memlane.store.sqlite.text import fts_match

    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(30)]
    with Memory(tmp_path / "bm25.db", embedder=HashEmbedder(), config=config) as m:
        texts = list(dict.fromkeys(" ".join(rng.choices(vocab, k=rng.randint(1, 10))) for _ in range(400)))
        m.add(texts[:200], user_id="u", session_id="s")
        m.add(texts[200:], user_id="u", session_id="t")
        store = m._store
        conn = store._db.conn  # type: ignore[attr-defined]
        conn.execute("UPDATE memories SET valid_until = 1 WHERE user_id = 'u' AND pk % 13 = 0")
        ids = [r[0] for r in conn.execute("SELECT id FROM memories WHERE user_id = 'u'")]
        queries = [rng.sample(vocab, rng.randint(1, 4)) for _ in range(15)]
        alone = [store.text_search("u", terms, None, Filters(include_superseded=True)) for terms in queries]
        for terms, got in zip(queries, alone, strict=True):
            every = conn.execute(_FULL_BM25, (fts_match("u", terms),)).fetchall()
            fts = sorted(((r[0], r[1]) for r in every), key=lambda r: r[0])
            assert [i for i, _ in sorted(got)] == [i for i, _ in fts]
            assert [s for _, s in sorted(got)] == pytest.approx([s for _, s in fts], rel=1e-9)
        m.add(texts[:60], user_id="other", session_id="s")  # another scope in the same file changes nothing
        for terms, before in zip(queries, alone, strict=True):
            every_u = store.text_search("u", terms, None, Filters(include_superseded=True))
            assert every_u == before
            current = set(store.matching("u", ids, Filters()))
            for filters, rows in (
                (Filters(), [r for r in every_u if r[0] in current]),
                (Filters(include_superseded=True), every_u),
            ):
                for k in (1, 7, 40, 10_000):
                    assert store.text_search("u", terms, k, filters) == rows[:k]
                chosen = rng.sample(ids, 60)
                expected = {i: s for i, s in rows if i in set(chosen)}
                assert store.text_scores("u", terms, chosen, filters) == expected


def _module_imports() -> dict[str, set[str]]:
    """Each memlane module and the memlane modules it imports (in function bodies too)."""
    import ast

    import memlane

    root = Path(memlane.__file__).parent.parent
    found: dict[str, set[str]] = {}
    for path in (root / "memlane").rglob("*.py"):
        name = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):  # lazy imports too
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("memlane"):
                deps |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("memlane")}
        found[name] = deps
    return {m: {d for d in deps if d in found and d != m} for m, deps in found.items()}


def test_no_import_cycle_and_no_backend_outside_the_store_package() -> None:
    graph = _module_imports()
    for start in graph:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for dep in graph[node]:
                assert dep != start, f"import cycle: {' -> '.join([*path, dep])}"
                if dep not in path:
                    stack.append((dep, [*path, dep]))
    for module, deps in graph.items():
        if not module.startswith("memlane.store"):
            assert not {d for d in deps if d.startswith("memlane.store.sqlite")}, module


DOMAIN_PACKAGES = ("enrich", "graph", "structured", "retrieval", "lifecycle", "extraction", "answer", "services")


def test_store_and_records_stand_below_the_domain() -> None:
    """The store floor depends on records and the database only: no store or records module imports a domain
    package (its records live in ``memlane.records``), directly or in a function body.
    """
    graph = _module_imports()
    floor = [m for m in graph if m.startswith(("memlane.store", "memlane.records"))]
    assert any(m.startswith("memlane.store.sqlite") for m in floor) and "memlane.records.graph" in floor
    for module in floor:
        above = {d for d in graph[module] if d.split(".")[1] in DOMAIN_PACKAGES}
        assert not above, f"{module} imports {sorted(above)}"


def test_the_two_sql_backends_stand_side_by_side() -> None:
    """PostgreSQL and SQLite share what is written once through ``memlane.store.sql``, never each other's modules."""
    graph = _module_imports()
    for module, deps in graph.items():
        for mine, other in (
            ("memlane.store.postgres", "memlane.store.sqlite"),
            ("memlane.store.sqlite", "memlane.store.postgres"),
        ):
            if module.startswith(mine):
                assert not {d for d in deps if d.startswith(other)}, f"{module} imports {other}"
