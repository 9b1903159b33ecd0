"""The bash tool's watchdog: a small process that outlives its parent (the kernel) and kills the process trees
of the bash tool calls still running when the parent dies, however it dies (SIGKILL, OOM kill,
``shutdown_kernel(now=True)``), when no exit handler of the parent can run.

Run as a script, by path, with the standard library only (``python -I -S _watchdog.py <parent pid>``), so it
starts in milliseconds and imports nothing of the parent's environment. It runs in its own session, so signals
to the kernel's process group do not reach it. :mod:`._lifeline` starts it and talks to it over its stdin, one
line per message:

- ``track <token> <mark> <grace_ms>``: a call is about to spawn; its processes carry
  ``PI_NOTEBOOK_BASH_RUN=<token>`` in their environment and started after ``mark`` (clock ticks since boot);
- ``group <token> <pgid>``: the call's shell leads process group ``pgid``;
- ``done <token>``: the call ended; forget it.

The parent's death is seen at once through a pidfd (Linux >= 5.3; elsewhere by polling ``getppid`` every
100 ms), or as end of file on stdin. Then, for every call still tracked, everything that started after its mark
and carries its token, or is in its process group, or descends from such a process, gets SIGTERM (and SIGCONT),
then SIGKILL after the call's grace, repeated until nothing is left (at most 2 s), and the watchdog exits.
Without ``/proc`` (not Linux), only the calls' process groups are signalled (in the SIGKILL round too).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import sys
import time
from dataclasses import dataclass

KILL_POLL_S = 0.01
GIVE_UP_S = 2.0
PPID_POLL_S = 0.1
MARKER_ENV = "PI_NOTEBOOK_BASH_RUN"  # the same as _process.MARKER_ENV (this script imports nothing of ours)


@dataclass
class Call:
    needle: bytes
    mark: float
    grace_s: float
    pgid: int | None = None


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = [os.read(fd, 65536)]
        while chunks[-1]:
            chunks.append(os.read(fd, 65536))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _has(environ: bytes, needle: bytes) -> bool:
    return environ.startswith(needle + b"\0") or b"\0" + needle + b"\0" in environ or environ.endswith(needle)


def _stat(pid: str) -> tuple[int, int, int] | None:
    """(ppid, pgid, start time in ticks) of a living process, None for a zombie or a vanished one."""
    stat = _read(f"/proc/{pid}/stat")
    fields = stat[stat.rfind(b")") + 2 :].split()
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[1]), int(fields[2]), int(fields[19])


def members(calls: list[Call]) -> set[int]:
    """The living processes of ``calls`` (see the module docstring)."""
    if not os.path.isdir("/proc/self"):
        return set()
    earliest = min(call.mark for call in calls)
    table: dict[int, tuple[int, int, int]] = {}
    own = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == own:
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            info = _stat(name)
            if info is not None and info[2] >= earliest:
                table[int(name)] = info
    found: set[int] = set()
    for pid, (_ppid, pgid, start) in table.items():
        for call in calls:
            if start < call.mark:
                continue
            if pgid == call.pgid:
                found.add(pid)
                break
            with contextlib.suppress(OSError):
                if _has(_read(f"/proc/{pid}/environ"), call.needle):
                    found.add(pid)
                    break
    grown = True
    while grown:  # descendants of what was found (a scrubbed environment that left the group)
        before = len(found)
        found |= {pid for pid, (ppid, _pgid, _start) in table.items() if ppid in found}
        grown = len(found) > before
    return found


def _alive(pid: int) -> bool:
    try:
        return _stat(str(pid)) is not None
    except (OSError, ValueError, IndexError):
        return False


def _children(pids: set[int]) -> set[int]:
    found: set[int] = set()
    for pid in pids:
        with contextlib.suppress(OSError, ValueError):
            for tid in os.listdir(f"/proc/{pid}/task"):
                found.update(int(child) for child in _read(f"/proc/{pid}/task/{tid}/children").split())
    return found


def _groups(calls: list[Call]) -> list[int]:
    """The calls' process groups still led by their shell (so a reused pgid is never signalled). Without /proc
    the leader cannot be checked: every registered group."""
    if not os.path.isdir("/proc/self"):
        return [call.pgid for call in calls if call.pgid is not None]
    groups: list[int] = []
    for call in calls:
        if call.pgid is None:
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            info = _stat(str(call.pgid))
            if info is not None and info[1] == call.pgid and info[2] >= call.mark:
                groups.append(call.pgid)
    return groups


def _signal(pids: set[int], groups: list[int], *sigs: int) -> None:
    for sig in sigs:
        for pgid in groups:
            with contextlib.suppress(OSError):
                os.killpg(pgid, sig)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)


def kill(calls: list[Call]) -> None:
    """SIGTERM everything the calls left, wait up to their grace, then SIGKILL until nothing is left.

    The process groups are signalled first (no search needed); the full search of /proc (tens of ms on a busy
    machine) runs at the start, when the known processes are gone, and before each SIGKILL round; in between,
    only the known processes and their children are polled."""
    if not calls:
        return
    grace = max(call.grace_s for call in calls)
    if not os.path.isdir("/proc/self"):  # groups only: TERM, grace, KILL
        groups = _groups(calls)
        _signal(set(), groups, signal.SIGTERM, signal.SIGCONT)
        time.sleep(grace)
        _signal(set(), groups, signal.SIGKILL)
        return
    _signal(set(), _groups(calls), signal.SIGTERM, signal.SIGCONT)
    termed = members(calls)
    _signal(termed, [], signal.SIGTERM, signal.SIGCONT)
    deadline = time.monotonic() + grace
    living = termed
    while living and time.monotonic() < deadline:
        time.sleep(KILL_POLL_S)
        living = {pid for pid in living if _alive(pid)}
        living |= _children(living)
        if not living:
            living = members(calls)  # anything forked meanwhile and orphaned
        _signal(living - termed, [], signal.SIGTERM, signal.SIGCONT)
        termed |= living
    if not living:
        return
    give_up = time.monotonic() + GIVE_UP_S
    while True:
        _signal(living, _groups(calls), signal.SIGKILL)
        living = members(calls)
        if not living or time.monotonic() > give_up:
            return
        _signal(living, [], signal.SIGKILL)
        time.sleep(0.005)


def apply(line: str, calls: dict[str, Call]) -> None:
    words = line.split()
    with contextlib.suppress(ValueError, IndexError, KeyError):
        if words[0] == "track":
            needle = f"{MARKER_ENV}={words[1]}".encode()
            calls[words[1]] = Call(needle, float(words[2]), int(words[3]) / 1000)
        elif words[0] == "group":
            calls[words[1]].pgid = int(words[2])
        elif words[0] == "done":
            del calls[words[1]]


def _watch_parent(parent: int, selector: selectors.BaseSelector) -> bool:
    """Register a pidfd of ``parent``; False when it is already gone. Without pidfds, nothing to register."""
    if not hasattr(os, "pidfd_open"):
        return os.getppid() == parent
    try:
        selector.register(os.pidfd_open(parent), selectors.EVENT_READ, "parent")
    except ProcessLookupError:
        return False
    except OSError:  # no pidfd support in this kernel: fall back to polling getppid
        return os.getppid() == parent
    return True


def main(parent: int) -> None:
    calls: dict[str, Call] = {}
    pending = b""
    selector = selectors.DefaultSelector()
    selector.register(0, selectors.EVENT_READ, "stdin")
    alive = _watch_parent(parent, selector)
    polling = len(selector.get_map()) == 1
    while alive:
        ready = selector.select(PPID_POLL_S if polling else None)
        if polling and os.getppid() != parent:
            break
        sources = {key.data for key, _ in ready}
        if "stdin" in sources:
            data = os.read(0, 65536)
            if not data:
                break
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                apply(line.decode("ascii", "replace"), calls)
        if "parent" in sources:
            break
    os.set_blocking(0, False)  # what the parent wrote just before it died
    with contextlib.suppress(OSError):
        while data := os.read(0, 65536):
            pending += data
    for line in pending.split(b"\n"):
        apply(line.decode("ascii", "replace"), calls)
    kill(list(calls.values()))


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    main(int(sys.argv[1]))
