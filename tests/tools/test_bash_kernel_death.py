"""A kernel that dies without running its exit handlers (SIGKILL, OOM kill, ``shutdown_kernel(now=True)``) leaves
no bash tool process behind (issue 10 item 9): the shell, a child ignoring SIGTERM and a ``setsid`` grandchild
are all gone soon after. A real kernel (jupyter_client); processes found by an environment tag, polled with a
deadline."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import psutil
import pytest
from bash_helpers import DOUBLE_FORK, SCRUBBED, SETSID, TREE, is_gone, kill_all, named_pids
from kernel_harness import Kernel

pytestmark = [pytest.mark.timeout(120), pytest.mark.skipif(SETSID is None, reason="needs setsid(1)")]

DEADLINE_S = 10.0

START = """
import asyncio
from pi_notebook.ai import AbortController
from pi_notebook.tools import bash_tool
_tool = bash_tool(env={{"PI_TEST_TAG": {tag!r}}})
_task = asyncio.get_running_loop().create_task(
    _tool.execute("call", {{"command": {command!r}}}, AbortController().signal, None)
)
"""


def tagged(tag: str) -> list[psutil.Process]:
    """Living (non-zombie) processes whose environment carries ``PI_TEST_TAG=<tag>``."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get("PI_TEST_TAG") == tag:
                found.append(proc)
    return found


def wait_for(condition: Callable[[], bool], what: str, deadline_s: float = DEADLINE_S) -> float:
    """Poll ``condition()`` until true; the seconds it took. Fails at the deadline."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > deadline_s:
            raise AssertionError(f"not {what} within {deadline_s} s")
        time.sleep(0.005)
    return time.monotonic() - start


def sessions(tag: str) -> set[int]:
    """The session ids of the tagged processes (one that ended meanwhile is left out)."""
    found = set()
    for proc in tagged(tag):
        with contextlib.suppress(ProcessLookupError):
            found.add(os.getsid(proc.pid))
    return found


def start_tree(kernel: Kernel, tag: str) -> int:
    """Start the bash tool on the 3-level tree in the kernel; return the kernel's pid once all 3 are running and
    the grandchild has left the shell's session (``setsid`` runs in the forked child, after it is counted)."""
    pid = int(kernel.run("import os; print(os.getpid())").text.strip())
    kernel.run(START.format(tag=tag, command=TREE))
    wait_for(lambda: len(tagged(tag)) >= 3 and len(sessions(tag)) >= 2, "3 processes running, one in its own session")
    return pid


@pytest.mark.parametrize("how", ["sigkill", "shutdown_now"])
def test_no_bash_process_survives_a_kernel_that_dies_without_exit_handlers(fresh_kernel: Kernel, how: str) -> None:
    tag = secrets.token_hex(8)
    try:
        pid = start_tree(fresh_kernel, tag)  # one really left the session
        if how == "sigkill":
            os.kill(pid, signal.SIGKILL)
        else:
            fresh_kernel.manager.shutdown_kernel(now=True)
        wait_for(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, "dead")
        wait_for(lambda: tagged(tag) == [], "all tagged processes gone")
    finally:
        for proc in tagged(tag):
            with contextlib.suppress(psutil.Error):
                proc.kill()


REPLACED = """
import asyncio, os, signal, sys
from pi_notebook.ai import AbortController
from pi_notebook.tools import bash_tool
from pi_notebook.tools._lifeline import LIFELINE

async def main():
    tool = bash_tool(env={{"PI_TEST_TAG": {tag!r}}})
    call = tool.execute("call", {{"command": {command!r}}}, AbortController().signal, None)
    task = asyncio.get_running_loop().create_task(call)
    while LIFELINE.pid is None:
        await asyncio.sleep(0.005)
    first = LIFELINE.pid
    os.kill(first, signal.SIGKILL)
    deadline = asyncio.get_running_loop().time() + 5
    while LIFELINE.pid in (None, first):  # the running call's poll loop replaces it
        if asyncio.get_running_loop().time() > deadline:
            print("not replaced", flush=True)
            break
        await asyncio.sleep(0.005)
    else:
        print("replaced", first, LIFELINE.pid, flush=True)
    await task

asyncio.run(main())
"""


def test_a_watchdog_killed_mid_call_is_replaced_and_still_cleans_up_after_a_killed_interpreter() -> None:
    tag = secrets.token_hex(8)
    code = REPLACED.format(tag=tag, command=TREE)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.startswith("replaced "), line
        wait_for(lambda: len(tagged(tag)) >= 3, "3 processes running")
        child.kill()
        child.wait()
        wait_for(lambda: tagged(tag) == [], "all tagged processes gone")
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
        for proc in tagged(tag):
            with contextlib.suppress(psutil.Error):
                proc.kill()


DYING = """
import asyncio, re
from pi_notebook.ai import AbortController
from pi_notebook.tools import bash_tool

async def main():
    ready = asyncio.Event()
    def update(result):
        text = result.content[0].text if result.content else ""
        if not ready.is_set() and all(re.search(rf"^{{name}} \\d+$", text, re.M) for name in {names!r}):
            print(text, "READY", sep="\\n", flush=True)
            ready.set()
    await bash_tool().execute("call", {{"command": {command!r}}}, AbortController().signal, update)

asyncio.run(main())
"""


@pytest.mark.parametrize(
    ("command", "names"),
    [(TREE, ("child", "grandchild")), (DOUBLE_FORK, ("orphan", "shell")), (SCRUBBED, ("scrubbed", "child"))],
    ids=["setsid-grandchild", "double-fork-orphan", "scrubbed-environment"],
)
def test_the_watchdog_finds_what_an_abort_finds(command: str, names: tuple[str, ...]) -> None:
    """An interpreter (what a kernel is) SIGKILLed mid-call: the setsid grandchild, the orphan of a double fork
    (found by its marker) and the escapee with a scrubbed environment (found by parentage) all go."""
    child = subprocess.Popen([sys.executable, "-c", DYING.format(command=command, names=names)], stdout=subprocess.PIPE)
    procs: list[psutil.Process] = []
    stuck = threading.Timer(60, child.kill)  # bounds the blocking reads
    stuck.start()
    try:
        assert child.stdout is not None
        output = b""
        while b"READY" not in output:
            line = child.stdout.readline()
            assert line, output
            output += line
        procs = list(named_pids(output.decode(), names).values())
        child.kill()
        child.wait()
        wait_for(lambda: all(is_gone(p) for p in procs), "all gone")
    finally:
        stuck.cancel()
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
        kill_all(procs)
