"""Failed logins per client address: the login form takes a key from anyone, so guessing is slowed down.

Each failed login takes a token from the address's bucket (``BURST`` of them, refilled at ``PER_MINUTE`` a minute);
once the bucket is empty the address is refused (429, with ``Retry-After``) until a token is back, without the key
it sends being looked at. A successful login takes nothing. The buckets are this process's own.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Final

from memlane.server.ratelimit import TokenBuckets

BURST: Final = 10
PER_MINUTE: Final = 10.0
MAX_ADDRESSES: Final = 100_000


class FailedLogins:
    """Token buckets of failed logins, by client address, and the addresses shut out until when."""

    def __init__(self, burst: int = BURST, per_minute: float = PER_MINUTE) -> None:
        self._buckets = TokenBuckets(per_minute / 60.0, burst, max_keys=MAX_ADDRESSES)
        self._until: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def blocked(self, address: str) -> float:
        """Seconds until ``address`` may try again (0.0: now)."""
        now = time.monotonic()
        with self._lock:
            until = self._until.get(address, 0.0)
            if until <= now:
                self._until.pop(address, None)
                return 0.0
            return until - now

    def failed(self, address: str) -> float:
        """Count a failed login of ``address``; the seconds it is now shut out for (0.0: not shut out)."""
        wait = self._buckets.take(address)
        if wait > 0:
            with self._lock:
                self._until[address] = time.monotonic() + wait
                self._until.move_to_end(address)
                while len(self._until) > MAX_ADDRESSES:
                    self._until.popitem(last=False)
        return wait
