"""Writer processes for the fault-injection and multi-process suites.

Run as ``python -m tests.reliability.children WORKLOAD DB ACKS SEED [ARG]``. Each workload writes to the store at
``DB`` and appends one JSON line to ``ACKS`` after every call that returned (flushed before the next call), so the
parent knows exactly which writes were acknowledged when it SIGKILLs the process. The first line is ``{"op":
"ready"}``, written once the store is open.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlane import Config, JobTimeoutError, Memory
from memlane.lifecycle.distill import Distiller

CITIES = ("Boston", "Denver", "Austin", "Seattle", "Portland", "Chicago", "Tucson", "Omaha", "Reno", "Dayton")
SYLLABLES = ("zor", "quil", "vex", "mab", "tro", "pif", "gul", "nak", "dre", "sov", "lum", "kap")


def token(rng: random.Random) -> str:
    """A made-up word no other text contains (so a search for it finds only its own message)."""
    return "".join(rng.choice(SYLLABLES) for _ in range(4)) + str(rng.randrange(10**6))


def open_memory(db: str, *, embedder: str = "hash", background: bool = False, infer: bool = True) -> Memory:
    home = Path(db).parent / "home"
    config = Config(data_dir=home, embedder=embedder, infer=infer, background_worker=background)
    return Memory(db, embedder=embedder, config=config)


class Acks:
    """Append-only acknowledgement log: one JSON object per line, flushed at once."""

    def __init__(self, path: str) -> None:
        self._fh = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives as long as the process

    def __call__(self, **record: Any) -> None:
        self._fh.write(json.dumps(record) + "\n")
        self._fh.flush()


def conversation(rng: random.Random) -> tuple[list[dict[str, str]], str]:
    """Two turns: a residence (extracted as a fact) and a turn carrying a unique word."""
    word = token(rng)
    return [
        {"role": "user", "content": f"I live in {rng.choice(CITIES)}."},
        {"role": "user", "content": f"My locker code word is {word}."},
    ], word


def add_record(op: str, user: str, result: Any, turns: list[dict[str, str]], word: str) -> dict[str, Any]:
    return {
        "op": op,
        "user": user,
        "ids": [it.id for it in result.items],
        "texts": [t["content"] for t in turns],
        "word": word,
        "job": result.job_id,
        "duplicates": result.duplicates,
    }


def sync_adds(db: str, ack: Acks, rng: random.Random, arg: str) -> None:
    """Synchronous adds with extraction (and so consolidation) for three users."""
    memory = open_memory(db)
    ack(op="ready")
    for i in range(10**6):
        user = f"u{i % 3}"
        turns, word = conversation(rng)
        ack(**add_record("sync", user, memory.add(turns, user_id=user), turns, word))


def async_adds(db: str, ack: Acks, rng: random.Random, arg: str) -> None:
    """Adds whose extraction is queued, drained by the background worker meanwhile."""
    memory = open_memory(db, background=True)
    ack(op="ready")
    for i in range(10**6):
        user = f"u{i % 3}"
        turns, word = conversation(rng)
        ack(**add_record("async", user, memory.add(turns, user_id=user, async_mode=True), turns, word))


def consolidation(db: str, ack: Acks, rng: random.Random, arg: str) -> None:
    """One user moving house again and again: every add supersedes the last residence."""
    memory = open_memory(db)
    ack(op="ready")
    for _ in range(10**6):
        turns, word = conversation(rng)
        ack(**add_record("sync", "mover", memory.add(turns, user_id="mover"), turns, word))


def delete_users(db: str, ack: Acks, rng: random.Random, arg: str) -> None:
    """Rounds of: a victim user gets sync and async adds (jobs in flight), then ``delete_all``."""
    memory = open_memory(db, background=True)
    ack(op="ready")
    for n in range(10**6):
        victim = f"victim{n}"
        words = []
        for i in range(4):
            turns, word = conversation(rng)
            words.append(word)
            result = memory.add(turns, user_id=victim, async_mode=i % 2 == 0)
            ack(**add_record("victim-add", victim, result, turns, word))
        keeper_turns, keeper_word = conversation(rng)
        ack(**add_record("sync", "keeper", memory.add(keeper_turns, user_id="keeper"), keeper_turns, keeper_word))
        memory.delete_all(user_id=victim)
        ack(op="delete_all", user=victim, words=words)


def reindex(db: str, ack: Acks, rng: random.Random, arg: str) -> None:
    """Re-embed the whole store with the embedder named by ``arg``, in small batches."""
    memory = open_memory(db, embedder=arg, infer=False)
    ack(op="ready")
    n = memory.reindex(batch_size=1, on_progress=lambda k: ack(op="progress", count=k))
    ack(op="reindexed", embedder=arg, count=n)


def import_file(db: str, ack: Acks, rng: random.Random, arg: str) -> None:
    """Import the export file ``arg``."""
    memory = open_memory(db, infer=False)
    ack(op="ready")
    n = memory.import_(arg, keep_user_ids=True)  # restore the export as it was (three users)
    ack(op="imported", count=n)


def mixed(db: str, ack: Acks, rng: random.Random, arg: str) -> None:
    """The multi-process workload: for ``arg`` seconds, open the store as the CLI does (one command, one open),
    add synchronously or asynchronously for shared users, and log every job this process ran."""
    deadline = time.monotonic() + float(arg)
    ack(op="ready")
    count_job_runs(ack, os.getpid())
    while time.monotonic() < deadline:
        memory = open_memory(db, background=rng.random() < 0.5)
        for _ in range(rng.randrange(1, 4)):
            user = f"u{rng.randrange(3)}"
            turns, word = conversation(rng)
            result = memory.add(turns, user_id=user, async_mode=rng.random() < 0.5)
            ack(**add_record("mixed", user, result, turns, word))
        if rng.random() < 0.3:
            try:
                memory.flush(timeout=60)
            except JobTimeoutError:  # other processes' jobs still running: not this command's business
                ack(op="flush-timeout")
        memory.close()


def count_job_runs(ack: Acks, pid: int) -> Callable[[], None]:
    """Log every job whose extraction this process runs to completion (a fenced run stores nothing: not logged).

    Patched on the class before any ``Memory`` opens, so that a worker thread started by the open is counted too.
    Returns the undo.
    """
    run = Distiller.run

    def counted(self: Distiller, user_id: str, message_ids: Any, *, job: Any = None, **kw: Any) -> Any:
        outcome = run(self, user_id, message_ids, job=job, **kw)
        if job is not None:
            ack(op="ran", job=job.id, pid=pid)
        return outcome

    Distiller.run = counted  # type: ignore[method-assign]

    def undo() -> None:
        Distiller.run = run  # type: ignore[method-assign]

    return undo


WORKLOADS: dict[str, Callable[[str, Acks, random.Random, str], None]] = {
    "sync": sync_adds,
    "async": async_adds,
    "consolidation": consolidation,
    "delete_all": delete_users,
    "reindex": reindex,
    "import": import_file,
    "mixed": mixed,
}


def main(argv: list[str]) -> None:
    workload, db, acks, seed = argv[:4]
    arg = argv[4] if len(argv) > 4 else ""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    WORKLOADS[workload](db, Acks(acks), random.Random(int(seed)), arg)


if __name__ == "__main__":
    main(sys.argv[1:])
