"""One regression test per fault of issue #11 items 2, 4, 5 and 6; each failed on the code before the fix."""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memlane import Config, JobState, Memory, ValidationError
from memlane.errors import EmbedderMismatchError
from memlane.extraction.base import Extractor
from memlane.lifecycle.consolidate import Consolidator
from tests.reliability import harness

Hook = Callable[[], None]


def config(tmp: Path, **kw: Any) -> Config:
    return Config(data_dir=tmp / "home", embedder="hash", **{"infer": True, "background_worker": False, **kw})


class Hooked:
    """An extractor that runs ``hook`` (once) before extracting: the moment a job is between read and write."""

    def __init__(self, inner: Extractor, hook: Hook) -> None:
        self.inner, self.hook, self.calls = inner, hook, 0
        self.identity = getattr(inner, "identity", "?")

    def extract(self, window: Any, related: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            self.hook()
        return self.inner.extract(window, related)


def hook_extractor(memory: Memory, hook: Hook) -> Hooked:
    hooked = Hooked(memory._distiller.extractor, hook)
    memory._distiller.extractor = hooked  # type: ignore[assignment]
    return hooked


class HookedConsolidator:
    """A consolidator that runs ``hook`` (once) before deciding: the moment between reading and writing."""

    def __init__(self, inner: Consolidator, hook: Hook) -> None:
        self.inner, self.hook, self.calls = inner, hook, 0

    def decide(self, *args: Any, **kw: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            self.hook()
        return self.inner.decide(*args, **kw)


def hook_consolidator(memory: Memory, hook: Hook) -> None:
    memory._distiller.consolidator = HookedConsolidator(memory._distiller.consolidator, hook)  # type: ignore[assignment]


def rows(db: Path, sql: str, *params: Any) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute(sql, params).fetchone()[0])


def typed_count(db: Path, user: str) -> int:
    return rows(db, "SELECT count(*) FROM memories WHERE user_id = ? AND kind != 'message'", user)


# -- #11.2: delete_all and delete fence a running job ------------------------------------------------
@pytest.mark.parametrize("async_mode", [True, False])
def test_delete_all_while_a_job_runs_leaves_nothing_behind(tmp_path: Path, async_mode: bool) -> None:
    db = tmp_path / "s.db"
    with (
        Memory(db, embedder="hash", config=config(tmp_path)) as memory,
        Memory(db, embedder="hash", config=config(tmp_path)) as other,
    ):
        hook_extractor(memory, lambda: other.delete_all(user_id="ana"))
        memory.add("My sister Anna10 is a nurse. I live in Boston.", user_id="ana", async_mode=async_mode)
        memory.flush(timeout=30)
    for table in ("memories", "history", "jobs", "archive", "vectors", "memory_entities", "entities"):
        assert rows(db, f"SELECT count(*) FROM {table} WHERE user_id = 'ana'") == 0, table
    assert harness.stored_anywhere(db, "Anna10", with_entities=True) == []


def test_deleting_the_source_message_while_its_job_runs_leaves_no_extracted_memory(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with (
        Memory(db, embedder="hash", config=config(tmp_path)) as memory,
        Memory(db, embedder="hash", config=config(tmp_path)) as other,
    ):
        added: list[str] = []
        hook_extractor(memory, lambda: other.delete(added[0], user_id="ana"))
        result = memory.add("My sister Anna10 is a nurse.", user_id="ana", async_mode=True)
        added.append(result.items[0].id)
        memory.flush(timeout=30)
        assert memory.job(str(result.job_id), user_id="ana").state is JobState.DONE
    assert typed_count(db, "ana") == 0
    assert harness.stored_anywhere(db, "Anna10") == []


# -- #11.4: a job runs once across processes; consolidation holds a cross-process lock ----------------
def test_opening_the_store_does_not_run_a_job_another_live_process_is_running(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    ran_elsewhere: list[int] = []
    with Memory(db, embedder="hash", config=config(tmp_path)) as memory:

        def open_meanwhile() -> None:  # the CLI opens the store while the job is half done
            with Memory(db, embedder="hash", config=config(tmp_path)) as other:
                ran_elsewhere.append(other._worker.run_pending())

        hooked = hook_extractor(memory, open_meanwhile)
        result = memory.add("I live in Boston.", user_id="ana", async_mode=True)
        memory.flush(timeout=30)
        job = memory.job(str(result.job_id), user_id="ana")
    assert ran_elsewhere == [0]
    assert hooked.calls == 1 and job.state is JobState.DONE and job.attempts == 1
    assert typed_count(db, "ana") == 1


def test_consolidation_of_one_user_is_serialised_across_processes(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with (
        Memory(db, embedder="hash", config=config(tmp_path)) as memory,
        Memory(db, embedder="hash", config=config(tmp_path)) as other,
    ):
        errors: list[BaseException] = []

        def add_elsewhere() -> None:
            try:
                other.add("I live in Denver.", user_id="ana")
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        def race() -> None:  # while this add decides, another process adds a contradicting fact
            thread = threading.Thread(target=add_elsewhere)
            thread.start()
            thread.join(1.0)
            threads.append(thread)

        threads: list[threading.Thread] = []
        hook_consolidator(memory, race)
        memory.add("I live in Boston.", user_id="ana")
        threads[0].join(30)
        assert errors == []
    assert harness.contradictions(db) == []
    current = rows(
        db,
        "SELECT count(*) FROM memories WHERE user_id = 'ana' AND kind != 'message' AND valid_until IS NULL "
        "AND json_extract(metadata, '$.attribute') = 'residence'",
    )
    assert current == 1


# -- #11.5: a crash during a synchronous add leaves its extraction to the next open --------------------
CRASH_IN_EXTRACTION = """
import os, signal, sys
from memlane.extraction.offline import RuleExtractor
from tests.reliability.children import open_memory
def die(self, window, related):
    os.kill(os.getpid(), signal.SIGKILL)
RuleExtractor.extract = die
memory = open_memory(sys.argv[1])
memory.add("My sister Anna10 is a nurse.", user_id="ana")
"""


def test_a_crash_during_a_synchronous_add_leaves_its_extraction_for_the_next_open(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    proc = subprocess.run(
        [sys.executable, "-c", CRASH_IN_EXTRACTION, str(db)], cwd=harness.ROOT, env=harness.child_env(), check=False
    )
    assert proc.returncode == -signal.SIGKILL
    assert rows(db, "SELECT count(*) FROM memories WHERE kind = 'message'") == 1
    assert typed_count(db, "ana") == 0
    with Memory(db, embedder="hash", config=config(tmp_path)) as memory:
        memory.flush(timeout=30)
        again = memory.add("My sister Anna10 is a nurse.", user_id="ana")
        assert again.duplicates  # the message is stored once...
        assert [j.state for j in memory.jobs(user_id="ana")] == [JobState.DONE]
    assert typed_count(db, "ana") >= 1  # ...and its extraction was not lost


# -- #11.6: embedder changes ----------------------------------------------------------------------------
def test_opening_with_another_embedder_leaves_queued_jobs_queued(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "s.db"
    with Memory(db, embedder="hash", config=config(tmp_path)) as memory:
        memory.add("I live in Boston.", user_id="ana")
        job_id = str(memory.add("I love sushi.", user_id="ana", async_mode=True).job_id)
    caplog.set_level(logging.INFO)
    with Memory(db, embedder="hash:32", config=config(tmp_path, background_worker=True)) as wrong:
        wrong._worker.run_pending()
        time.sleep(0.3)
        assert wrong.job(job_id, user_id="ana").state is JobState.QUEUED
        with pytest.raises(EmbedderMismatchError):
            wrong.flush(timeout=1)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    with Memory(db, embedder="hash", config=config(tmp_path)) as memory:
        memory.flush(timeout=30)
        job = memory.job(job_id, user_id="ana")
        assert job.state is JobState.DONE and job.attempts == 1


@pytest.mark.parametrize("batch_size", [0, -1, True])
def test_reindex_rejects_a_batch_size_below_one_and_changes_nothing(tmp_path: Path, batch_size: int) -> None:
    db = tmp_path / "s.db"
    with Memory(db, embedder="hash", config=config(tmp_path, infer=False)) as memory:
        memory.add("I live in Boston.", user_id="ana")
    with Memory(db, embedder="hash:32", config=config(tmp_path, infer=False)) as other:
        with pytest.raises(ValidationError, match="batch_size"):
            other.reindex(batch_size=batch_size)
    with Memory(db, embedder="hash", config=config(tmp_path, infer=False)) as memory:
        assert memory.search("Boston", user_id="ana")[0].memory.text == "I live in Boston."


KILLED_REINDEX = """
import os, signal, sys
from memlane.embedding.fake import HashEmbedder
from tests.reliability.children import open_memory
calls = []
real = HashEmbedder.embed
def embed(self, texts):
    calls.append(1)
    if len(calls) == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(self, texts)
HashEmbedder.embed = embed
open_memory(sys.argv[1], embedder="hash:32", infer=False).reindex(batch_size=4)
"""


def test_a_killed_reindex_leaves_the_old_consistent_state_and_resumes(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with Memory(db, embedder="hash", config=config(tmp_path, infer=False)) as memory:
        for i in range(20):
            memory.add(f"Note {i}: I visited city number {i}.", user_id="ana")
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_REINDEX, str(db)], cwd=harness.ROOT, env=harness.child_env(), check=False
    )
    assert proc.returncode == -signal.SIGKILL
    harness.integrity(db)
    with Memory(db, embedder="hash", config=config(tmp_path, infer=False)) as memory:
        for preset in ("dense", "multi"):
            assert memory.search("city number 7", user_id="ana", preset_name=preset)
    with Memory(db, embedder="hash:32", config=config(tmp_path, infer=False)) as memory:
        with pytest.raises(EmbedderMismatchError):
            memory.search("city number 7", user_id="ana")
        assert 0 < memory.reindex(batch_size=4) < 20  # resumed: the batches written before the kill are kept
        assert memory.search("city number 7", user_id="ana", preset_name="dense")
        assert memory.stats().embedder == "hash-test-32"
    assert rows(db, "SELECT count(*) FROM vectors WHERE length(vec) != 32 * 4") == 0


def test_a_job_of_a_killed_process_is_claimed_at_once_and_runs_once(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with Memory(db, embedder="hash", config=config(tmp_path)) as memory:
        job_id = str(memory.add("I live in Boston.", user_id="ana", async_mode=True).job_id)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom memlane.extraction.offline import RuleExtractor\n"
            "from tests.reliability.children import open_memory\n"
            "RuleExtractor.extract = lambda self, w, r: time.sleep(3600)\n"
            "open_memory(sys.argv[1])._worker.run_pending()",
            str(db),
        ],
        cwd=harness.ROOT,
        env=harness.child_env(),
    )
    try:
        deadline = time.monotonic() + 60
        while rows(db, "SELECT count(*) FROM jobs WHERE state = 'running'") == 0:
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.05)
        with Memory(db, embedder="hash", config=config(tmp_path)) as memory:
            assert memory._worker.run_pending() == 0  # alive: its lease is respected
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    with Memory(db, embedder="hash", config=config(tmp_path)) as memory:
        assert memory._worker.run_pending() == 1  # dead: claimed without waiting for the lease to lapse
        job = memory.job(job_id, user_id="ana")
        assert job.state is JobState.DONE and job.attempts == 2
    assert typed_count(db, "ana") == 1
