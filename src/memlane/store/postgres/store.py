"""``PostgresStore``: wires the PostgreSQL capabilities (rows, tsvector BM25, pgvector HNSW, graph, structured
questions, security log, history, jobs) into one ``Store``, opened from a ``postgresql://`` URL.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from memlane.errors import ConfigError
from memlane.models import Compaction
from memlane.store.alias_tables import AliasTables
from memlane.store.postgres.archive import PostgresArchive
from memlane.store.postgres.candidates import PostgresCandidateIndex
from memlane.store.postgres.db import EF_SEARCH_OPTION, POOL_OPTION, Database, owned_tables, redact
from memlane.store.postgres.entities import PostgresEntityIndex
from memlane.store.postgres.feedback import PostgresFeedback
from memlane.store.postgres.graph import PostgresGraph
from memlane.store.postgres.history import PostgresHistory
from memlane.store.postgres.hot_feed import HotScopes
from memlane.store.postgres.passages import PostgresPassages
from memlane.store.postgres.queue import PostgresJobQueue
from memlane.store.postgres.reads import PostgresReads
from memlane.store.postgres.security import PostgresSecurity
from memlane.store.postgres.sourced import PostgresSourced
from memlane.store.postgres.structured import PostgresStructuredIndex
from memlane.store.postgres.text import PostgresTextIndex
from memlane.store.postgres.timeline import PostgresTimeline
from memlane.store.postgres.transfer import PostgresTransfer
from memlane.store.postgres.validity import PostgresValidity
from memlane.store.postgres.vectors import PostgresVectorIndex
from memlane.store.postgres.writes import PostgresWrites


def _int_option(options: dict[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = options.pop(name, None)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise ConfigError(f"the store URL option {name}={raw!r} must be an integer from {low} to {high}")
    return value


class PostgresStore(
    PostgresReads,
    PostgresWrites,
    PostgresTextIndex,
    PostgresVectorIndex,
    PostgresCandidateIndex,
    PostgresEntityIndex,
    PostgresStructuredIndex,
    PostgresValidity,
    PostgresGraph,
    PostgresFeedback,
    PostgresHistory,
    PostgresJobQueue,
    PostgresArchive,
    PostgresSecurity,
    PostgresTransfer,
    PostgresPassages,
    PostgresTimeline,
    PostgresSourced,
):
    """A store in a PostgreSQL database (with pgvector). Thread-safe (a pool of connections); any number of
    processes may open the same database: every write is a transaction, migrations queue on an advisory lock.

    URL options read by memlane (removed before connecting): ``pool_size`` (connections per process, default 4)
    and ``ef_search`` (HNSW search breadth, default 100); any other option goes to libpq.
    """

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        options = dict(parse_qsl(parts.query, keep_blank_values=True))
        pool_size = _int_option(options, POOL_OPTION, 4, 1, 1000)
        ef_search = _int_option(options, EF_SEARCH_OPTION, 100, 1, 1000)
        conninfo = urlunsplit(parts._replace(query=urlencode(options)))
        self._location = redact(url)
        self._db = Database(conninfo, location=self._location, pool_size=pool_size, ef_search=ef_search)
        self._hot = HotScopes(self._db)
        self._aliases = AliasTables()

    @property
    def read_only(self) -> bool:
        return False

    @property
    def location(self) -> str:
        return self._location

    def size_bytes(self) -> int:
        return self._db.size_bytes()

    def compact(self) -> Compaction:
        before = self.size_bytes()
        rewritten, notes = self._db.compact(owned_tables())
        return Compaction(
            path=self.location, size_before=before, size_after=self.size_bytes(), rewritten=rewritten, notes=notes
        )

    def pinned(self) -> AbstractContextManager[None]:
        return nullcontext()  # the read model's feed checks the change log at most every few milliseconds already

    def close(self) -> None:
        self._db.close()
