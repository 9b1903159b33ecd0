"""No test reaches past loopback (pydantic-ai's ``ALLOW_MODEL_REQUESTS`` idea, at the socket): a pytest plugin that
the repository's ``conftest.py`` loads for every run, the teaching notebooks' included.

What it covers:

- The pytest process: a socket ``connect``/``connect_ex``/``sendto`` to an address outside 127.0.0.0/8 and ::1 is
  refused with :class:`LeftLoopback` (a ``ConnectionRefusedError``: httpx reports it as a ``ConnectError``), and
  so is resolving any name but ``localhost`` (a DNS query leaves the machine). Nothing is sent.
- Every Python process the tests start (kernels, by the harness or by nbval; JupyterLab's server; the LiteLLM
  proxy; ``python`` run by the bash tool): ``PYTHONPATH`` carries ``loopback_site/``, whose ``sitecustomize``
  installs the same guard when the interpreter starts.
- Chromium, in the browser tests: ``lab_harness`` sends every non-loopback request to a closed port on 127.0.0.1
  (a proxy that is not there; Chromium never proxies loopback) and notes each one here.

Each refusal is appended to the file named by ``PI_TEST_NETWORK_LOG``, and the test during whose set-up, call or
tear-down it happened fails, naming what was refused, even when the code under test swallowed the error.

Not covered: programs that are not Python (``node`` in the Pi interop tests, ``curl`` in a bash tool call), C
code that opens its own sockets (libzmq: a kernel's connection file names 127.0.0.1), and a Python started with
``-S``/``-I`` or a ``PYTHONPATH`` of its own.

The guard is off when ``PI_PAID_EXAMPLES`` is set to anything but ``0``: the quickstart's paid cells then call the
provider on purpose (the header of pytest's output says which).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from loopback_core import LOG_VARIABLE, LeftLoopback, install, is_loopback, note_url

__all__ = ["LeftLoopback", "is_loopback", "note_url", "refusals"]

SITE = Path(__file__).resolve().parent / "loopback_site"
_EXCUSED: list[tuple[int, int]] = []  # byte ranges of the log that a test expected (see ``refusals``)


# --- the log a test run reads


def _log() -> Path | None:
    path = os.environ.get(LOG_VARIABLE)
    return Path(path) if path else None


def _size() -> int:
    log = _log()
    return log.stat().st_size if log is not None and log.exists() else 0


def _lines(start: int, end: int) -> list[str]:
    log = _log()
    if log is None or end <= start:
        return []
    with log.open("rb") as file:
        file.seek(start)
        return file.read(end - start).decode("utf-8", "replace").splitlines()


def _unexcused(start: int, end: int) -> list[str]:
    """The lines in [start, end) outside every range a test expected."""
    found, position = [], start
    for low, high in sorted(_EXCUSED):
        if high <= position or low >= end:
            continue
        found += _lines(position, low)
        position = max(position, high)
    return found + _lines(position, end)


@contextlib.contextmanager
def refusals() -> Iterator[list[str]]:
    """For tests of the guard: refusals inside the block are the test's to check, not a failure; the list holds
    their log lines after the block."""
    start, lines = _size(), list[str]()
    try:
        yield lines
    finally:
        end = _size()
        lines += _lines(start, end)
        _EXCUSED.append((start, end))


# --- the plugin


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PI_PAID_EXAMPLES", "0") != "0":
        return
    descriptor, path = tempfile.mkstemp(prefix="pi-notebook-network-", suffix=".log")
    os.close(descriptor)
    os.environ[LOG_VARIABLE] = path
    os.environ["PYTHONPATH"] = os.pathsep.join([str(SITE), *filter(None, [os.environ.get("PYTHONPATH")])])
    install()


def pytest_unconfigure(config: pytest.Config) -> None:
    log = _log()
    if log is not None and os.environ.get("PI_PAID_EXAMPLES", "0") == "0":
        log.unlink(missing_ok=True)


def pytest_report_header(config: pytest.Config) -> str:
    paid = os.environ.get("PI_PAID_EXAMPLES", "0")
    if paid != "0":
        return f"loopback guard: off (PI_PAID_EXAMPLES={paid}: paid example cells may call the provider)"
    return "loopback guard: on (a request past 127.0.0.1/::1 fails the test; tests/support/loopback_guard.py)"


def _checked(item: pytest.Item, phase: str) -> Generator[None, object, object]:
    start = _size()
    try:
        return (yield)
    finally:
        leaks = _unexcused(start, _size())
        if leaks:
            listed = "\n  ".join(leaks)
            pytest.fail(f"{item.nodeid} ({phase}) reached past loopback:\n  {listed}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _checked(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _checked(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    return (yield from _checked(item, "teardown"))
