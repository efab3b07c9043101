"""The job queue capability over the shared job-table SQL (``memlane.store.sql.jobs``) in this backend's dialect;
the methods are shared (``memlane.store.jobqueue``).
"""

from __future__ import annotations

from typing import Final

from memlane.store.jobqueue import JobTableSQL, SQLJobQueue
from memlane.store.sql.dialect import SQLITE
from memlane.store.sql.jobs import JobTable
from memlane.store.sqlite.db import Database

#: The job table in this backend's dialect.
JOBS: Final = JobTable(SQLITE)


class SQLiteJobQueue(SQLJobQueue[Database]):
    """Durable jobs in the same file as the memories they read."""

    _jobs_sql: JobTableSQL = JOBS
