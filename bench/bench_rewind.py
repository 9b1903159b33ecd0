"""Checkpoint and rewind benchmark (issue 35): what keeping a run's checkpoint costs each changing tool call, and how
long ``%pi rewind`` takes for a large run.

    python bench/bench_rewind.py               # 300 calls per workload, one rewind of 100 edits + 20 cells
    python bench/bench_rewind.py --calls 1000 --json

Part 1, in this process, per changing tool call (p50 / p99 over ``--calls`` calls, each in a fresh checkpoint so the
"before" is taken every time):

  write    the ``write`` tool on an existing file of 4 KB, 100 KB and 1 MB: the checkpoint's own work (reading the
           file before, a stat of what was written) timed inside the journal, beside the whole call without a
           checkpoint, and the plain read of the file alone (the "plus the file read" of the target);
  edit     the ``edit`` tool (it hands the checkpoint the bytes it has just read: no second read);
  python   the ``python`` tool's watch of the namespace (a dict copy of references, the code read for in-place
           changes, sizes taken before and compared after) on a namespace of 300 names, beside running the code;
           once for code that rebinds, once for code that appends to a 10,000-element list (a copy is kept);
  cell     the kernel side of a cell change (noting it before the request, filling it from the page's answer: the
           page's snapshot of the cell travels in the answer it sends anyway).

Target: under 1 ms per call, plus the file read.

Part 2, in a real kernel with the page double (tests/support/fake_page.py: the control comm over a subshell, as the
JupyterLab extension answers): a run (a scripted faux model) edits 100 files and makes 20 cell changes; then
``%pi rewind`` is timed inside the kernel, from the magic to its receipt (files, cells through the page, variables,
the conversation). Target: under 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from pi_notebook.ai import AbortController
from pi_notebook.kernel import python_tool
from pi_notebook.kernel._checkpoint import Checkpoint, current_checkpoint
from pi_notebook.kernel._checkpoint_cells import complete
from pi_notebook.kernel._checkpoint_files import CheckpointBudget, FileCheckpoint
from pi_notebook.tools import edit_tool, write_tool
from pi_notebook.tools._file_journal import file_journal

TARGET_CALL_MS = 1.0
TARGET_REWIND_MS = 1000.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(values), 3), "p99_ms": round(percentile(values, 0.99), 3)}


class TimedFiles(FileCheckpoint):
    """The run's file checkpoint, timing its own work (what a tool call pays for it)."""

    spent: list[float]

    def before(self, absolute: str, content: bytes | None = None) -> None:
        started = time.perf_counter()
        super().before(absolute, content)
        self.spent.append(time.perf_counter() - started)

    def after(self, absolute: str) -> None:
        started = time.perf_counter()
        super().after(absolute)
        self.spent[-1] += time.perf_counter() - started


async def file_calls(tool_name: str, size: int, calls: int, folder: Path) -> dict[str, Any]:
    make = write_tool if tool_name == "write" else edit_tool
    tool, signal = make(folder), AbortController().signal
    path = folder / f"{tool_name}-{size}.txt"
    body = ("x" * 63 + "\n") * (size // 64)
    checkpoint_ms, plain_ms, read_ms = [], [], []
    for i in range(calls):
        path.write_text(f"line {i}\n" + body)
        args: dict[str, Any] = {"path": path.name, "content": f"line {i + 1}\n" + body}
        if tool_name == "edit":
            args = {"path": path.name, "edits": [{"oldText": f"line {i}\n", "newText": f"line {i + 1}\n"}]}
        journal = TimedFiles(CheckpointBudget(1 << 30))
        journal.spent = []
        file_journal.set(journal)
        await tool.execute("call", args, signal, lambda _: None)
        checkpoint_ms.append(sum(journal.spent) * 1000)
        path.write_text(f"line {i}\n" + body)
        file_journal.set(None)
        started = time.perf_counter()
        await tool.execute("call", args, signal, lambda _: None)
        plain_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        path.read_bytes()
        read_ms.append((time.perf_counter() - started) * 1000)
    return {
        "checkpoint": summary(checkpoint_ms),
        "call_without": summary(plain_ms),
        "read_alone": summary(read_ms),
    }


def namespace() -> dict[str, Any]:
    names: dict[str, Any] = {f"_i{i}": f"cell {i}" for i in range(100)}
    names |= {f"value_{i}": [i] * 10 for i in range(150)}
    names |= {f"text_{i}": "x" * i for i in range(50)}
    names["big"] = list(range(10_000))
    return names


async def python_calls(code: str, calls: int) -> dict[str, Any]:
    tool, signal = python_tool(namespace=namespace()), AbortController().signal
    watch_ms, plain_ms = [], []
    for _ in range(calls):
        checkpoint = Checkpoint(1, None, CheckpointBudget(1 << 30))
        ns = tool_namespace(tool)
        started = time.perf_counter()
        watch = checkpoint.variables.watch(ns, code)
        exec(code, ns)
        watch.finish()
        watch_total = time.perf_counter() - started
        started = time.perf_counter()
        exec(code, ns)
        code_alone = time.perf_counter() - started
        watch_ms.append((watch_total - code_alone) * 1000)
        current_checkpoint.set(None)
        started = time.perf_counter()
        await tool.execute("call", {"code": code}, signal, lambda _: None)
        plain_ms.append((time.perf_counter() - started) * 1000)
    return {"checkpoint": summary(watch_ms), "call_without": summary(plain_ms)}


def tool_namespace(tool: Any) -> dict[str, Any]:
    """The namespace the python tool was given (the benchmark's stand-in for the user's)."""
    return dict(tool.execute.__self__.namespace)


def cell_calls(calls: int) -> dict[str, Any]:
    spent = []
    answer = {"index": 3, "before": {"cell": {"id": "c", "cell_type": "code", "source": "x = 1\n" * 20,
                                              "metadata": {}, "outputs": [], "execution_count": 4},
                                     "index": 3, "anchor": "b"}}  # fmt: skip
    message = {"op": "edit", "cell_id": "c", "source": "x = 2", "expect": "x = 1", "run": 1}
    for _ in range(calls):
        checkpoint = Checkpoint(1, None, CheckpointBudget(1 << 30))
        started = time.perf_counter()
        record = checkpoint.cells.begin("edit", "c")
        complete(record, message, answer)
        spent.append((time.perf_counter() - started) * 1000)
    return {"checkpoint": summary(spent)}


async def per_call(calls: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        for size in (4_096, 102_400, 1_048_576):
            results[f"write {size // 1024} KB"] = await file_calls("write", size, calls, Path(folder))
            results[f"edit {size // 1024} KB"] = await file_calls("edit", size, calls, Path(folder))
    results["python rebind"] = await python_calls("df = [1, 2]\nmodel = object()", calls)
    results["python append to a 10k list"] = await python_calls("big.append(1)\nbig.pop()", calls)
    results["cell edit"] = cell_calls(calls)
    return results


# -- part 2: a rewind in a real kernel -----------------------------------------------------------------------
SETUP = """
import os, time
from pi_notebook.notebook import configure, get_notebook_session
from pi_notebook.kernel import cell_tools
from pi_notebook.tools import edit_tool
from pi_notebook.notebook._rewind import rewind
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
os.chdir({folder!r})
edits = [faux_tool_call("edit", {{"path": f"file-{{i}}.txt", "edits": [{{"oldText": "before", "newText": "after"}}]}},
                        id=f"edit-{{i}}") for i in range(100)]
cells = [faux_tool_call("cell_edit", {{"cell_id": f"cell-{{i}}", "source": f"changed = {{i}}"}}, id=f"cell-{{i}}")
         for i in range(20)]
faux = FauxProvider(token_size=(1, 1))
faux.set_responses([faux_assistant_message(edits, "toolUse"), faux_assistant_message(cells, "toolUse"),
                    faux_assistant_message("done")])
configure(model=faux.model, stream_fn=faux.stream, tools=[edit_tool(), *cell_tools()],
          settings={{"retry": {{"enabled": False}}, "tools": {{"approval": "auto"}}}})
"""
TIMED = """
started = time.monotonic()
receipt = await rewind(get_notebook_session())
print("REWIND", (time.monotonic() - started) * 1000, len(receipt.restored.get("files restored", [])),
      len(receipt.restored.get("cells restored", [])))
"""


def rewind_in_a_kernel() -> dict[str, Any]:
    from control_frontend import Frontend
    from fake_page import FakePage, code
    from kernel_harness import Kernel

    kernel = Kernel()
    try:
        frontend = Frontend(kernel)
        frontend.run("%load_ext pi_notebook", timeout=120)
        with tempfile.TemporaryDirectory() as folder:
            for i in range(100):
                (Path(folder) / f"file-{i}.txt").write_text(f"file {i}: before\n" * 200)
            page = FakePage(frontend, [code(f"cell-{i}", f"original = {i}") for i in range(20)])
            frontend.run(SETUP.format(folder=folder))
            frontend.run("run = %pi change everything\nawait run", timeout=120)
            out = frontend.run(TIMED, timeout=60)
            changed_back = sum("before" in (Path(folder) / f"file-{i}.txt").read_text() for i in range(100))
            cells_back = sum(cell["source"].startswith("original") for cell in page.cells)
        ms, files, cells = out.split("REWIND", 1)[1].split()[:3]
        return {
            "rewind_ms": round(float(ms), 1),
            "files_restored": int(files),
            "cells_restored": int(cells),
            "files_back_on_disk": changed_back,
            "cells_back_in_the_page": cells_back,
        }
    finally:
        kernel.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    results = {"per_call": asyncio.run(per_call(options.calls)), "rewind": rewind_in_a_kernel()}
    if options.json:
        print(json.dumps(results, indent=2))
        return
    print(f"checkpoint cost per changing tool call ({options.calls} calls; target < {TARGET_CALL_MS} ms + the read)")
    for name, row in results["per_call"].items():
        cells = "  ".join(f"{part} p50 {v['p50_ms']:.3f} / p99 {v['p99_ms']:.3f} ms" for part, v in row.items())
        print(f"  {name:30} {cells}")
    rewound = results["rewind"]
    print(
        f"rewind of 100 file edits + 20 cell changes: {rewound['rewind_ms']:.1f} ms (target < {TARGET_REWIND_MS:.0f});"
        f" {rewound['files_back_on_disk']}/100 files and {rewound['cells_back_in_the_page']}/20 cells back"
    )


if __name__ == "__main__":
    main()
