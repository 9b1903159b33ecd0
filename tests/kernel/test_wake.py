"""``signals_wake_the_loop`` (``pi_notebook/kernel/_wake.py``): while it is in force, a signal wakes the event loop, so
a callback the signal's handler queued with ``call_soon`` (as ipykernel's handler does for a cell awaiting a run) runs
at once rather than when the loop next wakes for another reason; the wakeup fd set before is handed the signal numbers
and set again afterwards, also when awaits nest. The whole path, a kernel interrupt of ``await run``, is
``tests/notebook/test_kernel_runs.py::test_a_kernel_interrupt_cancels_an_awaiting_cell_at_once_while_the_run_is_quiet``."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.kernel._wake import signals_wake_the_loop

WCHAN = Path(f"/proc/self/task/{os.getpid()}/wchan")  # the main thread's


def _wchan_shows_a_sleeping_thread() -> bool:
    """Whether /proc names where a thread sleeps: some containers hide it (every thread reads "0")."""
    started, done = threading.Event(), threading.Event()

    def sleep_until_done() -> None:
        started.set()
        done.wait()

    thread = threading.Thread(target=sleep_until_done, daemon=True)
    thread.start()
    started.wait()
    try:
        path = Path(f"/proc/self/task/{thread.native_id}/wchan")
        deadline = time.monotonic() + 2
        while path.exists() and time.monotonic() < deadline:
            if path.read_text().strip() not in ("", "0"):
                return True
            time.sleep(0.01)  # polling the thread's state
        return False
    finally:
        done.set()
        thread.join()


HAS_WCHAN = WCHAN.exists() and _wchan_shows_a_sleeping_thread()


@pytest.fixture
async def queued_by_a_handler() -> AsyncIterator[asyncio.Event]:
    """SIGUSR1's handler queues ``event.set`` on the running loop with ``call_soon``, as ipykernel's SIGINT handler
    queues the cancel of an awaiting cell (tornado's ``add_callback`` on the loop's thread)."""
    if not HAS_WCHAN:
        pytest.skip("needs Linux's /proc/PID/task/TID/wchan (not hidden) to see the loop asleep")
    loop = asyncio.get_running_loop()
    event = asyncio.Event()
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: loop.call_soon(event.set))
    try:
        yield event
    finally:
        signal.signal(signal.SIGUSR1, previous)


def signal_once_the_loop_sleeps() -> None:
    """From another thread: SIGUSR1 once the main thread sleeps in the loop's selector (a signal while the loop is
    busy would have its callback run anyway)."""

    def send() -> None:
        deadline = time.monotonic() + 10
        while WCHAN.read_text() != "do_epoll_wait" and time.monotonic() < deadline:
            time.sleep(0.002)  # polling the thread's state
        os.kill(os.getpid(), signal.SIGUSR1)

    threading.Thread(target=send, daemon=True).start()


async def test_a_signal_wakes_the_loop_for_the_callback_its_handler_queued(queued_by_a_handler: Any) -> None:
    with signals_wake_the_loop():
        signal_once_the_loop_sleeps()
        started = time.monotonic()
        await asyncio.wait_for(queued_by_a_handler.wait(), timeout=5)  # the only timer: without the fix, at 5 s
    assert time.monotonic() - started < 1.0


async def test_without_it_the_callback_waits_for_the_loop_to_wake_otherwise(queued_by_a_handler: Any) -> None:
    """As in ipykernel on its own (so the test above shows the fix, not a loop that wakes anyway): the callback runs
    only when the one timer left wakes the loop."""
    asyncio.get_running_loop().call_later(0.5, lambda: None)
    signal_once_the_loop_sleeps()
    started = time.monotonic()
    await asyncio.wait_for(queued_by_a_handler.wait(), timeout=5)
    assert time.monotonic() - started >= 0.45


async def test_the_wakeup_fd_before_gets_the_signals_and_is_set_again_after_nested_awaits(
    queued_by_a_handler: Any,
) -> None:
    theirs_reader, theirs = socket.socketpair()
    theirs.setblocking(False)
    before = signal.set_wakeup_fd(theirs.fileno())
    try:
        in_force: list[int] = []

        async def await_quietly(ready: asyncio.Event) -> None:
            with signals_wake_the_loop():
                in_force.append(signal.set_wakeup_fd(-1))
                signal.set_wakeup_fd(in_force[-1])
                await ready.wait()

        outer = asyncio.create_task(await_quietly(queued_by_a_handler))
        inner = asyncio.create_task(await_quietly(queued_by_a_handler))
        await asyncio.sleep(0)  # both blocks entered
        signal_once_the_loop_sleeps()
        started = time.monotonic()
        await asyncio.wait_for(asyncio.gather(outer, inner), timeout=5)
        assert time.monotonic() - started < 1.0  # woken through the nested blocks
        assert len(set(in_force)) == 1 and theirs.fileno() not in in_force  # one wakeup fd of its own meanwhile
        assert signal.set_wakeup_fd(theirs.fileno()) == theirs.fileno()  # theirs again, after the last block
        assert theirs_reader.recv(16) == bytes([signal.SIGUSR1])  # and it was handed the signal's number
    finally:
        signal.set_wakeup_fd(before)
        theirs_reader.close()
        theirs.close()


def test_off_the_main_thread_it_does_nothing() -> None:
    seen: list[int] = []

    def other_thread() -> None:
        async def block() -> None:
            with signals_wake_the_loop():
                seen.append(1)

        asyncio.run(block())

    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert seen == [1]
