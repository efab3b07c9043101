"""Per-key rate limits (token buckets): in this process's memory, or in Redis so that every ``memlane serve``
process behind one load balancer spends the same buckets.

A bucket holds up to ``burst`` tokens and refills at ``rate`` a second; a request takes one, or learns how long until
one is there (the ``Retry-After`` of its 429). The in-process bucket is a dozen lines written here rather than a
rate-limit library: it must key on the API key the auth step resolved (not the client address a decorator sees) and
return the exact wait. The Redis bucket is the same arithmetic in one Lua script, which Redis runs atomically, on the
Redis server's clock (``TIME``), so processes on machines with different clocks agree.

If Redis cannot be reached during a request the limiter falls back to this process's own buckets (logged once per
outage) and tries Redis again every ``RETRY_REDIS_AFTER`` seconds: a Redis failure makes the limit per-process, never
absent, and never takes the API down with it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Final, Protocol
from urllib.parse import urlsplit, urlunsplit

from memlane.errors import ConfigError, MissingDependencyError, StoreError

if TYPE_CHECKING:
    import redis

log = logging.getLogger(__name__)

#: The prefix of the Redis keys of the buckets.
NAMESPACE: Final = "memlane:rate:"
#: How long a request waits for Redis before falling back to this process's buckets.
REDIS_TIMEOUT: Final = 0.5
#: After a Redis failure, requests use this process's buckets for this long before Redis is tried again (so an
#: unreachable Redis costs one timeout per interval, not one per request).
RETRY_REDIS_AFTER: Final = 5.0

# KEYS[1]: the bucket; ARGV: rate (tokens a second), burst. Returns the wait in seconds as a string (a Lua number
# returned to Redis is cut to an integer). The hash expires once a full bucket would have refilled.
_TAKE = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
    tokens = burst
    at = now
end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens >= 1 then
    tokens = tokens - 1
else
    wait = (1 - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return tostring(wait)
"""


class RateLimiter(Protocol):
    """Token buckets keyed by a string (an API key's prefix, or a client address without authentication)."""

    rate: float
    burst: int

    def take(self, key: str) -> float:
        """Take a token for ``key``: 0.0 if one was available, else the seconds until one will be."""
        ...

    def close(self) -> None: ...


class TokenBuckets:
    """One bucket per key in this process: ``rate`` requests a second on average, bursts of up to ``burst``."""

    def __init__(self, rate: float, burst: int, *, max_keys: int = 100_000) -> None:
        self.rate, self.burst, self._max = rate, burst, max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: str, now: float | None = None) -> float:
        if self.rate <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._buckets.pop(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate)
            wait = 0.0
            if tokens >= 1.0:
                tokens -= 1.0
            else:
                wait = (1.0 - tokens) / self.rate
            self._buckets[key] = (tokens, now)
            while len(self._buckets) > self._max:
                self._buckets.popitem(last=False)
            return wait

    def close(self) -> None:
        pass


def redact_url(url: str) -> str:
    """A Redis URL without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


class RedisBuckets:
    """One bucket per key in Redis, shared by every process given the same URL (and the same ``rate`` and ``burst``:
    each process refills by its own settings).
    """

    def __init__(self, url: str, rate: float, burst: int, *, retry_after: float = RETRY_REDIS_AFTER) -> None:
        try:
            import redis
        except ImportError as exc:
            raise MissingDependencyError("shared rate limits (--redis)", "celery") from exc
        self.rate, self.burst = rate, burst
        self.location = redact_url(url)
        try:
            self._client: redis.Redis = redis.Redis.from_url(
                url, socket_timeout=REDIS_TIMEOUT, socket_connect_timeout=REDIS_TIMEOUT
            )
        except ValueError as exc:
            raise ConfigError(f"not a Redis URL: {self.location!r} ({exc})") from None
        self._script = self._client.register_script(_TAKE)
        self._local = TokenBuckets(rate, burst)
        self._down = False
        self._retry_at, self._retry_after = 0.0, retry_after
        self._errors: tuple[type[Exception], ...] = (redis.RedisError, OSError)

    def check(self) -> None:
        """``StoreError`` unless Redis answers (called at start-up: a wrong URL fails loudly, not per request)."""
        try:
            self._client.ping()
        except self._errors as exc:
            raise StoreError(f"cannot reach Redis at {self.location}: {exc}") from exc

    def take(self, key: str) -> float:
        if self.rate <= 0:
            return 0.0
        if self._down and time.monotonic() < self._retry_at:
            return self._local.take(key)
        try:
            raw = self._script(keys=[NAMESPACE + key], args=[repr(float(self.rate)), str(int(self.burst))])
        except self._errors as exc:
            self._retry_at = time.monotonic() + self._retry_after
            if not self._down:
                log.warning(
                    "rate limits: Redis at %s failed (%s); limiting per process until it answers", self.location, exc
                )
                self._down = True
            return self._local.take(key)
        if self._down:
            log.warning("rate limits: Redis at %s answers again; limits are shared again", self.location)
            self._down = False
        return float(raw.decode() if isinstance(raw, bytes) else raw)

    def close(self) -> None:
        self._client.close()


def open_rate_limiter(rate: float, burst: int, redis_url: str | None) -> RateLimiter:
    """Shared buckets in Redis when ``redis_url`` is given (checked now), else this process's own."""
    if redis_url is None:
        return TokenBuckets(rate, burst)
    buckets = RedisBuckets(redis_url, rate, burst)
    try:
        buckets.check()
    except StoreError:
        buckets.close()
        raise
    return buckets
