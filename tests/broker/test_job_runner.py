"""Running a job by id as a broker's delivery does: the job table decides, retries back off, the dead letter,
and the fallback of ``add`` to the embedded queue when the broker cannot be reached."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memlane import Config, Memory
from memlane.broker import RetryPolicy, RunStatus
from memlane.embedding.fake import HashEmbedder
from memlane.errors import JobTimeoutError
from memlane.extraction.base import ExtractionFailure, ExtractionResult
from memlane.extraction.offline import RuleExtractor
from memlane.lifecycle.locks import Leases
from memlane.models import JobState, MemoryKind, utcnow
from tests.conftest import open_backend

FAST = RetryPolicy(max_attempts=3, backoff=0.5, backoff_max=10.0, handoff=60.0)


@pytest.fixture(params=["sqlite-file", "postgres"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    config = Config(data_dir=tmp_path / "home", embedder="hash", background_worker=False)
    with open_backend(request.param, tmp_path, config) as m:
        yield m


def typed(memory: Memory, user: str = "maya") -> list[str]:
    return sorted(m.text for m in memory.list(user_id=user, limit=1000) if m.kind is not MemoryKind.MESSAGE)


def test_a_delivery_runs_its_job_once_and_a_redelivery_is_a_no_op(memory: Memory) -> None:
    job_id = memory.add("I live in Boston", user_id="maya", async_mode=True).job_id
    assert job_id is not None
    assert typed(memory) == []
    first = memory.run_job(job_id, policy=FAST)
    assert (first.status, first.attempts) == (RunStatus.DONE, 1)
    facts = typed(memory)
    assert facts and all("Boston" in f for f in facts)
    again = memory.run_job(job_id, policy=FAST)
    assert again.status is RunStatus.SKIPPED
    assert typed(memory) == facts, "a redelivered message did no work"
    job = memory.job(job_id, user_id="maya")
    assert (job.state, job.attempts) == (JobState.DONE, 1)
    assert memory.run_job("no-such-job", policy=FAST).status is RunStatus.SKIPPED


def test_a_job_held_by_a_live_process_is_skipped_and_taken_over_when_its_lease_lapses(memory: Memory) -> None:
    job_id = memory.add("I live in Boston", user_id="maya", async_mode=True).job_id
    assert job_id is not None
    other = Leases(memory._store, seconds=0.3)  # another live holder of the job
    held = other.claim_job_id(job_id)
    assert held is not None and held.attempts == 1
    assert memory.run_job(job_id, policy=FAST).status is RunStatus.SKIPPED
    other.drop(job_id)
    other.close()  # stops renewing: the lease lapses
    time.sleep(0.4)
    run = memory.run_job(job_id, policy=FAST)
    assert (run.status, run.attempts) == (RunStatus.DONE, 2)
    assert len(typed(memory)) == len(set(typed(memory))) > 0


def test_failures_back_off_then_dead_letter(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: RuleExtractor, *args: object, **kwargs: object) -> object:
        raise RuntimeError("extractor exploded")

    monkeypatch.setattr(RuleExtractor, "extract", broken)
    job_id = memory.add("I live in Boston", user_id="maya", async_mode=True).job_id
    assert job_id is not None
    delays = []
    for attempt in (1, 2):
        run = memory.run_job(job_id, policy=FAST)
        assert (run.status, run.attempts) == (RunStatus.RETRY, attempt)
        delays.append(run.retry_in)
        job = memory.job(job_id, user_id="maya")
        assert job.state is JobState.QUEUED and "extractor exploded" in (job.error or "")
        assert job.not_before is not None and job.not_before > utcnow() + timedelta(seconds=FAST.handoff - 5)
        with pytest.raises(JobTimeoutError):  # the queue scan leaves a job in its backoff alone
            memory.flush(timeout=0.05)
    assert delays == [0.5, 1.0], "exponential backoff"
    dead = memory.run_job(job_id, policy=FAST)
    assert (dead.status, dead.attempts) == (RunStatus.DEAD, 3)
    job = memory.job(job_id, user_id="maya")
    assert job.state is JobState.FAILED and (job.error or "").startswith("dead letter after 3 attempts")
    assert memory.run_job(job_id, policy=FAST).status is RunStatus.SKIPPED
    monkeypatch.undo()
    assert memory.retry_jobs(user_id="maya") == 1  # the dead letter is queued again on request
    memory.flush(timeout=30)
    assert memory.job(job_id, user_id="maya").state is JobState.DONE
    assert typed(memory)


def test_a_failure_then_a_success(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    real = RuleExtractor.extract
    calls = []

    def flaky(self: RuleExtractor, *args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("transient")
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(RuleExtractor, "extract", flaky)
    job_id = memory.add("I live in Boston", user_id="maya", async_mode=True).job_id
    assert job_id is not None
    assert memory.run_job(job_id, policy=FAST).status is RunStatus.RETRY
    run = memory.run_job(job_id, policy=FAST)  # the broker's retry, delivered after the backoff
    assert (run.status, run.attempts) == (RunStatus.DONE, 2)
    assert memory.job(job_id, user_id="maya").state is JobState.DONE


def test_a_job_whose_attempts_all_died_is_dead_without_running(memory: Memory) -> None:
    job_id = memory.add("I live in Boston", user_id="maya", async_mode=True).job_id
    assert job_id is not None
    for _ in range(FAST.max_attempts):  # three processes claimed it and died mid-run
        ghost = Leases(memory._store, seconds=0.01)
        assert ghost.claim_job_id(job_id) is not None
        ghost.close()
        time.sleep(0.02)
    run = memory.run_job(job_id, policy=FAST)
    assert run.status is RunStatus.DEAD
    assert memory.job(job_id, user_id="maya").state is JobState.FAILED
    assert typed(memory) == []


def test_a_deleted_user_cancels_the_delivery(memory: Memory) -> None:
    job_id = memory.add("I live in Boston", user_id="maya", async_mode=True).job_id
    assert job_id is not None
    memory.delete_all(user_id="maya")
    assert memory.run_job(job_id, policy=FAST).status is RunStatus.SKIPPED
    assert memory.list(user_id="maya") == []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_add_falls_back_to_the_embedded_queue_when_the_broker_is_down(tmp_path: Path) -> None:
    pytest.importorskip("celery")
    config = Config(data_dir=tmp_path / "home", embedder="hash", broker_url=f"redis://127.0.0.1:{_closed_port()}/0")
    with Memory(tmp_path / "m.db", embedder=HashEmbedder(), config=config) as memory:
        result = memory.add("I live in Boston", user_id="maya", async_mode=True)
        assert result.queue == "embedded"
        assert result.queue_notice is not None and "broker unreachable" in result.queue_notice
        assert "embedded worker" in result.queue_notice
        assert result.job_id is not None
        assert memory.job(result.job_id, user_id="maya").not_before is None
        done = memory.wait(result.job_id, user_id="maya", timeout=30)
        assert done.state is JobState.DONE
        assert typed(memory)
        started = time.monotonic()
        second = memory.add("I work as a nurse", user_id="maya", async_mode=True)
        assert second.queue == "embedded" and "not retried" in (second.queue_notice or "")
        assert time.monotonic() - started < 1.5, "a broker known to be down is not tried on every add"


def test_without_a_broker_async_adds_say_they_are_embedded(memory: Memory) -> None:
    result = memory.add("I live in Boston", user_id="maya", async_mode=True)
    assert (result.queue, result.queue_notice) == ("embedded", None)
    assert memory.add("hello", user_id="maya", infer=False).queue is None


def test_a_batch_the_extractor_could_not_read_is_retried_too(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    real = RuleExtractor.extract
    calls = []

    def unreadable_once(self: RuleExtractor, window: Any, related: Any = ()) -> ExtractionResult:
        calls.append(1)
        if len(calls) == 1:  # as an LLM extractor reports a reply it could not parse: recorded, not raised
            return ExtractionResult(errors=[ExtractionFailure(source_ids=[m.id for m in window], reason="unreadable")])
        return real(self, window, related)

    monkeypatch.setattr(RuleExtractor, "extract", unreadable_once)
    job_id = memory.add("I live in Boston", user_id="maya", async_mode=True).job_id
    assert job_id is not None
    first = memory.run_job(job_id, policy=FAST)
    assert (first.status, first.error) == (RunStatus.RETRY, "ExtractionFailedError: unreadable")
    job = memory.job(job_id, user_id="maya")
    assert job.state is JobState.QUEUED and len(job.payload["message_ids"]) == 1
    assert typed(memory) == []
    second = memory.run_job(job_id, policy=FAST)
    assert (second.status, second.attempts) == (RunStatus.DONE, 2)
    assert typed(memory)


@pytest.mark.parametrize("runner", ["broker", "embedded worker"])
def test_a_job_to_be_retried_never_reads_as_failed(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, runner: str
) -> None:
    """Regression: an unreadable batch was written as a failed job, and the runner queued it again only afterwards;
    ``wait`` polling in between returned a job 'failed' after one attempt that was about to be retried."""
    import memlane.broker.runner
    import memlane.worker
    from memlane.retry import settle_failure

    real = RuleExtractor.extract
    calls: list[int] = []
    seen: list[JobState] = []

    def unreadable_once(self: RuleExtractor, window: Any, related: Any = ()) -> ExtractionResult:
        calls.append(1)
        if len(calls) == 1:
            return ExtractionResult(errors=[ExtractionFailure(source_ids=[m.id for m in window], reason="unreadable")])
        return real(self, window, related)

    def watching(store: Any, job: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(memory.job(job.id, user_id="maya").state)  # what a reader sees just before the retry is settled
        return settle_failure(store, job, *args, **kwargs)

    monkeypatch.setattr(RuleExtractor, "extract", unreadable_once)
    monkeypatch.setattr(memlane.broker.runner, "settle_failure", watching)
    monkeypatch.setattr(memlane.worker, "settle_failure", watching)
    job_id = memory.add("I live in Boston", user_id="maya", async_mode=True).job_id
    assert job_id is not None
    if runner == "broker":
        assert memory.run_job(job_id, policy=FAST).status is RunStatus.RETRY
    else:
        memory._worker._policy = RetryPolicy(max_attempts=3, backoff=0.0, backoff_max=0.0, handoff=60.0)
        assert memory._worker._run_one()
    assert seen == [JobState.RUNNING]
    job = memory.job(job_id, user_id="maya")
    assert job.state is JobState.QUEUED and job.attempts == 1


def test_only_a_job_taken_by_another_process_is_reported_lost(memory: Memory, caplog: pytest.LogCaptureFixture) -> None:
    from memlane.store.outcome import JobOutcome

    done_here = memory.add("I live in Boston", user_id="maya", async_mode=True).job_id
    taken = memory.add("I work at Acme", user_id="maya", async_mode=True).job_id
    assert done_here is not None and taken is not None
    mine = Leases(memory._store, seconds=0.2)  # renews every 0.05 s
    assert mine.claim_job_id(done_here) is not None
    # finished here before ``drop``, as a synchronous add does: the renewal fails, and nothing was lost
    memory._store.finish_job(JobOutcome(done_here, JobState.DONE, None, owner=mine.owner))
    ghost = Leases(memory._store, seconds=0.01)
    assert ghost.claim_job_id(taken) is not None
    ghost.close()
    time.sleep(0.02)
    other = Leases(memory._store, seconds=30)
    assert other.claim_job_id(taken) is not None  # taken over by a live process
    with caplog.at_level("WARNING", logger="memlane.lifecycle.locks"):
        mine.hold(taken)  # this process still thinks it holds it
        deadline = time.monotonic() + 10  # a few beats: more than enough on a loaded machine
        while not _lost(caplog) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # and some beats more, in which the job finished here must stay unreported
    mine.close()
    other.close()
    lost = _lost(caplog)
    assert lost and all(taken in m for m in lost), lost


def _lost(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "lost the lease" in r.getMessage()]
