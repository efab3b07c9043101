"""Every call of the HTTP client, written once as a plan (``memlane.client.wire.Plan``): the requests it makes and
how their replies become the library's own return values. Each has the name, arguments and return type of the
``Memory`` method it stands for; ``Client`` runs these plans over a blocking transport, ``AsyncClient`` over an
asynchronous one.

Over REST the tenant is the API key's: ``tenant`` is accepted for the same signatures and must be left unset.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, TypeAdapter

from memlane.answer.ask import Answer
from memlane.answer.context import Context
from memlane.client.wire import Plan, Request, segment
from memlane.errors import JobTimeoutError, ValidationError
from memlane.models import (
    AddResult,
    Filters,
    FlaggedMemory,
    HistoryEntry,
    Hit,
    Job,
    JobResult,
    JobState,
    MemoryItem,
    Message,
    Stats,
)
from memlane.observe import Observation

MessagesInput = str | Message | Mapping[str, Any] | Sequence[str | Message | Mapping[str, Any]]
FiltersInput = Filters | Mapping[str, Any] | None
ObservationsInput = Observation | Mapping[str, Any] | Sequence[Observation | Mapping[str, Any]]
NDJSON = "application/x-ndjson"
#: Seconds between two looks at a job in ``wait``.
POLL = 0.05

_HITS = TypeAdapter(list[Hit])
ITEMS = TypeAdapter(list[MemoryItem])
_JOBS = TypeAdapter(list[Job])
_ENTRIES = TypeAdapter(list[HistoryEntry])
_FLAGGED = TypeAdapter(list[FlaggedMemory])
_IDS = TypeAdapter(list[str])
OBJECT = TypeAdapter(dict[str, Any])
_ADD = TypeAdapter(AddResult)
ITEM = TypeAdapter(MemoryItem)
_JOB = TypeAdapter(Job)


def no_tenant(tenant: str | None) -> None:
    """Refuse a tenant: over REST it is the key's."""
    if tenant is not None:
        raise ValidationError("over REST the tenant is the API key's own: leave tenant unset")


def required_user(user_id: object) -> str:
    """A user id the route needs (REST scopes every call to one user)."""
    if not isinstance(user_id, str) or not user_id:
        raise ValidationError("user_id is required: a non-empty string")
    return user_id


def _dump(value: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    return value.model_dump(mode="json", exclude_defaults=True) if isinstance(value, BaseModel) else dict(value)


def _many(value: object, single: type[BaseModel]) -> list[Any]:
    if isinstance(value, str | single | Mapping):
        return [value]
    if isinstance(value, list | tuple):
        return list(value)
    raise ValidationError(f"expected a {single.__name__}, a dict or a list of them, not {type(value).__name__}")


def _time(value: datetime | str | None) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else value


def present(**params: str | int | float | bool | None) -> dict[str, str | int | float | bool]:
    """The parameters that were given (``None`` ones left out)."""
    return {k: v for k, v in params.items() if v is not None}


# -- memories ----------------------------------------------------------------------------------------------------------
def add(
    messages: MessagesInput,
    *,
    user_id: str,
    session_id: str | None = None,
    agent_id: str | None = None,
    timestamp: datetime | str | None = None,
    metadata: Mapping[str, Any] | None = None,
    infer: bool | None = None,
    async_mode: bool = False,
    tenant: str | None = None,
) -> Plan[AddResult]:
    """``Memory.add``: store messages (all or none) and extract typed memories (queued with ``async_mode``)."""
    no_tenant(tenant)
    msgs = [m if isinstance(m, str) else _dump(m) for m in _many(messages, Message)]
    body: dict[str, Any] = {
        "user_id": required_user(user_id),
        "messages": msgs,
        **present(session_id=session_id, agent_id=agent_id, timestamp=_time(timestamp), infer=infer),
        "async": async_mode,
    }
    if metadata is not None:
        body["metadata"] = dict(metadata)
    reply = yield Request("POST", "/v1/memories", body=body)
    return reply.parse(_ADD)


def search(
    query: str,
    *,
    user_id: str,
    top_k: int = 10,
    filters: FiltersInput = None,
    preset_name: str | None = None,
    tenant: str | None = None,
) -> Plan[list[Hit]]:
    """``Memory.search``: the best hits, each with its score breakdown."""
    no_tenant(tenant)
    body: dict[str, Any] = {"user_id": required_user(user_id), "query": query, "top_k": top_k, "explain": True}
    if filters is not None:
        body["filters"] = _dump(filters)
    if preset_name is not None:
        body["preset"] = preset_name
    reply = yield Request("POST", "/v1/search", body=body)
    return _HITS.validate_python(reply.parse(OBJECT)["hits"])


def ask(
    question: str,
    *,
    user_id: str,
    tenant: str | None = None,
    top_k: int = 10,
    now: datetime | str | None = None,
    token_budget: int = 2000,
) -> Plan[Answer]:
    """``Memory.ask``: answer a question from the user's memories (structured query or search)."""
    no_tenant(tenant)
    body = {"user_id": required_user(user_id), "question": question, "top_k": top_k, "token_budget": token_budget}
    reply = yield Request("POST", "/v1/ask", body={**body, **present(now=_time(now))})
    return reply.parse(TypeAdapter(Answer))


def context(
    query: str,
    *,
    user_id: str,
    tenant: str | None = None,
    token_budget: int = 1000,
    top_k: int = 30,
    include_flagged: bool = False,
) -> Plan[Context]:
    """``Memory.context``: memories fenced as quoted data for a prompt (flagged ones always left out over REST)."""
    no_tenant(tenant)
    if include_flagged:
        raise ValidationError("include_flagged is not served over REST (an administrator reads /admin/flagged)")
    body = {"user_id": required_user(user_id), "query": query, "token_budget": token_budget, "top_k": top_k}
    reply = yield Request("POST", "/v1/context", body=body)
    return reply.parse(TypeAdapter(Context))


def observe(
    observations: ObservationsInput,
    *,
    user_id: str,
    tenant: str | None = None,
    session_id: str | None = None,
    agent_id: str | None = None,
) -> Plan[AddResult]:
    """``Memory.observe``: store grounded observations, all or none."""
    no_tenant(tenant)
    batch = [_dump(o) for o in _many(observations, Observation)]
    body = {
        "user_id": required_user(user_id),
        "observations": batch,
        **present(session_id=session_id, agent_id=agent_id),
    }
    reply = yield Request("POST", "/v1/observations", body=body)
    return reply.parse(_ADD)


def feedback(
    hit: Hit | str,
    *,
    useful: bool,
    query: str | None = None,
    user_id: str | None = None,
    tenant: str | None = None,
) -> Plan[None]:
    """``Memory.feedback``: whether a returned memory was useful for its query."""
    no_tenant(tenant)
    if isinstance(hit, Hit):
        memory_id, user_id, query = hit.memory.id, user_id or hit.memory.user_id, query or hit.query
    else:
        memory_id = hit
    if not query:
        raise ValidationError("feedback needs the query the memory was returned for")
    body = {"user_id": required_user(user_id), "memory_id": memory_id, "query": query, "useful": useful}
    yield Request("POST", "/v1/feedback", body=body)
    return None


def get(memory_id: str, *, user_id: str, tenant: str | None = None) -> Plan[MemoryItem]:
    """``Memory.get``: one memory; ``NotFoundError`` if this user has none with that id."""
    no_tenant(tenant)
    reply = yield Request("GET", f"/v1/memories/{segment(memory_id)}", params={"user_id": required_user(user_id)})
    return reply.parse(ITEM)


def list_(
    *,
    user_id: str,
    filters: FiltersInput = None,
    limit: int = 100,
    offset: int = 0,
    tenant: str | None = None,
) -> Plan[list[MemoryItem]]:
    """``Memory.list``: a user's memories that match ``filters``, oldest first."""
    no_tenant(tenant)
    if filters is None:
        params: dict[str, str | int | float | bool] = {"user_id": required_user(user_id), "limit": limit}
        reply = yield Request("GET", "/v1/memories", params={**params, "offset": offset})
    else:
        body = {"user_id": required_user(user_id), "filters": _dump(filters), "limit": limit, "offset": offset}
        reply = yield Request("POST", "/v1/memories/query", body=body)
    return reply.parse(ITEMS)


def history(memory_id: str, *, user_id: str, tenant: str | None = None) -> Plan[list[HistoryEntry]]:
    """``Memory.history``: every recorded change of a memory, oldest first."""
    no_tenant(tenant)
    path = f"/v1/memories/{segment(memory_id)}/history"
    reply = yield Request("GET", path, params={"user_id": required_user(user_id)})
    return reply.parse(_ENTRIES)


def flagged(
    *, user_id: str | None = None, tenant: str | None = None, limit: int = 100, offset: int = 0
) -> Plan[list[FlaggedMemory]]:
    """``Memory.flagged``: a user's memories flagged as likely prompt injections (admin keys)."""
    no_tenant(tenant)
    reply = yield Request(
        "GET", "/admin/flagged", params={"user_id": required_user(user_id), "limit": limit, "offset": offset}
    )
    return reply.parse(_FLAGGED)


def update(
    memory_id: str,
    *,
    user_id: str,
    text: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    importance: float | None = None,
    tenant: str | None = None,
) -> Plan[MemoryItem]:
    """``Memory.update``: change a memory's text, metadata or importance."""
    no_tenant(tenant)
    body: dict[str, Any] = {"user_id": required_user(user_id), **present(text=text, importance=importance)}
    if metadata is not None:
        body["metadata"] = dict(metadata)
    reply = yield Request("PATCH", f"/v1/memories/{segment(memory_id)}", body=body)
    return reply.parse(ITEM)


def delete(memory_id: str, *, user_id: str, tenant: str | None = None) -> Plan[list[str]]:
    """``Memory.delete``: the ids removed, ``memory_id`` first."""
    no_tenant(tenant)
    reply = yield Request("DELETE", f"/v1/memories/{segment(memory_id)}", params={"user_id": required_user(user_id)})
    return _IDS.validate_python(reply.parse(OBJECT)["deleted"])


def delete_all(*, user_id: str, tenant: str | None = None) -> Plan[int]:
    """``Memory.delete_all``: how many memories went."""
    no_tenant(tenant)
    reply = yield Request("DELETE", "/v1/memories", params={"user_id": required_user(user_id)})
    return int(reply.parse(OBJECT)["count"])


# -- transfer ---------------------------------------------------------------------------------------------------------
def export(dest: str | Path | IO[str], *, user_id: str | None = None, tenant: str | None = None) -> Plan[int]:
    """``Memory.export``: one user's memories (or, with an admin key, the tenant's) as JSONL into ``dest``."""
    no_tenant(tenant)
    reply = yield Request("GET", "/v1/export", params=present(user_id=user_id))
    if isinstance(dest, str | Path):
        path = Path(dest)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(reply.text, encoding="utf-8")
        partial.replace(path)  # whole or not at all
    else:
        dest.write(reply.text)
    return int(reply.headers.get("x-memlane-count", "0"))


def import_(
    source: str | Path | IO[str],
    *,
    user_id: str | None = None,
    keep_user_ids: bool = False,
    on_progress: Callable[[int], None] | None = None,
    tenant: str | None = None,
) -> Plan[int]:
    """``Memory.import_``: load a JSONL export into ``user_id``, all or nothing (``keep_user_ids``: the file's own
    users, an admin key's restore). ``on_progress`` is told the count once, when the server has it.
    """
    no_tenant(tenant)
    if keep_user_ids == (user_id is not None):
        raise ValidationError("give a user_id to import into, or keep_user_ids=True (admin keys), not both")
    text = Path(source).read_text(encoding="utf-8") if isinstance(source, str | Path) else source.read()
    reply = yield Request("POST", "/v1/import", params=present(user_id=user_id), content=text, content_type=NDJSON)
    n = int(reply.parse(OBJECT)["imported"])
    if on_progress is not None:
        on_progress(n)
    return n


def stats(*, user_id: str | None = None, tenant: str | None = None) -> Plan[Stats]:
    """``Memory.stats``: counts of one user's memories (path and size for admin keys only)."""
    no_tenant(tenant)
    reply = yield Request("GET", "/v1/stats", params={"user_id": required_user(user_id)})
    return reply.parse(TypeAdapter(Stats))


# -- jobs --------------------------------------------------------------------------------------------------------------
def job(job_id: str, *, user_id: str, tenant: str | None = None) -> Plan[Job]:
    """``Memory.job``: a background job of this user."""
    no_tenant(tenant)
    reply = yield Request("GET", f"/v1/jobs/{segment(job_id)}", params={"user_id": required_user(user_id)})
    return reply.parse(_JOB)


def jobs(
    *, user_id: str, state: JobState | str | None = None, limit: int = 100, tenant: str | None = None
) -> Plan[list[Job]]:
    """``Memory.jobs``: the user's background jobs, oldest first."""
    no_tenant(tenant)
    params = {"user_id": required_user(user_id), "limit": limit, **present(state=None if state is None else str(state))}
    reply = yield Request("GET", "/v1/jobs", params=params)
    return reply.parse(_JOBS)


def job_result(job_id: str, *, tenant: str | None = None) -> Plan[JobResult]:
    """``Memory.job_result``: a job of the key's tenant by its id alone, and the typed memories it wrote."""
    no_tenant(tenant)
    reply = yield Request("GET", f"/v1/jobs/{segment(job_id)}/result")
    return reply.parse(TypeAdapter(JobResult))


def wait(job_id: str, *, user_id: str, timeout: float | None = None, tenant: str | None = None) -> Plan[Job]:
    """``Memory.wait``: the job once done or failed; ``JobTimeoutError`` after ``timeout`` seconds."""
    no_tenant(tenant)
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.0
    while True:
        found = yield Request(
            "GET", f"/v1/jobs/{segment(job_id)}", params={"user_id": required_user(user_id)}, delay=delay
        )
        current = found.parse(_JOB)
        if current.state in (JobState.DONE, JobState.FAILED):
            return current
        if deadline is not None and time.monotonic() >= deadline:
            raise JobTimeoutError(f"job {job_id} is still {current.state.value} after {timeout} s")
        delay = POLL
