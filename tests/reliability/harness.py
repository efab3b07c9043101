"""The parent side of the fault-injection and multi-process suites: start writer processes, SIGKILL them at random,
read their acknowledgements, and check a reopened store (acknowledged writes whole and searchable, deleted text
nowhere, integrity checks clean)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memlane import Memory
from memlane.config import PRESETS
from memlane.models import JobState, MemoryKind
from tests.reliability.children import open_memory

ROOT = Path(__file__).resolve().parents[2]
TYPED = [k.value for k in MemoryKind if k is not MemoryKind.MESSAGE]


def child_env() -> dict[str, str]:
    """The environment of a writer: this interpreter's import path, so it runs the memlane under test."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *[p for p in sys.path if p]])
    return env


def spawn(workload: str, db: Path, acks: Path, seed: int, arg: str = "") -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.children", workload, str(db), str(acks), str(seed), arg],
        cwd=ROOT,
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def read_acks(path: Path) -> list[dict[str, Any]]:
    """Every complete acknowledgement line (a line cut by the kill is not an acknowledgement)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.endswith("\n"):
            out.append(json.loads(line))
    return out


def wait_ready(proc: subprocess.Popen[bytes], acks: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not read_acks(acks):
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise AssertionError(f"writer exited with {proc.returncode} before it was ready:\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("writer did not get ready")
        time.sleep(0.01)


def wait_acks(proc: subprocess.Popen[bytes], acks: Path, n: int, timeout: float = 120.0) -> None:
    """Wait until the writer acknowledged ``n`` lines (or finished)."""
    deadline = time.monotonic() + timeout
    while len(read_acks(acks)) < n and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)


def kill_after(proc: subprocess.Popen[bytes], seconds: float) -> bool:
    """SIGKILL the writer after ``seconds`` (and reap it); False if it had already finished on its own."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.005)
    if proc.poll() is not None:
        if proc.returncode != 0:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise AssertionError(f"writer failed with {proc.returncode}:\n{err}")
        return False
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return True


# -- checks ------------------------------------------------------------------------------------------
def integrity(db: Path) -> None:
    """``PRAGMA integrity_check`` and the FTS5 integrity check both pass."""
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')")


def text_columns(conn: sqlite3.Connection, *, with_entities: bool = False) -> list[tuple[str, str]]:
    """(table, column) of every text-bearing column of every table, FTS tables included.

    The per-user entity alias table is left out unless asked for: ``delete`` of one memory keeps the names its
    enrichment learnt (``delete_all`` removes them; see docs/reliability.md).
    """
    out = []
    tables = [
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    ]
    for table in tables:
        if table.startswith("memories_fts_"):  # the FTS shadow tables: checked through the FTS table itself
            continue
        if table == "entities" and not with_entities:
            continue
        for col in conn.execute(f"PRAGMA table_info('{table}')"):
            if str(col[2]).upper() in ("TEXT", "", "BLOB") and not (table == "vectors" and col[1] == "vec"):
                out.append((table, str(col[1])))
    return out


def stored_anywhere(db: Path, word: str, *, with_entities: bool = False) -> list[str]:
    """Where ``word`` is still stored: any text column of any table, or the FTS index."""
    hits = []
    with sqlite3.connect(db) as conn:
        for table, col in text_columns(conn, with_entities=with_entities):
            if table == "vectors_next" and col == "vec":
                continue
            n = conn.execute(f'SELECT count(*) FROM "{table}" WHERE CAST("{col}" AS TEXT) LIKE ?', (f"%{word}%",))
            if n.fetchone()[0]:
                hits.append(f"{table}.{col}")
        n = conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (f'"{word}"',)).fetchone()[0]
        if n:
            hits.append("memories_fts (index)")
    return hits


def findable(memory: Memory, word: str, users: list[str]) -> list[str]:
    """Which searches (every preset, for each user) return a memory containing ``word``."""
    found = []
    for user in users:
        for preset in PRESETS:
            for hit in memory.search(word, user_id=user, top_k=20, preset_name=preset):
                if word.lower() in hit.memory.text.lower():
                    found.append(f"{preset} as {user}")
    return found


def user_rows(db: Path, user: str) -> dict[str, int]:
    """Rows left for a user in every table that has a ``user_id`` column."""
    out = {}
    with sqlite3.connect(db) as conn:
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            cols = {c[1] for c in conn.execute(f"PRAGMA table_info('{table}')")}
            if "user_id" in cols and table != "scope_versions":  # a counter that keeps caches honest, no content
                n = conn.execute(f'SELECT count(*) FROM "{table}" WHERE user_id = ?', (user,)).fetchone()[0]
                if n:
                    out[table] = int(n)
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'vectors_next'").fetchone():
            orphans = conn.execute("SELECT count(*) FROM vectors_next WHERE pk NOT IN (SELECT pk FROM memories)")
            if orphans.fetchone()[0]:
                out["vectors_next (orphans)"] = 1
    return out


@dataclass
class Report:
    """What one trial found: acknowledged writes checked, and every loss or leak (must stay empty)."""

    acked: int = 0
    deletes: int = 0
    killed: bool = True
    losses: list[str] = field(default_factory=list)


def check_store(db: Path, acks: list[dict[str, Any]], *, embedder: str = "hash") -> Report:
    """Reopen the store (as the next process would), let it finish the jobs left over, and check everything."""
    report = Report()
    integrity(db)
    with open_memory(str(db), embedder=embedder) as memory:
        memory.flush(timeout=120)
        deleted = {a["user"] for a in acks if a["op"] == "delete_all"}
        # A victim whose delete_all was cut by the kill may be gone (it is one transaction): whole or nothing.
        for user in {a["user"] for a in acks if a["op"] == "victim-add"} - deleted:
            if not user_rows(db, user):
                words = [a["word"] for a in acks if a.get("user") == user and "word" in a]
                acks = [*acks, {"op": "delete_all", "user": user, "words": words}]
                deleted.add(user)
        for a in acks:
            if "ids" not in a or a["user"] in deleted:
                continue
            report.acked += 1
            report.losses += _check_add(memory, db, a)
        for a in acks:
            if a["op"] != "delete_all":
                continue
            report.deletes += 1
            left = user_rows(db, a["user"])
            if left:
                report.losses.append(f"{a['user']} deleted but rows remain: {left}")
            for word in a["words"]:
                where = stored_anywhere(db, word, with_entities=True) + findable(memory, word, [a["user"], "keeper"])
                if where:
                    report.losses.append(f"deleted word {word} of {a['user']} still found in {where}")
        stuck = [j for u in {a["user"] for a in acks if "user" in a} for j in memory.jobs(user_id=u)]
        stuck = [j for j in stuck if j.state in (JobState.QUEUED, JobState.RUNNING)]
        if stuck:
            report.losses.append(f"{len(stuck)} jobs never finished")
        report.losses += contradictions(db) + duplicate_typed(db)
    integrity(db)
    return report


def _check_add(memory: Memory, db: Path, a: dict[str, Any]) -> list[str]:
    losses = []
    user = a["user"]
    got = memory._store.get_many(user, a["ids"])
    for mid, text in zip(a["ids"], a["texts"], strict=True):
        if mid not in got or got[mid].text != text:
            losses.append(f"acknowledged message {mid} of {user} lost or changed")
    if losses:
        return losses
    with sqlite3.connect(db) as conn:
        marks = ", ".join("?" * len(a["ids"]))
        n = conn.execute(
            f"SELECT count(*) FROM vectors v JOIN memories m ON m.pk = v.pk WHERE m.id IN ({marks})", a["ids"]
        ).fetchone()[0]
        if n != len(a["ids"]):
            losses.append(f"acknowledged messages of {user} lack vectors ({n} of {len(a['ids'])})")
        sourced = conn.execute(
            "SELECT count(*) FROM memories m WHERE m.user_id = ? AND m.kind != 'message' AND EXISTS "
            "(SELECT 1 FROM json_each(m.sources) s WHERE json_extract(s.value, '$.memory_id') = ?)",
            (user, a["ids"][0]),
        ).fetchone()[0]
    hits = memory.search(a["word"], user_id=user, top_k=5, preset_name="bm25")
    if a["ids"][1] not in [h.memory.id for h in hits]:
        losses.append(f"acknowledged message {a['ids'][1]} of {user} not found by its word {a['word']}")
    if a.get("infer", True) and not a["duplicates"] and not sourced:
        losses.append(f"no memory was extracted from acknowledged message {a['ids'][0]} of {user}")
    return losses


def contradictions(db: Path) -> list[str]:
    """Users with more than one current fact for the same subject and attribute (say, two residences)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT user_id, json_extract(metadata, '$.subject') s, json_extract(metadata, '$.attribute') a, "
            "count(*) FROM memories WHERE kind != 'message' AND valid_until IS NULL AND a IS NOT NULL "
            "GROUP BY user_id, s, a HAVING count(*) > 1"
        ).fetchall()
    return [f"{r[0]} has {r[3]} current facts for ({r[1]}, {r[2]})" for r in rows]


def duplicate_typed(db: Path) -> list[str]:
    """Typed memories stored twice (same user and content hash, both current)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT user_id, content_hash, count(*) FROM memories WHERE kind != 'message' AND valid_until IS NULL "
            "GROUP BY user_id, content_hash HAVING count(*) > 1"
        ).fetchall()
    return [f"{r[0]} holds {r[2]} copies of one typed memory" for r in rows]


def job_runs(acks: list[dict[str, Any]]) -> Counter[str]:
    """How many times each job's extraction ran to completion, over every process's acknowledgements."""
    return Counter(a["job"] for a in acks if a["op"] == "ran")
