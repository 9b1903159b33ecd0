"""The socket guard of ``loopback_guard`` (the pytest plugin, which says what it covers), without pytest: the
``sitecustomize`` in ``loopback_site/`` installs it in every Python process the tests start."""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
import socket
import sys
from typing import Any, NoReturn
from urllib.parse import urlsplit

LOG_VARIABLE = "PI_TEST_NETWORK_LOG"
LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


class LeftLoopback(ConnectionRefusedError):
    """A test's process tried to reach past loopback."""


def _literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.partition("%")[0])  # an IPv6 scope id (``fe80::1%eth0``) is not part of it
    except ValueError:
        return None


def _is_address(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    return isinstance(host, str) and _literal(host.strip("[]")) is not None


def is_loopback(host: str | bytes | None) -> bool:
    """Whether reaching ``host`` (a name or an address) stays on this machine's loopback."""
    if host is None:
        return True  # getaddrinfo(None, port): this machine's own addresses, for binding
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = host.strip("[]").rstrip(".").lower()
    if host == "":
        return True
    address = _literal(host)
    if address is not None:
        return address.is_loopback or (
            isinstance(address, ipaddress.IPv6Address) and bool(address.ipv4_mapped and address.ipv4_mapped.is_loopback)
        )
    return host in LOCAL_NAMES or host.endswith(".localhost")


def record(what: str) -> None:
    """Note a refused attempt in the log the test run reads (a no-op outside one)."""
    path = os.environ.get(LOG_VARIABLE)
    if not path:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "no test")
    line = f"{what} (pid {os.getpid()}: {' '.join(sys.argv)[:120]}; started during {test})".replace("\n", " ")
    with contextlib.suppress(OSError), open(path, "a", encoding="utf-8") as log:
        log.write(line + "\n")


def _refuse(what: str) -> NoReturn:
    record(what)
    raise LeftLoopback(
        errno.ECONNREFUSED,
        f"loopback guard: {what} refused: tests reach servers on 127.0.0.1 only (tests/support/loopback_guard.py)",
    )


def _check_address(sock: socket.socket, address: Any, verb: str) -> None:
    if sock.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
        host = address[0]
        if not is_loopback(host):
            _refuse(f"{verb} to {host}:{address[1]}")


def install() -> None:
    """Guard this process's sockets (idempotent)."""
    if getattr(socket.getaddrinfo, "loopback_guard", False):
        return
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_sendto, real_getaddrinfo = socket.socket.sendto, socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        _check_address(self, address, "connect")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        _check_address(self, address, "connect")
        return real_connect_ex(self, address)

    def sendto(self: socket.socket, data: Any, *args: Any) -> int:
        _check_address(self, args[-1], "sendto")
        return real_sendto(self, data, *args)

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_loopback(host) and not _is_address(host):  # an address needs no lookup: connect checks it
            name = host.decode("ascii", "replace") if isinstance(host, bytes) else host
            _refuse(f"resolving {name!r}")
        return real_getaddrinfo(host, port, *args, **kwargs)

    getaddrinfo.loopback_guard = True  # type: ignore[attr-defined]
    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
    socket.socket.sendto = sendto  # type: ignore[assignment]
    socket.getaddrinfo = getaddrinfo


def note_url(url: str, who: str) -> None:
    """For a client the guard cannot patch (Chromium): record ``url`` when it leaves loopback."""
    parts = urlsplit(url)
    if parts.scheme in ("http", "https", "ws", "wss") and not is_loopback(parts.hostname):
        record(f"{who} request to {parts.scheme}://{parts.netloc}")
