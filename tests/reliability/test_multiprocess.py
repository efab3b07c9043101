"""Four processes share one store file, each opening and closing it again and again as the CLI does (one command,
one open) and adding synchronously or asynchronously for the same users. No job may run twice, and no user may
end with two current facts that contradict each other (two residences).

The default suite runs them for a few seconds; ``-m slow`` for ``MEMLANE_MP_SECONDS`` (default 60).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from tests.reliability import harness
from tests.reliability.children import Acks, count_job_runs, open_memory

PROCESSES = 4


def run_campaign(tmp: Path, seconds: float) -> dict[str, int]:
    db = tmp / "store.db"
    with open_memory(str(db)):
        pass  # create the schema once, so the writers race on data, not on the first migration
    procs = []
    for i in range(PROCESSES):
        proc = harness.spawn("mixed", db, tmp / f"acks{i}.jsonl", seed=i + 1, arg=str(seconds))
        procs.append(proc)
    for proc in procs:
        _, err = proc.communicate(timeout=seconds + 300)
        assert proc.returncode == 0, err.decode()
    parent = Acks(str(tmp / "acks-parent.jsonl"))
    undo = count_job_runs(parent, os.getpid())
    try:
        with open_memory(str(db)) as memory:  # the next command runs whatever was left queued
            memory.flush(timeout=120)
    finally:
        undo()
    acks = [a for path in sorted(tmp.glob("acks*.jsonl")) for a in harness.read_acks(path)]
    runs = harness.job_runs(acks)
    report = harness.check_store(db, acks)
    with sqlite3.connect(db) as conn:
        states = dict(conn.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall())
        done_ids = [r[0] for r in conn.execute("SELECT id FROM jobs WHERE state = 'done'")]
    return {
        "adds": sum(1 for a in acks if a["op"] == "mixed"),
        "jobs stored": sum(states.values()),
        "jobs done": states.get("done", 0),
        "jobs run": len(runs),
        "done but never seen running": len(set(done_ids) - set(runs)),
        "duplicate runs": sum(n - 1 for n in runs.values()),
        "contradictions": len(harness.contradictions(db)),
        "losses": len(report.losses),
    }


def test_four_processes_run_every_job_once_and_keep_one_current_fact(tmp_path: Path) -> None:
    found = run_campaign(tmp_path, seconds=4.0)
    print(f"\n{PROCESSES} processes: {found}")
    assert found["adds"] > 0 and found["jobs run"] > 0
    assert (found["duplicate runs"], found["contradictions"], found["losses"]) == (0, 0, 0), found
    assert found["jobs done"] == found["jobs stored"] and found["done but never seen running"] == 0, found


@pytest.mark.slow
def test_four_processes_for_a_minute(tmp_path: Path) -> None:
    found = run_campaign(tmp_path, seconds=float(os.environ.get("MEMLANE_MP_SECONDS", "60")))
    print(f"\n{PROCESSES} processes: {found}")
    assert found["adds"] > 0 and found["jobs run"] > 0
    assert (found["duplicate runs"], found["contradictions"], found["losses"]) == (0, 0, 0), found
    assert found["jobs done"] == found["jobs stored"] and found["done but never seen running"] == 0, found
