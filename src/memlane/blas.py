"""How many threads numpy's BLAS may use while memlane works.

memlane's matrix products are small (a query against one scope's vectors, a batch against a dozen label
prototypes). OpenBLAS runs them on every core and its threads then spin waiting for the next one: on two cores
that doubled the CPU a write costs, and with four processes sharing the cores it cut their combined turns per
second by more than half. While memlane's own calls run, BLAS is held to ``Config.blas_threads`` (one by default)
through threadpoolctl; the previous limit is restored when the call returns. Where OpenBLAS keeps one setting per
process, numpy work on another thread of the application runs with the limit while memlane's call lasts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_libraries: list[Any] | None = None  # the BLAS libraries numpy loaded (threadpoolctl's controllers of them)
_local = threading.local()  # per thread: how deep in memlane's calls, and the thread counts found on entry


def _blas_libraries() -> list[Any]:
    global _libraries
    with _lock:
        if _libraries is None:
            import numpy  # noqa: F401  (loaded before the search, so that its BLAS is found)
            from threadpoolctl import ThreadpoolController

            _libraries = list(ThreadpoolController().select(user_api="blas").lib_controllers)  # a few ms, once
        return _libraries


@contextmanager
def blas_threads(limit: int | None) -> Iterator[None]:
    """Hold BLAS to ``limit`` threads for the block (``None``: leave it alone), then restore what this thread
    found. Nested blocks keep the outer one's limit. OpenBLAS keeps one setting for the process in some versions
    and one per thread in others, so two threads in memlane at once may each restore the other's setting early;
    the cost is a product run on more threads, never a wrong result.
    """
    if limit is None:
        yield
        return
    depth = getattr(_local, "depth", 0)
    if depth == 0:
        libraries = _blas_libraries()
        _local.before = [lib.get_num_threads() for lib in libraries]
        for lib in libraries:
            lib.set_num_threads(limit)
    _local.depth = depth + 1
    try:
        yield
    finally:
        _local.depth = depth
        if depth == 0:
            for lib, threads in zip(_blas_libraries(), _local.before, strict=True):
                lib.set_num_threads(threads)
