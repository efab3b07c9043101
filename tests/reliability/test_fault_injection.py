"""Fault injection: a writer process is SIGKILLed at a random moment of each workload (synchronous adds, queued
jobs, consolidation, reindex, import, delete_all); the reopened store must hold every acknowledged write whole and
searchable, nothing deleted may be found anywhere, and the integrity checks must pass.

The default suite runs one trial per workload; ``-m slow`` runs ``MEMLANE_FAULT_TRIALS`` (default 20) each.
"""

from __future__ import annotations

import os
import random
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.reliability import harness
from tests.reliability.children import conversation, open_memory

WORKLOADS = ["sync", "async", "consolidation", "delete_all", "reindex", "import"]
SLOW_TRIALS = int(os.environ.get("MEMLANE_FAULT_TRIALS", "20"))
PREFILL = 120


def prefill(db: Path, rng: random.Random) -> list[dict[str, Any]]:
    """Messages stored before the writer starts (for reindex), acknowledged like the writer's own."""
    acks = []
    with open_memory(str(db), infer=False) as memory:
        for i in range(PREFILL // 2):
            turns, word = conversation(rng)
            record = harness_record(memory.add(turns, user_id=f"p{i % 4}"), f"p{i % 4}", turns, word)
            acks.append(record)
    return acks


def harness_record(result: Any, user: str, turns: list[dict[str, str]], word: str) -> dict[str, Any]:
    return {
        "op": "prefill",
        "user": user,
        "ids": [it.id for it in result.items],
        "texts": [t["content"] for t in turns],
        "word": word,
        "job": None,
        "duplicates": [],
        "infer": False,
    }


def export_file(tmp: Path, rng: random.Random, n: int) -> tuple[Path, list[dict[str, Any]]]:
    """An export of ``n`` messages (with their words) made in another store."""
    source = tmp / "source.db"
    records = []
    with open_memory(str(source), infer=False) as memory:
        for i in range(n // 2):
            turns, word = conversation(rng)
            records.append(harness_record(memory.add(turns, user_id=f"imp{i % 3}"), f"imp{i % 3}", turns, word))
        path = tmp / "export.jsonl"
        memory.export(path)
    return path, records


def run_trial(workload: str, tmp: Path, seed: int) -> harness.Report:
    rng = random.Random(seed)
    tmp.mkdir(parents=True, exist_ok=True)
    db, acks_path = tmp / "store.db", tmp / "acks.jsonl"
    before: list[dict[str, Any]] = []
    arg, min_acks, window, embedder = "", 2, 1.5, "hash"
    if workload == "reindex":
        before = prefill(db, rng)
        # Killed right after one of its first 60 batches (of one memory each; about 87 in all).
        arg, min_acks, window = "hash:32", 1 + rng.randrange(60), 0.0
    elif workload == "import":
        path, records = export_file(tmp, rng, 600)
        arg, min_acks, window = str(path), 1, 0.15
    proc = harness.spawn(workload, db, acks_path, seed, arg)
    harness.wait_ready(proc, acks_path)
    harness.wait_acks(proc, acks_path, min_acks)
    killed = harness.kill_after(proc, rng.uniform(0.0, window))
    acks = before + harness.read_acks(acks_path)
    if workload == "reindex":
        with sqlite3.connect(db) as conn:
            embedder = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()[0]
        embedder = "hash:32" if embedder == "hash-test-32" else "hash"
    if workload == "import" and any(a["op"] == "imported" for a in acks):
        acks += records
    report = harness.check_store(db, acks, embedder=embedder)
    finished = any(a["op"] in ("reindexed", "imported") for a in acks)
    report.killed = killed and not finished  # killed before the call returned (add workloads never return)
    if workload == "reindex":  # the interrupted reindex resumes (or restarts) and then everything is searchable
        with open_memory(str(db), embedder="hash:32", infer=False) as memory:
            memory.reindex(batch_size=7)
        report.losses += harness.check_store(db, acks, embedder="hash:32").losses
    return report


@pytest.mark.parametrize("workload", WORKLOADS)
def test_a_killed_writer_loses_nothing_acknowledged(workload: str, tmp_path: Path) -> None:
    report = run_trial(workload, tmp_path, seed=zlib.crc32(workload.encode()) % 1000)
    assert report.losses == []


@pytest.mark.slow
@pytest.mark.parametrize("workload", WORKLOADS)
def test_a_killed_writer_loses_nothing_acknowledged_campaign(workload: str, tmp_path: Path) -> None:
    acked = deletes = killed = 0
    losses: list[str] = []
    for trial in range(SLOW_TRIALS):
        report = run_trial(workload, tmp_path / f"t{trial}", seed=1000 * trial + len(workload))
        acked, deletes, losses = acked + report.acked, deletes + report.deletes, losses + report.losses
        killed += report.killed
    print(
        f"\n{workload}: {SLOW_TRIALS} trials ({killed} killed mid-call, the rest after it returned), {acked} "
        f"acknowledged adds, {deletes} deletions, {len(losses)} losses"
    )
    assert acked > 0
    assert losses == []
