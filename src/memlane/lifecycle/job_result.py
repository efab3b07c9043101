"""What a background job wrote: the job found by its id alone within a tenant, and the typed memories extracted
from the messages it was given (read from their sources, so a memory a later job merged into is included too).
"""

from __future__ import annotations

from memlane.errors import NotFoundError
from memlane.models import TYPED_KINDS, JobResult, MemoryItem
from memlane.records.timeline import TimelineCursor, TimelineFilter, timeline_time
from memlane.scope import in_tenant, unscope, unscope_all
from memlane.store.base import Store

#: Typed memories read per page while looking for a job's: a scope's messages are never read.
PAGE = 1000


def job_result(store: Store, job_id: str, tenant: str) -> JobResult:
    """The job ``job_id`` of ``tenant`` and the typed memories it wrote (superseded ones included), oldest first by
    when said, then when stored; ``NotFoundError`` when the tenant has no such job (whether another tenant has is not
    said).
    """
    job = store.find_job(job_id)
    if job is None or not in_tenant(job.user_id, tenant):
        raise NotFoundError(f"no job {job_id!r} in this tenant")
    wanted = {str(i) for i in job.payload.get("message_ids", [])}
    found: list[MemoryItem] = []
    if wanted:
        for kind in TYPED_KINDS:  # each kind along its own index: the user's turns are never read
            where = TimelineFilter(kind=kind, include_superseded=True)
            after: TimelineCursor | None = None
            while True:
                page = store.timeline(job.user_id, where, PAGE, after)
                found.extend(m for m in page if any(s.memory_id in wanted for s in m.sources))
                if len(page) < PAGE:
                    break
                after = TimelineCursor(timeline_time(page[-1]), page[-1].id)
        found.sort(key=lambda m: (m.timestamp, m.created_at, m.id))
    return JobResult(job=unscope(job), memories=unscope_all(found))
