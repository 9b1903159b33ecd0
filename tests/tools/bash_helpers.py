"""Shared by the bash tool tests: run the tool, watch its progress, find the PIDs a command printed, and prove
processes are gone (psutil, by PID and start time; zombies count as gone)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import psutil

from pi_notebook.agent import AgentTool, AgentToolResult
from pi_notebook.ai import AbortController, AbortSignal
from pi_notebook.tools import BashError

SETSID = shutil.which("setsid")
ENV = shutil.which("env")
SH = shutil.which("sh") or "/bin/sh"
SLEEP = shutil.which("sleep") or "/bin/sleep"

# shell -> child (ignores SIGTERM) -> grandchild (setsid: own session and group, so killpg misses it)
TREE = f"""
bash -c 'trap "" TERM
{SETSID} sh -c "echo grandchild \\$\\$; exec sleep 1000" &
echo child $$
wait' &
wait
"""
TREE_NAMES = ("child", "grandchild")

# shell -> subshell (exits at once) -> orphan (setsid, reparented to init: only the environment marker finds it)
DOUBLE_FORK = f"""
( {SETSID} sh -c 'echo orphan $$; exec sleep 1000' & )
echo shell $$
sleep 1000
"""

# shell -> child (ignores SIGTERM, stays) -> grandchild with a scrubbed environment (no marker) that left
# the group: only the parentage poll finds it.
SCRUBBED = f"""
bash -c 'trap "" TERM
{ENV} -i {SETSID} {SH} -c "echo scrubbed \\$\\$; exec {SLEEP} 1000" &
echo child $$
wait' &
wait
"""


@dataclass
class Watcher:
    """``on_update`` that records every result and lets a test wait for the output to satisfy a predicate."""

    updates: list[AgentToolResult] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def __call__(self, result: AgentToolResult) -> None:
        self.updates.append(result)
        self.times.append(asyncio.get_running_loop().time())
        self._changed.set()

    @property
    def text(self) -> str:
        if not self.updates or not self.updates[-1].content:
            return ""
        return str(getattr(self.updates[-1].content[0], "text", ""))

    async def until(self, predicate: Callable[[str], bool]) -> str:
        while not predicate(self.text):
            self._changed.clear()
            await self._changed.wait()
        return self.text

    async def until_named(self, *names: str) -> dict[str, psutil.Process]:
        await self.until(lambda text: all(re.search(rf"^{n} \d+$", text, re.M) for n in names))
        return named_pids(self.text, names)


def named_pids(text: str, names: tuple[str, ...]) -> dict[str, psutil.Process]:
    found = {}
    for name in names:
        match = re.search(rf"^{name} (\d+)$", text, re.M)
        assert match, f"{name} pid not printed in {text!r}"
        found[name] = psutil.Process(int(match.group(1)))  # keeps the start time: a reused PID is not "alive"
    return found


def is_gone(proc: psutil.Process) -> bool:
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


async def survivors(procs: Any, within_s: float = 2.0) -> list[psutil.Process]:
    """The processes still alive after polling for at most ``within_s`` (empty when all are gone)."""
    procs = list(procs)
    deadline = time.monotonic() + within_s
    for _ in itertools.count():
        left = [p for p in procs if not is_gone(p)]
        if not left or time.monotonic() >= deadline:
            break
        await asyncio.sleep(0.01)
    return left


def kill_all(procs: Any) -> None:
    for proc in procs:
        if not is_gone(proc):
            with contextlib.suppress(psutil.Error, OSError):
                proc.send_signal(signal.SIGKILL)


@contextlib.contextmanager
def reaping() -> Iterator[list[psutil.Process]]:
    """Collects processes a test learns about and SIGKILLs the survivors at the end, pass or fail."""
    seen: list[psutil.Process] = []
    try:
        yield seen
    finally:
        kill_all(seen)


async def run(
    tool: AgentTool,
    command: str,
    *,
    signal: AbortSignal | None = None,
    on_update: Any = None,
    **args: Any,
) -> AgentToolResult:
    controller = AbortController()
    return await tool.execute("call", {"command": command, **args}, signal or controller.signal, on_update or Watcher())


async def run_error(tool: AgentTool, command: str, **kwargs: Any) -> BashError:
    try:
        await run(tool, command, **kwargs)
    except BashError as exc:
        return exc
    raise AssertionError("the command did not fail")


def text_of(result: AgentToolResult) -> str:
    return str(getattr(result.content[0], "text", ""))


def real_path(path: Any) -> str:
    return str(os.path.realpath(path))


def is_file(path: str) -> bool:
    return os.path.isfile(path)
