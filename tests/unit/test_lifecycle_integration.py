"""The durable extraction queue and the LLM path of ``Memory.add``: crashes, malformed replies, retries."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memlane import Config, JobState, JobTimeoutError, Memory, MemoryKind
from memlane.config import Config as _Config
from memlane.embedding.fake import HashEmbedder
from memlane.errors import ConfigError
from memlane.store.outcome import JobClaim
from tests.llm.replay import completion, recorded, replay_server

T0 = datetime(2025, 5, 8, 18, 0, tzinfo=UTC)

CLEAN = {  # hand-written in the wire format: what a capable model returns for the turn below
    "memories": [
        {
            "kind": "fact",
            "text": "Maya lives in Denver.",
            "confidence": 0.9,
            "importance": 0.7,
            "entities": ["Maya", "Denver"],
            "event_time": None,
            "sources": ["m1"],
            "subject": "Maya",
            "attribute": "residence",
            "value": "Denver",
        }
    ]
}
TURN = {"role": "user", "name": "Maya", "content": "I live in Denver now.", "timestamp": T0}


def typed_count(memory: Memory, user_id: str) -> int:
    return sum(n for kind, n in memory.stats(user_id=user_id).by_kind.items() if kind != MemoryKind.MESSAGE)


def test_a_queued_job_survives_a_crash_and_resumes_on_open(tmp_path: Path, config: Config) -> None:
    path = tmp_path / "q.db"
    idle = config.with_(infer=True, background_worker=False)  # nothing drains the queue: a crash before it ran
    with Memory(path, embedder=HashEmbedder(), config=idle) as memory:
        result = memory.add("I live in Boston.", user_id="maya", async_mode=True)
        assert result.job_id is not None and [it.kind for it in result.items] == [MemoryKind.MESSAGE]
        assert memory.job(result.job_id, user_id="maya").state is JobState.QUEUED
        assert typed_count(memory, "maya") == 0
    with Memory(path, embedder=HashEmbedder(), config=config.with_(infer=True)) as memory:
        done = memory.wait(result.job_id, user_id="maya", timeout=30)
        assert done.state is JobState.DONE and done.attempts == 1
        assert typed_count(memory, "maya") == 1


def test_a_job_left_running_by_a_crash_is_run_again(tmp_path: Path, config: Config) -> None:
    path = tmp_path / "r.db"
    idle = config.with_(infer=True, background_worker=False)
    with Memory(path, embedder=HashEmbedder(), config=idle) as memory:
        job_id = memory.add("I live in Boston.", user_id="maya", async_mode=True).job_id
        assert job_id is not None
        # Another process took it, then died: its lease lapsed without being renewed.
        lapsed = JobClaim("elsewhere:1:dead", until=0)
        claimed = memory._store.claim_job(lapsed, lambda owner: False)
        assert claimed is not None and claimed.id == job_id
        assert memory.job(job_id, user_id="maya").state is JobState.RUNNING
    with Memory(path, embedder=HashEmbedder(), config=idle) as memory:
        assert memory.job(job_id, user_id="maya").state is JobState.RUNNING  # never put back blindly
        memory.flush()
        done = memory.job(job_id, user_id="maya")
        assert done.state is JobState.DONE and done.attempts == 2
        assert typed_count(memory, "maya") == 1


def test_closing_stops_the_worker_and_loses_no_job(tmp_path: Path, config: Config) -> None:
    path = tmp_path / "c.db"
    cfg = config.with_(infer=True)
    with Memory(path, embedder=HashEmbedder(), config=cfg) as memory:
        ids = [memory.add(f"I love dish number {i}.", user_id="maya", async_mode=True).job_id for i in range(5)]
    with Memory(path, embedder=HashEmbedder(), config=cfg) as memory:
        memory.flush(timeout=30)
        assert {memory.job(str(i), user_id="maya").state for i in ids} == {JobState.DONE}
        assert typed_count(memory, "maya") == 5


def test_wait_times_out_while_the_job_is_pending(tmp_path: Path, config: Config) -> None:
    with Memory(tmp_path / "t.db", embedder=HashEmbedder(), config=config.with_(infer=True)) as memory:
        job_id = memory.add("I live in Boston.", user_id="maya", async_mode=True).job_id
        assert job_id is not None
        memory._worker.stop()  # kill the worker
        if memory.job(job_id, user_id="maya").state is JobState.QUEUED:
            with pytest.raises(JobTimeoutError):
                memory.wait(job_id, user_id="maya", timeout=0.1)


def llm_config(config: Config, url: str, **more: object) -> Config:
    return config.with_(infer=True, llm_provider="openai", llm_base_url=url, llm_model="replay", **more)


def test_a_malformed_llm_reply_keeps_the_messages_and_records_a_failed_job(config: Config) -> None:
    with replay_server(recorded("extract_garbled")) as (url, script):
        cfg = llm_config(config, url)
        with Memory(":memory:", embedder=HashEmbedder(), config=cfg) as memory:
            result = memory.add(TURN, user_id="maya")
            assert [it.text for it in result.items] == ["I live in Denver now."]
            assert memory.get(result.items[0].id, user_id="maya").text == "I live in Denver now."
            assert result.job_id is not None and not result.memories
            job = memory.job(result.job_id, user_id="maya")
            assert job.state is JobState.FAILED and job.attempts == 1 and job.error
            assert job.payload["message_ids"] == [result.items[0].id]
            assert memory.llm_usage is not None and memory.llm_usage.calls >= 1
            # the model recovers: a retry extracts from the kept message
            script.replies[:] = [completion(json.dumps(CLEAN))]
            assert memory.retry_jobs(user_id="maya") == 1
            done = memory.wait(result.job_id, user_id="maya", timeout=30)
            assert done.state is JobState.DONE and done.attempts == 1  # a fresh round of attempts
            assert done.payload["prompt_tokens"] == 10 and done.payload["completion_tokens"] == 5
            [fact] = memory.list(user_id="maya", filters={"kind": "fact"})
            assert fact.text == "Maya lives in Denver." and [s.memory_id for s in fact.sources] == [result.items[0].id]
            assert fact.metadata["attribute"] == "residence"


def test_a_malformed_reply_in_the_background_fails_the_job_for_retry(config: Config) -> None:
    with replay_server(recorded("extract_truncated")) as (url, _):
        cfg = llm_config(config, url, job_max_attempts=2, job_backoff_seconds=0.05)
        with Memory(":memory:", embedder=HashEmbedder(), config=cfg) as memory:
            result = memory.add(TURN, user_id="maya", async_mode=True)
            assert result.job_id is not None
            job = memory.wait(result.job_id, user_id="maya", timeout=30)
            assert job.state is JobState.FAILED and job.attempts == 2  # retried once, then the dead letter
            assert (job.error or "").startswith("dead letter after 2 attempts")
            assert memory.stats(user_id="maya").by_kind == {"message": 1}
            assert [j.id for j in memory.jobs(user_id="maya", state="failed")] == [result.job_id]


def test_an_unreachable_llm_loses_nothing(config: Config) -> None:
    cfg = llm_config(config, "http://127.0.0.1:9/v1", llm_timeout=0.5)
    with Memory(":memory:", embedder=HashEmbedder(), config=cfg) as memory:
        memory._extraction.chat.max_retries = 0  # type: ignore[union-attr]
        result = memory.add(TURN, user_id="maya")
        assert result.job_id is not None
        assert memory.job(result.job_id, user_id="maya").state is JobState.FAILED
        assert memory.stats(user_id="maya").by_kind == {"message": 1}


def test_llm_settings_are_checked_and_read_from_the_environment() -> None:
    with pytest.raises(ConfigError):
        _Config(llm_provider="openai", llm_model="m")  # no base_url
    with pytest.raises(ConfigError):
        _Config(llm_provider="nope", llm_model="m")
    env = {
        "MEMLANE_LLM_PROVIDER": "openai",
        "MEMLANE_LLM_MODEL": "qwen2.5",
        "MEMLANE_LLM_BASE_URL": "http://localhost:8080/v1",
        "MEMLANE_LLM_API_KEY_ENV": "MY_KEY",
        "MY_KEY": "secret",
        "MEMLANE_INFER": "false",
        "MEMLANE_CAPACITY": "500",
    }
    cfg = _Config.from_env(env)
    assert (cfg.llm_provider, cfg.llm_model, cfg.llm_api_key, cfg.infer, cfg.capacity) == (
        "openai",
        "qwen2.5",
        "secret",
        False,
        500,
    )
    assert "secret" not in repr(cfg)
    with pytest.raises(ConfigError):
        _Config.from_env({"MEMLANE_LLM_API_KEY_ENV": "UNSET_VARIABLE"})


LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"


@pytest.mark.slow
@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not found beside the repository")
def test_locomo_keeps_one_message_per_turn_and_a_re_ingest_is_a_no_op(config: Config) -> None:
    from memlane.bench.locomo import ingest_conversation
    from memlane.bench.locomo_data import load_locomo

    convs = load_locomo(LOCOMO).conversations
    with Memory(":memory:", embedder=HashEmbedder(), config=config.with_(infer=True)) as memory:
        for conv in convs:
            ingest_conversation(memory, conv)
        messages = sum(memory.stats(user_id=c.conv_id).by_kind["message"] for c in convs)
        total = memory.stats().memories
        assert messages == sum(len(c.turns) for c in convs) == 4124
        for conv in convs:
            ingest_conversation(memory, conv)
        assert memory.stats().memories == total
