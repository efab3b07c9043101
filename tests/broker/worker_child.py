"""A ``memlane worker --celery`` process for the broker tests, with a hook around extraction that records each
attempt in a marker file (JSON lines) and, by the words in a message, stalls ("SLOW", so the test can kill the
worker mid-job), fails every time ("POISON") or fails its first attempt ("FLAKY").

Usage: python -m tests.broker.worker_child MARKERS [memlane worker options...]
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from memlane.cli import main
from memlane.engine import Memory
from memlane.extraction.offline import RuleExtractor
from memlane.models import Job


def _mark(path: Path, **event: Any) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({**event, "pid": os.getpid()}) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def install(markers: Path, stall: float) -> None:
    handle = Memory._handle_job
    extract = RuleExtractor.extract
    current: dict[str, Job] = {}

    def handle_job(self: Memory, job: Job) -> None:
        current["job"] = job
        _mark(markers, event="start", job=job.id, attempt=job.attempts)
        handle(self, job)
        _mark(markers, event="end", job=job.id, attempt=job.attempts)

    def extract_(self: RuleExtractor, window: Any, related: Any = ()) -> Any:
        text = " ".join(m.text for m in window)
        job = current["job"]
        if "SLOW" in text and stall:
            _mark(markers, event="stalled", job=job.id, attempt=job.attempts)
            time.sleep(stall)
        if "POISON" in text:
            raise RuntimeError("poisoned message")
        if "FLAKY" in text and job.attempts == 1:
            raise RuntimeError("transient failure")
        return extract(self, window, related)

    Memory._handle_job = handle_job  # type: ignore[method-assign]
    RuleExtractor.extract = extract_  # type: ignore[method-assign]


if __name__ == "__main__":
    install(Path(sys.argv[1]), float(os.environ.get("MEMLANE_TEST_STALL", "0")))
    sys.argv = ["memlane", "worker", "--celery", *sys.argv[2:]]
    main()
