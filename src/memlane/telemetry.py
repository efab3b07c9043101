"""Per-operation telemetry: one seam that the library's operations pass through, a no-op until someone listens.

Each instrumented operation (``add``, ``search``, ``context``, ``ask``, an extraction job, a vector index build) is
wrapped once with :func:`timed`. While no recorder is installed and tracing is off, the wrapper calls the operation
straight away after one module-global test (see docs/observability.md for its measured cost). ``memlane serve``
installs a recorder that feeds Prometheus; a program embedding the library can install its own
(:func:`add_recorder`) or turn on OpenTelemetry spans (:func:`enable_tracing`, ``pip install 'memlane[otel]'``).

A recorder is called on the thread that ran the operation, after it finished; it must be cheap and must not raise.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, ParamSpec, Protocol, TypeVar

from memlane.errors import MissingDependencyError

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")

OPERATIONS = ("add", "search", "context", "ask", "extract_job", "index_build")


class Recorder(Protocol):
    """Receives one finished operation: its name, wall time, and the exception class name if it failed."""

    def record(self, op: str, seconds: float, error: str | None) -> None: ...


_lock = threading.Lock()
_recorders: tuple[Recorder, ...] = ()
_tracer: Any = None  # an opentelemetry Tracer once tracing is enabled
_active = False  # read on every call: recorders or a tracer are installed


def _refresh() -> None:
    global _active
    _active = bool(_recorders) or _tracer is not None


def add_recorder(recorder: Recorder) -> None:
    """Start sending every instrumented operation to ``recorder`` (process-wide)."""
    global _recorders
    with _lock:
        if recorder not in _recorders:
            _recorders = (*_recorders, recorder)
        _refresh()


def remove_recorder(recorder: Recorder) -> None:
    """Stop sending operations to ``recorder``; unknown recorders are ignored."""
    global _recorders
    with _lock:
        _recorders = tuple(r for r in _recorders if r is not recorder)
        _refresh()


def enable_tracing(tracer_provider: Any = None) -> None:
    """Wrap each operation in an OpenTelemetry span named ``memlane.<op>`` (from the global tracer provider, or the
    given one). Needs ``opentelemetry-api`` (``pip install 'memlane[otel]'``); spans go wherever the application's
    OpenTelemetry SDK sends them.
    """
    global _tracer
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise MissingDependencyError("OpenTelemetry tracing", "otel") from exc
    with _lock:
        _tracer = trace.get_tracer("memlane", tracer_provider=tracer_provider)
        _refresh()


def disable_tracing() -> None:
    """Stop creating spans."""
    global _tracer
    with _lock:
        _tracer = None
        _refresh()


def enabled() -> bool:
    """Whether any recorder or tracer is installed."""
    return _active


def timed(op: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate an operation so that its duration and outcome reach the recorders (and a span, when tracing)."""
    if op not in OPERATIONS:
        raise ValueError(f"unknown operation {op!r}; one of {OPERATIONS}")

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if not _active:
                return fn(*args, **kwargs)
            return _observed(op, fn, *args, **kwargs)

        return wrapper

    return decorate


def _observed(op: str, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    tracer = _tracer
    if tracer is None:
        return _measured(op, fn, *args, **kwargs)
    with tracer.start_as_current_span(f"memlane.{op}", attributes={"memlane.operation": op}):
        return _measured(op, fn, *args, **kwargs)


def _measured(op: str, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    start = time.perf_counter()
    error: str | None = None
    try:
        return fn(*args, **kwargs)
    except BaseException as exc:
        error = type(exc).__name__
        raise
    finally:
        elapsed = time.perf_counter() - start
        for recorder in _recorders:
            try:
                recorder.record(op, elapsed, error)
            except Exception:  # a broken recorder must never break the operation it observes
                log.exception("telemetry recorder %r failed on %s", recorder, op)
