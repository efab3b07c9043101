"""What a background job wrote: the job found by its id alone within a tenant, and the typed memories extracted
from the messages it was given (read from their sources, so a memory a later job merged into is included too).
"""

from __future__ import annotations

from memlane.errors import NotFoundError
from memlane.models import TYPED_KINDS, JobResult
from memlane.scope import in_tenant, unscope, unscope_all
from memlane.store.base import Store


def job_result(store: Store, job_id: str, tenant: str) -> JobResult:
    """The job ``job_id`` of ``tenant`` and the typed memories it wrote (superseded ones included), oldest first;
    ``NotFoundError`` when the tenant has no such job (whether another tenant has is not said). The sources are
    matched in the store (``SourcedIndex``): only the job's memories are read out.
    """
    job = store.find_job(job_id)
    if job is None or not in_tenant(job.user_id, tenant):
        raise NotFoundError(f"no job {job_id!r} in this tenant")
    wanted = list(dict.fromkeys(str(i) for i in job.payload.get("message_ids", [])))
    found = store.sourced_from(job.user_id, wanted, TYPED_KINDS) if wanted else []
    return JobResult(job=unscope(job), memories=unscope_all(found))
