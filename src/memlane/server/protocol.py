"""A deadline for a request's headers, which uvicorn does not have: its keep-alive timeout covers an idle connection,
but once a byte arrives nothing bounds how long the request line and headers may take (a "slowloris" client holds
the connection for as long as it trickles). ``header_timeout_protocol`` returns uvicorn's httptools protocol with a
timer armed when the connection opens and after each response, disarmed when a request's headers are complete;
when it fires, the connection is closed. Without httptools (part of ``uvicorn[standard]``) uvicorn's h11 protocol is
returned unchanged.
"""

from __future__ import annotations

import asyncio
from typing import Any


def header_timeout_protocol(seconds: float) -> type[asyncio.Protocol]:
    """Uvicorn's HTTP protocol class with a ``seconds`` deadline on every request's line and headers."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # pragma: no cover - httptools is part of uvicorn[standard]
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol

    class HeaderDeadline(HttpToolsProtocol):
        _deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            pipelined = bool(self.pipeline)  # a request whose headers are in already starts now: no deadline
            super().on_response_complete()
            if not pipelined and not self.transport.is_closing():
                self._arm()

    return HeaderDeadline
