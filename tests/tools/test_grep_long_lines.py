"""Issue 30 item 4: ``grep`` on files without newlines (sparse files, disk images, ``/proc/self/pagemap``): a binary
one met while walking is skipped at its first read, Stop ends the search of a huge one at its next read, a line
longer than ``MAX_LINE`` is searched in pieces and reported once, and ``grep /proc/self`` ends. The reads are
counted through the real file objects the search opens."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from pi_notebook.agent import AgentTool, AgentToolResult
from pi_notebook.ai import AbortController, AbortSignal, TextContent
from pi_notebook.tools import FileToolError, _search, grep_tool

pytestmark = pytest.mark.timeout(120)

GIB = 1 << 30


class CountingFile:
    """A real file that counts its reads (and signals the third one)."""

    def __init__(self, file: BinaryIO, path: str, reads: list[str], third: threading.Event) -> None:
        self._file = file
        self._path = path
        self._reads = reads
        self._third = third

    def read(self, size: int = -1) -> bytes:
        self._reads.append(self._path)
        if len(self._reads) == 3:
            self._third.set()
        return self._file.read(size)

    def __enter__(self) -> CountingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], threading.Event]:
    seen: list[str] = []
    third = threading.Event()
    real = _search.open_to_read  # type: ignore[attr-defined]  # patched where the search looks it up

    def counting(path: str, shown: str, verb: str = "read") -> Any:
        return CountingFile(real(path, shown, verb), path, seen, third)

    monkeypatch.setattr(_search, "open_to_read", counting)
    return seen, third


def sparse(path: Path, size: int) -> Path:
    """A file of ``size`` zero bytes that takes no disk space (no newline anywhere)."""
    with open(path, "wb") as file:
        file.truncate(size)
    return path


async def call(tool: AgentTool, args: dict[str, Any], signal: AbortSignal | None = None) -> AgentToolResult:
    return await tool.execute("call", args, signal or AbortController().signal, lambda _: None)


def text_of(result: AgentToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def test_a_binary_file_without_newlines_met_while_walking_is_skipped_at_its_first_read(
    tmp_path: Path, reads: tuple[list[str], threading.Event]
) -> None:
    big = sparse(tmp_path / "disk.img", GIB)
    (tmp_path / "notes.txt").write_text("a needle here\n")
    result = await call(grep_tool(tmp_path), {"pattern": "needle"})
    assert text_of(result) == "notes.txt:1: a needle here"
    seen, _ = reads
    assert seen.count(str(big)) == 1  # the first 256 KB held a NUL: nothing more was read


async def test_stop_ends_the_search_of_a_huge_file_without_newlines_at_its_next_read(
    tmp_path: Path, reads: tuple[list[str], threading.Event]
) -> None:
    """Named explicitly, a binary file is searched (as ripgrep does); 4 GiB without a newline must still stop."""
    big = sparse(tmp_path / "disk.img", 4 * GIB)
    seen, third = reads
    controller = AbortController()
    search = asyncio.ensure_future(
        call(grep_tool(tmp_path), {"pattern": "needle", "path": big.name}, controller.signal)
    )
    assert await asyncio.to_thread(third.wait, 60), "the search started reading"
    controller.abort()
    with pytest.raises(FileToolError, match=r"^Operation aborted$"):
        await search
    at_abort = len(seen)
    count = _search_threads_left()
    assert await asyncio.to_thread(count.wait, 60), "the search thread left the file"
    assert len(seen) <= at_abort + 1  # at most the read under way when the stop came
    assert len(seen) < (4 * GIB) // _search.BLOCK


def _search_threads_left() -> threading.Event:
    """Set once no thread is inside ``search_file`` any more (polled on the threads' own frames)."""
    done = threading.Event()

    def watch() -> None:
        while True:
            frames = sys._current_frames().values()
            if not any(_in_search(frame) for frame in frames):
                done.set()
                return
            threading.Event().wait(0.01)

    threading.Thread(target=watch, daemon=True).start()
    return done


def _in_search(frame: Any) -> bool:
    while frame is not None:
        if frame.f_code is _search.search_file.__code__:
            return True
        frame = frame.f_back
    return False


async def test_a_line_longer_than_max_line_is_searched_in_pieces_and_reported_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_search, "MAX_LINE", 1 << 20)
    long_line = b"needle " + b"x" * (3 << 20) + b" needle at the end"
    (tmp_path / "long.txt").write_bytes(long_line + b"\nsecond needle\n" + b"y" * (2 << 20))
    result = await call(grep_tool(tmp_path), {"pattern": "needle"})
    lines = text_of(result).split("\n")
    assert [line.split(":", 2)[:2] for line in lines[:2]] == [["long.txt", "1"], ["long.txt", "2"]]
    assert lines[0].endswith("... [truncated]") and lines[1] == "long.txt:2: second needle"


async def test_grep_over_proc_self_ends() -> None:
    result = await asyncio.wait_for(
        call(grep_tool(os.getcwd()), {"pattern": "zq-no-such-text", "path": "/proc/self"}), 60
    )
    assert text_of(result) == "No matches found"
