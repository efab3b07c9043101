"""The HTTP client's error mapping: each status the server documents becomes the library's error class, with the
server's detail (a string, FastAPI's field-error list, or ``detail`` with ``errors``) as the message.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("httpx", reason="the HTTP client needs memlane[client]")

from memlane.client import AuthenticationError, PermissionDeniedError, RateLimitError, ServerError
from memlane.client.wire import Reply, Request, ServerUnavailableError, error_of, segment
from memlane.errors import EmbedderMismatchError, JobTimeoutError, NotFoundError, ValidationError


def reply(status: int, body: object, **headers: str) -> Reply:
    return Reply(status, json.dumps(body) if not isinstance(body, str) else body, headers)


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, ValidationError),
        (413, ValidationError),
        (422, ValidationError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (409, EmbedderMismatchError),
        (429, RateLimitError),
        (503, ServerUnavailableError),
        (504, JobTimeoutError),
        (500, ServerError),
    ],
)
def test_each_status_maps_to_its_library_error(status, cls):
    err = error_of(reply(status, {"detail": "the detail"}))
    assert type(err) is cls and "the detail" in str(err)


def test_detail_shapes():
    fastapi = {"detail": [{"loc": ["body", "top_k"], "msg": "Input should be greater than or equal to 1"}]}
    assert str(error_of(reply(422, fastapi))) == "top_k: Input should be greater than or equal to 1"
    shaped = {"detail": "invalid input", "errors": [{"loc": ["body", "query"], "msg": "Field required"}]}
    assert str(error_of(reply(400, shaped))) == "invalid input; query: Field required"
    assert str(error_of(reply(502, "<html>bad gateway</html>"))) == "HTTP 502: <html>bad gateway</html>"
    limited = error_of(reply(429, {"detail": "rate limit exceeded"}, **{"retry-after": "2"}))
    assert isinstance(limited, RateLimitError) and limited.retry_after == 2.0


def test_request_body_and_path_segments():
    from datetime import UTC, datetime

    body = Request("POST", "/x", body={"at": datetime(2024, 1, 2, tzinfo=UTC), "n": 1}).json_body()
    assert json.loads(body) == {"at": "2024-01-02T00:00:00Z", "n": 1}
    assert segment("a/b c") == "a%2Fb%20c"
    with pytest.raises(ValidationError):
        segment("")


def test_the_client_does_not_need_the_server_extra():
    import subprocess
    import sys

    code = (
        "import sys, memlane.client; print(sorted(m for m in ('fastapi', 'starlette', 'uvicorn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
