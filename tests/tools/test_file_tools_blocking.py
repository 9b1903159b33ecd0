"""Issue 30 item 3: a file read that never returns keeps its thread, but not one the kernel needs. Ten reads
blocked on a FIFO nobody writes, abandoned on Stop, leave host-name lookups (the event loop's default executor,
sized as on a 2-core machine) and the file tools working; blocked threads are bounded (a clear refusal past
``MAX_STUCK``); and files whose read can block forever are refused before any thread waits on them."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.agent import AgentTool, AgentToolResult
from pi_notebook.ai import AbortController, Context, Model, TextContent, UserMessage, close_connections, complete
from pi_notebook.testing import FaultServer, Reply
from pi_notebook.tools import grep_tool, read_tool
from pi_notebook.tools._common import FileToolError, in_thread
from pi_notebook.tools._workers import FileWorkers, WorkersStuck

pytestmark = pytest.mark.timeout(60)

BLOCKED = 10


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO nobody writes; afterwards one writer opens and closes it, so every reader blocked on it returns."""
    path = tmp_path / "fifo"
    os.mkfifo(path)
    yield path
    wake(path)


def wake(path: Path) -> None:
    """Return every read blocked on the FIFO, and make later ones (still queued somewhere) find a plain file."""
    if path.is_fifo():
        os.close(os.open(path, os.O_RDWR))  # a reader and writer at once: never blocks, wakes every blocked open
        path.unlink()
        path.write_bytes(b"")


async def call(tool: AgentTool, args: dict[str, Any]) -> AgentToolResult:
    return await tool.execute("call", args, None, None)  # type: ignore[arg-type]  # the tools take no signal too


def read_fifo(path: Path, started: threading.Semaphore) -> bytes:
    started.release()
    with open(path, "rb") as file:  # blocks until a writer opens it
        return file.read()


async def test_ten_blocked_reads_leave_host_name_lookups_and_the_file_tools_working(
    fifo: Path, server: FaultServer, tmp_path: Path
) -> None:
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(min(32, 2 + 4)))  # the default executor of a 2-core kernel
    started = threading.Semaphore(0)
    waiter = ThreadPoolExecutor(1)  # the test's own waits use none of the threads under test
    try:
        for _ in range(BLOCKED):  # one after the other, as a model retries a read that timed out
            stop = AbortController()
            read = asyncio.create_task(
                in_thread(lambda _: read_fifo(fifo, started), stop.signal, abandon_on_abort=True)
            )
            assert await loop.run_in_executor(waiter, lambda: started.acquire(timeout=5)), "the read started"
            stop.abort()
            with pytest.raises(FileToolError, match="Operation aborted"):
                await read
        server.script([Reply.text("still here")])
        base_url = f"http://localhost:{server.port}/v1"
        model = Model(id="m", api="openai-completions", provider="local", base_url=base_url)
        context = Context(messages=[UserMessage(content=[TextContent(text="hi")])])
        reply = await asyncio.wait_for(complete(model, context), 30)  # a host name: getaddrinfo in the executor
    finally:
        wake(fifo)  # before the loop closes its executor, which waits for its threads
        read.cancel()
    await close_connections()
    assert reply.stop_reason == "stop", reply.error_message
    assert reply.content == [TextContent(text="still here")]

    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    shown = await asyncio.wait_for(call(read_tool(tmp_path), {"path": "notes.txt"}), 30)
    found = await asyncio.wait_for(call(grep_tool(tmp_path), {"pattern": "beta"}), 30)
    assert shown.content == [TextContent(text="alpha\nbeta\n")]
    assert found.content == [TextContent(text="notes.txt:2: beta")]


def test_blocked_threads_are_bounded_and_replaced(fifo: Path) -> None:
    workers = FileWorkers(workers=2, max_stuck=3)
    started = threading.Semaphore(0)
    jobs = [workers.submit(read_fifo, fifo, started) for _ in range(3)]  # two run, one waits for a worker
    for _ in jobs:
        assert started.acquire(timeout=10), f"a job started ({workers.stuck} stuck)"
        workers.abandon(next(job for job in jobs if job.running and not job.abandoned))  # a worker is replaced
    assert workers.stuck == 3
    with pytest.raises(WorkersStuck, match="3 earlier file operations are still blocked"):
        workers.submit(lambda: None)
    # A writer that opens and closes the FIFO returns every read blocked in open(); a job that reached its open()
    # only after that (it says "started" just before) needs another writer: until every read has returned.
    deadline = time.monotonic() + 10
    while True:
        os.close(os.open(fifo, os.O_RDWR))
        if not wait([job.future for job in jobs], timeout=0.05).not_done:
            break
        assert time.monotonic() < deadline, "the blocked reads did not return"
    for job in jobs:
        assert job.future.result(timeout=10) == b""
    assert workers.submit(lambda: 42).future.result(timeout=10) == 42


@pytest.mark.parametrize("tool", ["read", "grep"])
def test_a_file_whose_read_can_block_forever_is_refused(tool: str, tmp_path: Path) -> None:
    tools = {"read": read_tool(tmp_path), "grep": grep_tool(tmp_path)}
    args = {"path": "/proc/kmsg"} if tool == "read" else {"pattern": "x", "path": "/proc/kmsg"}
    with pytest.raises(FileToolError, match="/proc/kmsg: reading it can block forever"):
        asyncio.run(asyncio.wait_for(call(tools[tool], args), 10))
