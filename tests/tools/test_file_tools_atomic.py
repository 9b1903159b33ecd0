"""``write`` and ``edit`` never leave a half-written file: a real writer process is SIGKILLed at many points of
writing a large file (as soon as it starts, at each tenth of the new bytes, after the rename), and the file is
always exactly the old content or exactly the new, with its mode kept."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from atomic_writer import new_content, old_content

SIZES = {"write": 16 << 20, "edit": 4 << 20}  # edit also reads the file and diffs it
STEPS = 8
WRITER = Path(__file__).with_name("atomic_writer.py")


class Writer:
    """The ``atomic_writer.py`` process: one forked writer per :meth:`start`."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WRITER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        assert self.expect("ready") == "ready"

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.strip())
        self.lines.put("")

    def expect(self, prefix: str) -> str:
        while True:
            line = self.lines.get(timeout=120)
            assert line, "the writer process ended"
            if line.startswith(prefix):
                return line

    def finished(self) -> bool:
        """Whether the current writer said ``done`` or ``error`` (it then only waits to be reaped)."""
        try:
            line = self.lines.get_nowait()
        except queue.Empty:
            return False
        assert not line.startswith("error"), line
        return line == "done"

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def start(self, kind: str, path: Path) -> int:
        self.send(f"{kind} {path} {SIZES[kind]}")
        return int(self.expect("pid ").split()[1])

    def reap(self) -> int:
        self.send("reap")
        return int(self.expect("exit ").split()[1])

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        self.reader.join(timeout=30)
        self.process.stdout.close()


@pytest.fixture(scope="module")
def writer() -> Iterator[Writer]:
    process = Writer()
    try:
        yield process
    finally:
        process.close()


def _progress(path: Path, old_inode: int, old_size: int, state: dict[str, bool]) -> int:
    """How many bytes of new content the directory shows: a temp file's size, or the file's once replaced or
    truncated (a writer that rewrote the file in place would show up here too)."""
    best = 0
    for entry in os.scandir(path.parent):
        if entry.name != path.name:
            with contextlib.suppress(FileNotFoundError):  # a temp file renamed meanwhile
                best = max(best, entry.stat().st_size)
    stat = path.stat()
    if stat.st_size < old_size:
        state["truncated"] = True
    if stat.st_ino != old_inode or state.get("truncated"):
        best = max(best, stat.st_size)
    return best


def _kill_at(writer: Writer, kind: str, path: Path, threshold: int, total: int) -> tuple[bool, int]:
    """Start a writer and SIGKILL it once ``threshold`` new bytes show; tell whether that was mid-write."""
    stat = path.stat()
    state: dict[str, bool] = {}
    pid = writer.start(kind, path)
    progress = 0
    while threshold >= 0 and (progress := _progress(path, stat.st_ino, stat.st_size, state)) < threshold:
        if writer.finished():
            break
        time.sleep(0.0005)  # polling the directory's state, not waiting for time to pass
    os.kill(pid, signal.SIGKILL)  # the writer is running or a zombie: its pid is not reused before reap()
    return 0 <= progress < total, writer.reap()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["write", "edit"])
def test_a_writer_killed_at_any_point_leaves_the_old_or_the_new_file(writer: Writer, kind: str, tmp_path: Path) -> None:
    old = old_content(SIZES[kind])
    new = new_content(SIZES[kind]) if kind == "write" else old.replace(b"MARKER\n", b"CHANGED\n")
    outcomes = []
    mid_write = 0
    for step in [-1, *range(STEPS + 1)]:
        folder = tmp_path / f"step{step}"
        folder.mkdir()
        path = folder / "data.txt"
        path.write_bytes(old)
        path.chmod(0o640)
        threshold = -1 if step < 0 else len(new) * step // STEPS
        killed_mid_write, _status = _kill_at(writer, kind, path, threshold, len(new))
        mid_write += killed_mid_write
        content = path.read_bytes()
        assert content in (old, new), f"step {step}: {len(content)} bytes, neither old nor new"
        assert path.stat().st_mode & 0o777 == 0o640
        assert not path.is_symlink()
        outcomes.append("old" if content == old else "new")
    assert mid_write >= STEPS // 2, f"only {mid_write} kills landed mid-write: {outcomes}"
    assert "old" in outcomes


def test_an_aborted_write_of_a_large_file_leaves_the_old_file_and_no_temp_file(tmp_path: Path) -> None:
    import asyncio

    from pi_notebook.ai import AbortController
    from pi_notebook.tools import write_tool

    path = tmp_path / "data.txt"
    path.write_bytes(b"old")
    controller = AbortController()
    tool = write_tool(tmp_path)

    async def main() -> str:
        loop = asyncio.get_running_loop()
        loop.call_soon(controller.abort)  # lands while the worker thread writes 64 MB in 1 MB chunks
        try:
            await tool.execute(
                "c", {"path": "data.txt", "content": "x" * (64 << 20)}, controller.signal, lambda _: None
            )
        except Exception as exc:
            return str(exc)
        return "written"

    outcome = asyncio.run(main())
    assert outcome == "Operation aborted"
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.txt"]
