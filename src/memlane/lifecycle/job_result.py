"""What a background job wrote: the job found by its id alone within a tenant, and the typed memories extracted
from the messages it was given (read from their sources, so a memory a later job merged into is included too).
"""

from __future__ import annotations

from memlane.errors import NotFoundError
from memlane.models import TYPED_KINDS, Filters, JobResult, MemoryItem
from memlane.scope import in_tenant, unscope, unscope_all
from memlane.store.base import Store

#: Typed memories read per page while looking for a job's: a scope's messages are never read.
PAGE = 1000


def job_result(store: Store, job_id: str, tenant: str) -> JobResult:
    """The job ``job_id`` of ``tenant`` and the typed memories it wrote, oldest first (superseded ones included);
    ``NotFoundError`` when the tenant has no such job (whether another tenant has is not said).
    """
    job = store.find_job(job_id)
    if job is None or not in_tenant(job.user_id, tenant):
        raise NotFoundError(f"no job {job_id!r} in this tenant")
    wanted = {str(i) for i in job.payload.get("message_ids", [])}
    found: list[MemoryItem] = []
    if wanted:
        typed = Filters(kind=list(TYPED_KINDS), include_superseded=True)
        offset = 0
        while True:
            page = store.list(job.user_id, typed, PAGE, offset)
            found.extend(m for m in page if any(s.memory_id in wanted for s in m.sources))
            if len(page) < PAGE:
                break
            offset += PAGE
    return JobResult(job=unscope(job), memories=unscope_all(found))
