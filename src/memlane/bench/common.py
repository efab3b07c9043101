"""Shared pieces of the benchmark harnesses: machine description, progress callbacks, isolated runs, RSS."""

from __future__ import annotations

import importlib
import multiprocessing
import os
import platform
import queue
import resource
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from memlane.errors import MemlaneError

T = TypeVar("T")

#: Environment every harness and peer runs under: no model hub, no telemetry.
QUIET_ENV: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "MEM0_TELEMETRY": "False",
    "ANONYMIZED_TELEMETRY": "False",
    "CHROMA_TELEMETRY": "False",
    "POSTHOG_DISABLED": "1",
    "DO_NOT_TRACK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def quiet_environment() -> None:
    """Set ``QUIET_ENV`` in this process (values already set by the caller are kept)."""
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)


class Tracker(Protocol):
    """What a harness reports progress to: phases with a known size, advanced step by step."""

    def phase(self, description: str, total: int) -> None:
        """Start a new phase of ``total`` steps (the previous one is finished)."""

    def advance(self, steps: int = 1) -> None:
        """``steps`` more steps of the current phase are done."""


class NullTracker:
    """A tracker that shows nothing."""

    def phase(self, description: str, total: int) -> None:
        return None

    def advance(self, steps: int = 1) -> None:
        return None


class _QueueTracker:
    """Forwards a child process's progress to its parent through a queue."""

    def __init__(self, q: Any) -> None:
        self._q = q

    def phase(self, description: str, total: int) -> None:
        self._q.put(("phase", (description, total)))

    def advance(self, steps: int = 1) -> None:
        self._q.put(("advance", steps))


def forget_queries(embedder: object) -> None:
    """Empty an embedder's query-vector cache, so that a timed pass pays for its own query embeddings (a second
    preset, or the chat pass after the search pass, would otherwise find every query's vector already cached).
    """
    clear = getattr(embedder, "clear", None)
    if callable(clear):
        clear()


def machine() -> str:
    """A one-line description of the machine a result was measured on."""
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def current_rss_mb() -> float:
    """Resident set size of this process now, in MiB (psutil when installed, else ``/proc``; 0.0 if neither)."""
    try:
        psutil: Any = importlib.import_module("psutil")
    except ImportError:
        try:
            pages = int(Path("/proc/self/statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            return 0.0
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    return float(psutil.Process().memory_info().rss) / 2**20


def dir_size_bytes(path: Path) -> int:
    """Bytes of every file under ``path`` (or of ``path`` itself when it is a file)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@dataclass
class Stopwatch:
    """Elapsed wall time of a ``with`` block, in seconds."""

    seconds: float = 0.0

    @contextmanager
    def timing(self) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds += time.perf_counter() - start


def _child(fn: Callable[..., Any], args: tuple[Any, ...], q: Any) -> None:
    quiet_environment()
    try:
        q.put(("done", fn(*args, tracker=_QueueTracker(q))))
    except BaseException as exc:  # reported to the parent, which re-raises
        q.put(("error", f"{type(exc).__name__}: {exc}"))


def run_isolated(fn: Callable[..., T], *args: Any, tracker: Tracker) -> T:
    """Run ``fn(*args, tracker=...)`` in a fresh process (own peak RSS, no shared caches) and return its result.

    ``fn`` must be a module-level function; its progress is forwarded to ``tracker``.
    """
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_child, args=(fn, args, q), daemon=True)
    proc.start()
    try:
        while True:
            try:
                kind, payload = q.get(timeout=1.0)
            except queue.Empty:
                if not proc.is_alive():
                    raise MemlaneError(f"benchmark process died with exit code {proc.exitcode}") from None
                continue
            if kind == "phase":
                tracker.phase(*payload)
            elif kind == "advance":
                tracker.advance(payload)
            elif kind == "error":
                raise MemlaneError(f"benchmark process failed: {payload}")
            else:
                result: T = payload
                return result
    finally:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
