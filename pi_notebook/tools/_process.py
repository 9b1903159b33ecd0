"""Running one shell command: spawn, Pi's completion rule, and killing everything the command started.

Completion (Pi's ``waitForChildProcess``): the command is done when the shell has exited and its output pipe
reached EOF, or when the shell has exited and the pipe then stays quiet for 100 ms (each chunk re-arms the
wait). So output a descendant writes just after the exit is kept (Pi #5303), and a descendant that keeps the
pipe open without writing does not hang the tool.

Finding what the command started. The shell runs in its own session and process group, so one
``killpg`` reaches everything that stayed in the group. Descendants that left it (``setsid``, daemons,
double forks) are found two more ways (Pi only kills the group, which is how ``setsid`` grandchildren
escaped it: kimchi#833, Pi #9460):

- parentage: while the command runs, the children of the shell and of every process already found are
  polled (from 10 ms, backing off to 200 ms), and again whenever a kill starts;
- a marker: the command's environment carries ``PI_NOTEBOOK_BASH_RUN=<random token>``; at kill time every
  process started since the spawn whose environment holds that token is ours, even one that was orphaned
  (reparented to init) before the poll saw it.

A process that both scrubbed its environment (``env -i``) and was orphaned before a poll saw it is not
found; one that changed its user is found but may refuse signals.

Killing (:meth:`ProcessTree.kill`): SIGTERM (and SIGCONT, so stopped processes can act on it) to the group
and every known process; wait until all are gone, polling every 10 ms and sending SIGTERM to newly found
ones, for at most ``grace``; then SIGKILL to the group and every process found, repeated until none is left
(at most one second, for processes stuck in the kernel). Zombies count as gone. When the task running a
command is cancelled from outside (not through its abort signal), the tree is SIGKILLed at once,
synchronously, because a cancelled task should not wait out a grace period (it then waits, shielded, at most
one second for the shell's exit to be reported, so the transport closes cleanly); on interpreter exit,
commands still running are killed the same way.

When the interpreter dies without exit handlers (SIGKILL, OOM kill, ``shutdown_kernel(now=True)``), the
watchdog of :mod:`._lifeline` kills the trees of the commands still running: each command is registered with it
before the spawn (marker token, spawn mark), then its process group, and unregistered when ``run_shell`` ends.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import secrets
import signal as signals
import sys
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import anyio
import psutil

from ..ai import AbortSignal, abort_scope
from ._lifeline import LIFELINE

__all__ = [
    "KILL_GIVE_UP_S",
    "KILL_POLL_S",
    "MARKER_ENV",
    "Outcome",
    "ProcessTree",
    "marked_pids",
    "process_alive",
    "run_shell",
    "spawn_mark",
]

MARKER_ENV = "PI_NOTEBOOK_BASH_RUN"
EXIT_QUIET_S = 0.1
POLL_FIRST_S = 0.01
POLL_MAX_S = 0.2
KILL_POLL_S = 0.01
KILL_GIVE_UP_S = 1.0
DRAIN_CAP_S = 0.25
_LINUX = sys.platform.startswith("linux") and os.path.isdir("/proc/self/task")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if _LINUX else 100


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a command ended. ``returncode`` is negative for a signal (``-9``), ``None`` if it never exited."""

    kind: Literal["exit", "aborted", "timeout"]
    returncode: int | None


class ProcessTree:
    """The shell (group leader) and every process found to descend from it; see the module docstring."""

    def __init__(self, leader_pid: int, token: str, started_after: float) -> None:
        self.pgid = leader_pid
        self._needle = f"{MARKER_ENV}={token}".encode()
        self._started_after = started_after  # Linux: clock ticks since boot; else: epoch seconds
        self._known: dict[int, psutil.Process] = {}
        self._termed: set[int] = set()
        try:
            leader = psutil.Process(leader_pid)
            if leader.ppid() == os.getpid():  # guards against the pid having been reaped and reused
                self._known[leader_pid] = leader
        except psutil.Error:
            pass

    def discover(self) -> None:
        """Add the descendants of every living known process (and forget the dead: they have no children)."""
        frontier = self.living()
        while frontier:
            found: list[psutil.Process] = []
            for parent in frontier:
                for pid in _child_pids(parent):
                    if pid not in self._known and (proc := _process(pid)) is not None:
                        self._known[pid] = proc
                        found.append(proc)
            frontier = found

    def scan_marked(self) -> None:
        """Add every process started since the spawn whose environment carries this run's marker."""
        for pid in marked_pids(self._needle, self._started_after, self._known):
            if (proc := _process(pid)) is not None:
                self._known[pid] = proc

    def living(self) -> list[psutil.Process]:
        alive = [p for p in self._known.values() if process_alive(p)]
        self._known = {p.pid: p for p in alive}
        return alive

    async def kill(self, grace_s: float) -> None:
        """SIGTERM, wait up to ``grace_s`` for everything to go, then SIGKILL until nothing is left."""
        deadline = time.monotonic() + grace_s
        self._signal_group(signals.SIGTERM, signals.SIGCONT)  # first, before any (slower) search
        self._term()
        self.discover()
        self.scan_marked()
        self._term()
        while (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(min(KILL_POLL_S, left))
            self.discover()
            if not self._term():
                break
        give_up = time.monotonic() + KILL_GIVE_UP_S
        while True:
            self.kill_now()
            if not self.living() or time.monotonic() > give_up:
                return
            await asyncio.sleep(0.005)

    def kill_now(self) -> None:
        """SIGKILL everything found, synchronously (no grace)."""
        self.send(signals.SIGKILL)
        self.discover()
        self.scan_marked()
        self.send(signals.SIGKILL)

    def send(self, sig: int) -> None:
        """Signal the process group and every living known process."""
        self._signal_group(sig)
        for proc in self.living():
            with contextlib.suppress(psutil.Error, OSError):
                proc.send_signal(sig)

    def _signal_group(self, *sigs: int) -> None:
        for sig in sigs:
            with contextlib.suppress(OSError):
                os.killpg(self.pgid, sig)

    def _term(self) -> list[psutil.Process]:
        """SIGTERM (and SIGCONT) the living processes not signalled yet; return all living ones."""
        living = self.living()
        for proc in living:
            if proc.pid not in self._termed:
                self._termed.add(proc.pid)
                for sig in (signals.SIGTERM, signals.SIGCONT):
                    with contextlib.suppress(psutil.Error, OSError):
                        proc.send_signal(sig)
        return living


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def process_alive(proc: psutil.Process) -> bool:
    """``proc`` is running and not a zombie."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _child_pids(proc: psutil.Process) -> list[int]:
    if _LINUX:  # /proc/<pid>/task/<tid>/children: cost grows with the tree, not with the machine
        try:
            pids: list[int] = []
            for tid in os.listdir(f"/proc/{proc.pid}/task"):
                pids.extend(int(p) for p in _read(f"/proc/{proc.pid}/task/{tid}/children").split())
            return pids
        except (OSError, ValueError):
            pass
    try:
        return [c.pid for c in proc.children()]
    except psutil.Error:
        return []


def _read(path: str) -> bytes:
    """Read a small /proc file (raw ``os`` calls: several times faster than ``open`` there)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = [os.read(fd, 65536)]
        while chunks[-1]:
            chunks.append(os.read(fd, 65536))
        return b"".join(chunks)
    finally:
        os.close(fd)


def marked_pids(needle: bytes, started_after: float, skip: Mapping[int, object]) -> list[int]:
    """The processes (but this one and those in ``skip``) started after ``started_after`` (a :func:`spawn_mark`)
    whose environment holds ``needle`` (``b"NAME=value"``)."""
    own = os.getpid()
    found: list[int] = []
    if _LINUX:
        for name in os.listdir("/proc"):
            if not name.isdigit() or (pid := int(name)) == own or pid in skip:
                continue
            try:
                stat = _read(f"/proc/{name}/stat")
                if int(stat[stat.rfind(b")") + 2 :].split()[19]) < started_after:
                    continue
                environ = _read(f"/proc/{name}/environ")
            except (OSError, ValueError, IndexError):
                continue
            if environ.startswith(needle + b"\0") or b"\0" + needle + b"\0" in environ or environ.endswith(needle):
                found.append(pid)
        return found
    key, _, value = needle.decode().partition("=")
    for proc in psutil.process_iter(["create_time"]):
        if proc.pid == own or proc.pid in skip or (proc.info["create_time"] or 0) < started_after:
            continue
        with contextlib.suppress(psutil.Error, OSError):
            if proc.environ().get(key) == value:
                found.append(proc.pid)
    return found


def spawn_mark() -> float:
    """A lower bound for the start time of anything spawned after now, in the units ProcessTree compares."""
    if _LINUX:
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        return (uptime - 1.0) * _CLOCK_TICKS  # one second of slack for clock rounding
    return time.time() - 1.0


class _Pipe(asyncio.SubprocessProtocol):
    """Completion per Pi: see the module docstring."""

    def __init__(self, on_data: Callable[[bytes], None]) -> None:
        self._on_data = on_data
        self._loop = asyncio.get_running_loop()
        self.transport: asyncio.SubprocessTransport | None = None
        self.finished = asyncio.Event()
        self.exit_seen = asyncio.Event()
        self.exited = False
        self.returncode: int | None = None
        self._eof = False
        self._quiet: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.transport = transport

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if self.finished.is_set():
            return
        self._on_data(data if isinstance(data, bytes) else data.encode())
        if self.exited:
            self._arm()

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._eof = True
        if self.exited:
            self.finish()

    def process_exited(self) -> None:
        self.exited = True
        self.exit_seen.set()
        if self.transport is not None:
            self.returncode = self.transport.get_returncode()
        if self._eof:
            self.finish()
        elif not self.finished.is_set():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self.finish()

    def _arm(self) -> None:
        if self._quiet is not None:
            self._quiet.cancel()
        self._quiet = self._loop.call_later(EXIT_QUIET_S, self.finish)

    def finish(self) -> None:
        if self._quiet is not None:
            self._quiet.cancel()
            self._quiet = None
        self.finished.set()


_running: weakref.WeakSet[ProcessTree] = weakref.WeakSet()


@atexit.register
def _kill_running_at_exit() -> None:
    for tree in list(_running):
        tree.kill_now()


async def _spawn(
    argv: Sequence[str], cwd: str, env: Mapping[str, str], on_data: Callable[[bytes], None]
) -> tuple[asyncio.SubprocessTransport, _Pipe]:
    loop = asyncio.get_running_loop()
    return await loop.subprocess_exec(
        lambda: _Pipe(on_data),
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
    )


async def _wait_polling(pipe: _Pipe, tree: ProcessTree) -> None:
    interval = POLL_FIRST_S
    while not pipe.finished.is_set():
        with anyio.move_on_after(interval):
            await pipe.finished.wait()
        if not pipe.finished.is_set():
            tree.discover()
            LIFELINE.ensure()
            interval = min(interval * 2, POLL_MAX_S)


async def run_shell(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    on_data: Callable[[bytes], None],
    signal: AbortSignal | None,
    timeout_s: float | None,
    grace_s: float,
    kill_background: bool,
) -> Outcome:
    """Run ``argv`` to completion, abort or timeout; see the module docstring. Raises ``OSError`` if it cannot
    start. On abort and timeout every process found is killed before this returns."""
    token = secrets.token_hex(8)
    mark = spawn_mark()
    LIFELINE.track(token, mark, grace_s)
    try:
        transport, pipe = await _spawn(argv, cwd, {**env, MARKER_ENV: token}, on_data)
    except BaseException:
        LIFELINE.done(token)
        raise
    tree = ProcessTree(transport.get_pid(), token, mark)
    LIFELINE.group(token, tree.pgid)
    _running.add(tree)
    try:
        with abort_scope(signal) as aborted, anyio.move_on_after(timeout_s) as timer:
            await _wait_polling(pipe, tree)
        if aborted.cancelled_caught or (signal is not None and signal.aborted):
            kind: Literal["exit", "aborted", "timeout"] = "aborted"
        elif timer.cancelled_caught:
            kind = "timeout"
        else:
            kind = "exit"
        if kind != "exit" or kill_background:
            await tree.kill(grace_s)
            with anyio.move_on_after(DRAIN_CAP_S):  # output still in the pipe after the kill
                await pipe.finished.wait()
        return Outcome(kind, pipe.returncode if pipe.exited else None)
    except BaseException:
        tree.kill_now()
        # Let the shell's exit be seen, so the transport closes cleanly (no "subprocess still running" when the
        # loop closes right after). A native cancellation is edge-triggered: awaiting again here is allowed.
        with anyio.CancelScope(shield=True), anyio.move_on_after(KILL_GIVE_UP_S):
            await pipe.exit_seen.wait()
        raise
    finally:
        pipe.finish()
        transport.close()
        _running.discard(tree)
        LIFELINE.done(token)
