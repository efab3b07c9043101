"""The job queue capability over this backend's job-table SQL (``jobs.py``); the methods are shared
(``memlane.store.jobqueue``).
"""

from __future__ import annotations

import memlane.store.sqlite.jobs as jobs_sql
from memlane.store.jobqueue import JobTableSQL, SQLJobQueue
from memlane.store.sqlite.db import Database


class SQLiteJobQueue(SQLJobQueue[Database]):
    """Durable jobs in the same file as the memories they read."""

    _jobs_sql: JobTableSQL = jobs_sql
