"""``assemble``: open one store and build every service over it, sharing one ``Core``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memlane.broker import RetryPolicy, publisher_for
from memlane.config import Config
from memlane.documents.service import Documents
from memlane.embedding import Embedder, make_embedder, store_spec
from memlane.enrich.pipeline import Enricher
from memlane.errors import StoreError
from memlane.extraction.factory import Extraction, make_extraction
from memlane.lifecycle.distill import Distiller
from memlane.lifecycle.locks import Leases
from memlane.models import Job
from memlane.retrieval.rerank import make_reranker
from memlane.retrieval.search import Retriever
from memlane.security.guard import Guard
from memlane.security.validation import Limits, check_path
from memlane.services.core import Core
from memlane.services.graph import Graph
from memlane.services.indexing import Indexer
from memlane.services.jobs import JobHandler, Jobs
from memlane.services.lifecycle import Lifecycle
from memlane.services.read import Reads
from memlane.services.security import Security
from memlane.services.transfer import Transfer
from memlane.services.write import Writes
from memlane.store import Store, open_store
from memlane.worker import JobWorker

if TYPE_CHECKING:
    from memlane.broker.celery_app import Publisher


@dataclass(frozen=True)
class Services:
    """Every service over one store, and the parts they share (held here so they can be closed in order)."""

    core: Core
    handler: JobHandler
    extraction: Extraction
    retriever: Retriever
    distiller: Distiller
    worker: JobWorker
    publisher: Publisher | None
    writes: Writes
    reads: Reads
    jobs: Jobs
    lifecycle: Lifecycle
    security: Security
    graph: Graph
    transfer: Transfer
    documents: Documents

    def close(self) -> None:
        """Stop the job worker (after the job in hand; queued jobs wait for the next open) and close the store."""
        self.core.write_access()
        self.worker.stop()
        if self.publisher is not None:
            self.publisher.close()
        self.core.leases.close()
        self.extraction.close()
        self.core.store.close()


def assemble(
    path: str | Path | None,
    embedder: str | Embedder | None,
    config: Config,
    *,
    handle: Callable[[Job], None] | None = None,
) -> Services:
    """Open the store at ``path`` (default ``config.default_store``) with ``embedder`` and build the services.

    ``handle`` is what the job worker and ``run_job`` call for a claimed job (default: the services' own
    ``JobHandler``); the facade passes its ``_handle_job``, so that a job runs through it.

    A store indexed with another model than the configured one is opened with that model (when the embedder was
    named, not given as an object), so that its vectors stay comparable.
    """
    target = path if path is not None else config.default_store
    model = (
        embedder
        if isinstance(embedder, Embedder)
        else make_embedder(embedder or config.embedder, cache_dir=config.model_cache)
    )
    extraction = make_extraction(config)  # before the store: it may fail on a missing extra
    store = _open(target)
    if not isinstance(embedder, Embedder):
        spec = embedder or config.embedder
        held = store.embedder_identity()
        followed = store_spec(spec, held[0] if held else None)
        if followed != spec:
            model = make_embedder(followed, cache_dir=config.model_cache)
    core = Core(config, Limits.from_config(config), store, model, Leases(store))
    guard = Guard(config, chat=extraction.chat)  # injection detection and PII redaction
    enricher = Enricher(model)
    indexer = Indexer(core, store, enricher, guard)
    documents = Documents(core, indexer)
    retriever = Retriever(
        store,
        model,
        enricher,
        half_life_days=config.recency_half_life_days,
        reranker=make_reranker(config.reranker),
        rerank_depth=config.rerank_depth,
    )
    distiller = Distiller(
        store,
        embed=indexer.embed,
        enrich=indexer.enrich,
        extractor=extraction.extractor,
        consolidator=extraction.consolidator,
        min_confidence=config.min_confidence,
        capacity=config.capacity,
        weights=config.survival,
        evict_messages=config.evict_messages,
    )
    handler = JobHandler(core, store, distiller)
    handle = handler if handle is None else handle
    worker = JobWorker(
        store,
        handle,
        leases=core.leases,
        ready=core.embedder_ready,
        background=config.background_worker,
        policy=RetryPolicy.from_config(config),
    )
    publisher = publisher_for(config, store.location)  # async jobs go to Celery if set
    jobs = Jobs(core, store, handle, worker, publisher)
    security = Security(core, store, guard)
    services = Services(
        core=core,
        handler=handler,
        extraction=extraction,
        retriever=retriever,
        distiller=distiller,
        worker=worker,
        publisher=publisher,
        writes=Writes(core, store, indexer, distiller, jobs),
        reads=Reads(core, store, retriever, security, extraction.chat),
        jobs=jobs,
        lifecycle=Lifecycle(core, store, indexer, distiller, documents),
        security=security,
        graph=Graph(core, store, indexer),
        transfer=Transfer(core, store, indexer, enricher, documents),
        documents=documents,
    )
    if not store.read_only:  # a read-only store runs no jobs: they wait for a writer
        worker.recover()
    return services


def _open(target: object) -> Store:
    """The store at ``target``; a bad path is a ``ValidationError``, one that cannot be opened a ``StoreError``."""
    location = check_path(target, what="path")
    try:
        return open_store(location)
    except OSError as exc:
        raise StoreError(f"cannot open the store {str(location)[:200]!r}: {exc.strerror or exc}") from exc
