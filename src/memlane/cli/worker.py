"""``memlane worker``: run a store's background jobs in the foreground, on Celery when a broker is configured."""

from __future__ import annotations

import logging
import time
from typing import Annotated, Any

import typer

from memlane.cli.common import lazy_memory, memory_type
from memlane.cli.options import DbOpt, EmbedderOpt, env_config
from memlane.cli.output import err, fail
from memlane.errors import MemlaneError


def __getattr__(name: str) -> Any:
    return lazy_memory(__name__, name)


def worker_command(
    celery: Annotated[
        bool,
        typer.Option("--celery", help="Run a Celery worker (needs memlane[celery] and a broker URL)."),
    ] = False,
    broker: Annotated[
        str | None,
        typer.Option("--broker", envvar="MEMLANE_BROKER_URL", help="Broker URL, e.g. redis://localhost:6379/0."),
    ] = None,
    queue: Annotated[str | None, typer.Option("--queue", help="Celery queue (default: memlane).")] = None,
    pool: Annotated[str, typer.Option("--pool", help="Celery pool: prefork, solo or threads.")] = "prefork",
    concurrency: Annotated[int, typer.Option("--concurrency", help="Celery pool processes.")] = 1,
    db: DbOpt = None,
    embedder: EmbedderOpt = None,
) -> None:
    """Run background jobs until stopped: on Celery with --celery (or a broker URL), else the embedded queue."""
    if pool not in ("prefork", "solo", "threads"):
        fail(f"unknown pool {pool!r}; choose prefork, solo or threads")
    if concurrency < 1:
        fail("--concurrency must be at least 1")
    try:
        config = env_config()
        changes: dict[str, object] = {}
        if broker:
            changes["broker_url"] = broker
        if queue:
            changes["broker_queue"] = queue
        config = config.with_(**changes) if changes else config
        if celery or config.broker_url:
            if not config.broker_url:
                fail("--celery needs a broker URL: --broker or MEMLANE_BROKER_URL")
            from memlane.broker.celery_worker import WorkerRuntime, run_worker

            logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
            run_worker(WorkerRuntime(db, embedder, config), pool=pool, concurrency=concurrency)
            return
        with memory_type(__name__)(db, embedder=embedder, config=config) as memory:
            err.print(f"running the background jobs of {memory.location} (Ctrl-C stops after the job in hand)")
            while True:
                memory.flush()
                time.sleep(1.0)
    except MemlaneError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        err.print("stopped")
