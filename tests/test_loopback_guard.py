"""The loopback guard (tests/support/loopback_guard.py): a request past loopback is refused, in the pytest process
and in every Python process the tests start, and fails the test that made it even when its code swallowed the
error; loopback (127.0.0.1, ::1, localhost) is let through. 203.0.113.1 is TEST-NET-3: never a real host."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from kernel_harness import Kernel
from loopback_guard import LeftLoopback, is_loopback, refusals

from pi_notebook.testing import FaultServer

OUTSIDE = "http://203.0.113.1:9/"
SUPPORT = Path(__file__).resolve().parent / "support"


def test_the_guard_is_on_for_this_run() -> None:
    assert os.environ.get("PI_PAID_EXAMPLES", "0") == "0"
    assert "loopback_site" in os.environ["PYTHONPATH"]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True), ("::ffff:127.0.0.1", True),
        ("localhost", True), ("LOCALHOST.", True), ("app.localhost", True), (None, True),
        ("203.0.113.1", False), ("10.0.0.1", False), ("::2", False), ("api.openai.com", False),
        ("localhost.example.com", False),
    ],
)  # fmt: skip
def test_what_counts_as_loopback(host: str | None, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_an_httpx_request_past_loopback_is_refused_and_noted() -> None:
    refused_here = re.escape("loopback guard: connect to 203.0.113.1:9 refused")
    with refusals() as refused, pytest.raises(httpx.ConnectError, match=refused_here):
        httpx.get(OUTSIDE, timeout=5)
    [line] = refused
    assert line.startswith(f"connect to 203.0.113.1:9 (pid {os.getpid()}:")


async def test_an_async_request_and_a_name_lookup_are_refused() -> None:
    with refusals() as refused:
        async with httpx.AsyncClient(timeout=5) as client:
            with pytest.raises(httpx.ConnectError):  # anyio says "All connection attempts failed": the log tells
                await client.get(OUTSIDE)
            with pytest.raises(httpx.ConnectError, match=re.escape("loopback guard: resolving 'api.example.com'")):
                await client.get("https://api.example.com/v1/models")
        with pytest.raises(LeftLoopback):
            socket.create_connection(("api.example.com", 443), timeout=5)
    assert [line.split(" (pid")[0] for line in refused] == [
        "connect to 203.0.113.1:9",
        "resolving 'api.example.com'",
        "resolving 'api.example.com'",
    ]


def test_loopback_is_let_through(server: FaultServer) -> None:
    for base in (server.base_url, f"http://localhost:{server.port}"):
        assert httpx.get(f"{base}/v1/models", timeout=5).status_code == 404  # the fault server's answer


class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, format: str, *args: object) -> None:
        pass


class _IPv6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


@pytest.fixture
def ipv6_server() -> Iterator[str]:
    try:
        httpd = _IPv6Server(("::1", 0), _Hello)
    except OSError as error:
        pytest.skip(f"this machine has no IPv6 loopback (::1): {error}")
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://[::1]:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def test_ipv6_loopback_is_let_through(ipv6_server: str) -> None:
    assert httpx.get(ipv6_server, timeout=5).text == "hello"


def test_a_python_subprocess_is_guarded_too() -> None:
    code = "import socket; socket.create_connection(('203.0.113.1', 9), timeout=5)"
    with refusals() as refused:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "LeftLoopback: [Errno 111] loopback guard: connect to 203.0.113.1:9 refused" in done.stderr
    [line] = refused
    assert line.startswith("connect to 203.0.113.1:9 (pid ") and "-c" in line


@pytest.mark.timeout(120)  # a kernel's start takes a minute on a loaded machine
def test_a_kernel_is_guarded_too(fresh_kernel: Kernel) -> None:
    cell = "import socket\ntry:\n    socket.create_connection(('203.0.113.1', 9), timeout=5)\nexcept OSError as e:\n"
    cell += "    print(e)"
    with refusals() as refused:
        printed = fresh_kernel.run(cell).stdout
    assert "loopback guard: connect to 203.0.113.1:9 refused" in printed
    [line] = refused
    assert "ipykernel_launcher" in line


SWALLOWED = """
import httpx

def test_swallows_the_error():
    try:
        httpx.get("http://203.0.113.1:9/", timeout=5)
    except httpx.HTTPError:
        pass

def test_stays_on_loopback():
    pass
"""


@pytest.mark.timeout(180)  # a second pytest starts: its plugins' imports take a minute on a loaded machine
def test_a_test_that_swallows_the_refusal_fails_all_the_same(tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(SWALLOWED)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SUPPORT), os.environ["PYTHONPATH"]])}
    env.pop("PYTEST_CURRENT_TEST", None)
    command = [sys.executable, "-m", "pytest", "-p", "loopback_guard", "-p", "no:cacheprovider", "-q", "test_inner.py"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=170, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "test_inner.py::test_swallows_the_error (call) reached past loopback:" in done.stdout
    assert "connect to 203.0.113.1:9 (pid" in done.stdout
    assert "1 failed, 1 passed" in done.stdout
