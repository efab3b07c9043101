"""A process-wide guard that refuses and records every network connection except to this machine."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

_attempts: list[str] = []
_installed = False
_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def _is_local(host: str) -> bool:
    if host in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _check(address: Any) -> None:
    if isinstance(address, tuple) and address and isinstance(address[0], str) and not _is_local(address[0]):
        _attempts.append(f"{address[0]}:{address[1] if len(address) > 1 else ''}")
        raise OSError(f"network access is disabled in memlane benchmarks (tried {address[0]})")


def block_network() -> None:
    """Refuse connections and name lookups for anything but loopback and Unix sockets, in this process."""
    global _installed
    if _installed:
        return
    _installed = True
    connect = socket.socket.connect
    connect_ex = socket.socket.connect_ex
    getaddrinfo = socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: Any) -> None:
        _check(address)
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        _check(address)
        return connect_ex(self, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if isinstance(name, str) and not _is_local(name):
            _attempts.append(f"lookup {name}")
            raise socket.gaierror(socket.EAI_NONAME, f"network access is disabled in memlane benchmarks ({name})")
        return getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = guarded_connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = guarded_getaddrinfo


def attempts() -> list[str]:
    """Every refused connection or lookup so far, in order (distinct entries)."""
    return list(dict.fromkeys(_attempts))
