"""The embedded job worker retries a failed job with backoff, as a broker's delivery does, then dead-letters it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memlane import Config, Memory
from memlane.embedding.fake import HashEmbedder
from memlane.errors import JobTimeoutError
from memlane.extraction.offline import RuleExtractor
from memlane.models import JobState, utcnow


@pytest.fixture(params=[True, False], ids=["thread", "inline"])
def memory(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Memory]:
    config = Config(
        data_dir=tmp_path / "home",
        embedder="hash",
        background_worker=request.param,
        job_max_attempts=3,
        job_backoff_seconds=0.2,
    )
    with Memory(tmp_path / "m.db", embedder=HashEmbedder(), config=config) as m:
        yield m


def test_a_failing_job_backs_off_then_is_dead_lettered(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: RuleExtractor, *args: object, **kwargs: object) -> object:
        raise RuntimeError("extractor exploded")

    monkeypatch.setattr(RuleExtractor, "extract", broken)
    started = time.monotonic()
    job_id = memory.add("I live in Boston", user_id="maya", async_mode=True).job_id
    assert job_id is not None
    with pytest.raises(JobTimeoutError):  # the first failure is not the end: the job waits out its backoff
        memory.flush(timeout=0.1)
    waiting = memory.job(job_id, user_id="maya")
    assert waiting.state is JobState.QUEUED and waiting.attempts == 1 and "extractor exploded" in (waiting.error or "")
    assert waiting.not_before is not None and waiting.not_before > utcnow()
    dead = memory.wait(job_id, user_id="maya", timeout=30)
    assert time.monotonic() - started >= 0.2 + 0.4, "the retries waited out 0.2 s, then 0.4 s"
    assert dead.state is JobState.FAILED and dead.attempts == 3
    assert (dead.error or "").startswith("dead letter after 3 attempts: RuntimeError: extractor exploded")
    monkeypatch.undo()
    assert memory.retry_jobs(user_id="maya") == 1  # the dead letter is queued again on request
    assert memory.wait(job_id, user_id="maya", timeout=30).state is JobState.DONE


def test_a_job_that_fails_once_succeeds_on_its_retry(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    real = RuleExtractor.extract
    calls = 0

    def flaky(self: RuleExtractor, *args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("transient")
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(RuleExtractor, "extract", flaky)
    job_id = memory.add("I live in Boston", user_id="maya", async_mode=True).job_id
    assert job_id is not None
    done = memory.wait(job_id, user_id="maya", timeout=30)
    assert (done.state, done.attempts, calls) == (JobState.DONE, 2, 2)
