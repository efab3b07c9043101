"""The ASGI layers that meet a request first, driven directly: the key is checked before the body is read, a body
that never completes is cut off at its deadline, and bodies in transit do not occupy the in-flight slots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("fastapi", reason="the REST server needs memlane[server]")

from memlane.server.edge import LOGIN_MAX_BYTES, KeyFirst
from memlane.server.keys import AdminDB
from memlane.server.limits import BodyLimit, InFlightLimit
from memlane.server.service import ServerSettings, Service


def _scope(headers: list[tuple[bytes, bytes]], path: str = "/v1/search") -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": path, "headers": headers}


class Recorder:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        return int(self.messages[0]["status"])

    @property
    def closes(self) -> bool:
        return (b"connection", b"close") in self.messages[0]["headers"]


async def _never() -> dict[str, Any]:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


async def _ok_app(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


def test_a_request_without_a_valid_key_is_refused_before_its_body_is_read(tmp_path: Path) -> None:
    admin = AdminDB(tmp_path / "server.db")
    service = Service(ServerSettings(data_dir=tmp_path), admin)
    read: list[int] = []

    async def receive() -> dict[str, Any]:
        read.append(1)
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def main() -> list[Recorder]:
        out = []
        for auth in (
            [],
            [(b"authorization", b"Bearer ml_000000000000_" + b"0" * 64)],
            [(b"authorization", b"Basic x")],
        ):
            send = Recorder()
            await KeyFirst(_ok_app, service)(_scope([*auth, (b"content-length", b"100")]), receive, send)
            out.append(send)
        send = Recorder()
        good = admin.create_key("acme", "read").secret.encode()
        await KeyFirst(_ok_app, service)(_scope([(b"authorization", b"Bearer " + good)]), receive, send)
        out.append(send)
        return out

    *refused, accepted = anyio.run(main)
    assert [(r.status, r.closes) for r in refused] == [(401, True)] * 3
    assert read == [1] and accepted.status == 200  # only the keyed request's body was read
    admin.close()


def test_a_body_that_never_completes_gets_408_at_its_deadline_and_the_connection_closes() -> None:
    async def main() -> tuple[Recorder, float]:
        send = Recorder()
        started = anyio.current_time()
        await BodyLimit(_ok_app, max_bytes=1000, timeout=0.3)(_scope([(b"content-length", b"100")]), _never, send)
        return send, anyio.current_time() - started

    send, took = anyio.run(main)
    assert send.status == 408 and send.closes and 0.25 < took < 2


def test_bodies_in_transit_do_not_take_the_in_flight_slots() -> None:
    inflight = InFlightLimit(_ok_app, max_inflight=1)
    stack = BodyLimit(inflight, max_bytes=1000, timeout=5, max_receiving=4)

    async def complete() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def main() -> tuple[list[int], list[int]]:
        slow = [Recorder() for _ in range(3)]
        fast = [Recorder() for _ in range(3)]
        with anyio.move_on_after(1):
            async with anyio.create_task_group() as tg:
                for send in slow:
                    tg.start_soon(stack, _scope([(b"content-length", b"100")]), _never, send)
                await anyio.sleep(0.05)
                for send in fast:  # one at a time: each needs the single in-flight slot
                    await stack(_scope([(b"content-length", b"2")]), complete, send)
                tg.start_soon(stack, _scope([(b"content-length", b"100")]), _never, Recorder())  # a 4th in transit
                await anyio.sleep(0.05)
                extra = Recorder()
                await stack(_scope([(b"content-length", b"2")]), complete, extra)  # no receiving slot left
                fast.append(extra)
                tg.cancel_scope.cancel()
        return [s.status for s in fast], [len(s.messages) for s in slow]

    fast, slow = anyio.run(main)
    assert fast == [200, 200, 200, 503]  # served while 3 bodies were in transit; refused once 4 filled the slots
    assert slow == [0, 0, 0]


def test_the_login_forms_anonymous_body_is_capped_small_and_read_within_a_short_deadline(tmp_path: Path) -> None:
    admin = AdminDB(tmp_path / "server.db")
    edge = KeyFirst(_ok_app, Service(ServerSettings(data_dir=tmp_path), admin))
    edge.login.timeout = 0.3  # LOGIN_TIMEOUT, shortened for the test
    login = "/ui/login"

    async def main() -> tuple[Recorder, Recorder, Recorder, float]:
        big = Recorder()  # announced too big: refused before a byte is read
        await edge(_scope([(b"content-length", str(LOGIN_MAX_BYTES + 1).encode())], login), _never, big)
        chunks = iter([b"key=" + b"x" * 3000, b"x" * 3000])

        async def streamed() -> dict[str, Any]:
            return {"type": "http.request", "body": next(chunks), "more_body": True}

        counted = Recorder()  # chunked, no length: refused once the count passes the cap
        await edge(_scope([(b"transfer-encoding", b"chunked")], login), streamed, counted)
        slow = Recorder()
        started = anyio.current_time()
        await edge(_scope([(b"content-length", b"20")], login), _never, slow)
        return big, counted, slow, anyio.current_time() - started

    big, counted, slow, took = anyio.run(main)
    assert (big.status, big.closes) == (413, True) and (counted.status, counted.closes) == (413, True)
    assert b"limit of 4096 bytes" in big.messages[1]["body"]
    assert (slow.status, slow.closes) == (408, True) and 0.25 < took < 2
    admin.close()
