"""Bash tool benchmark: from abort (or timeout) to no surviving process, for a three-level process tree.

    python bench/bench_bash.py             # 50 runs per abort/timeout workload, 10 per kernel-death one
    python bench/bench_bash.py --runs 200 --death-runs 30 --json

The tree: shell -> child -> grandchild, where the grandchild left the process group with ``setsid`` (so a
group kill alone misses it). Workloads:
  B1  abort, the child ignores SIGTERM (needs the SIGKILL after ``kill_grace_ms``, 200 ms by default);
  B2  abort, every process obeys SIGTERM;
  B3  timeout (0.3 s) with the child ignoring SIGTERM; measured from the deadline counted from the call (so
      it also includes the spawn, an upper bound).
Each run waits until all three processes printed their PIDs, fires the abort, and polls psutil every
millisecond until each PID is gone (exited or zombie). Also reported: abort until ``execute`` raised.
Target (DESIGN §5): whole tree gone within 300 ms of abort or timeout, p99.

Kernel death (issue 10 item 9): a Python process (what a kernel is) runs the tool on the same tree and is
SIGKILLed mid-call, so no exit handler runs; measured from the SIGKILL until no process of the tree survives
(the watchdog's work; ``--death-runs`` runs each, a fresh interpreter per run):
  K1  the child ignores SIGTERM (SIGKILL after the 200 ms grace);
  K2  every process obeys SIGTERM.
``tests/tools/test_bash_kernel_death.py`` checks the same with a real Jupyter kernel.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from pi_notebook.ai import AbortController
from pi_notebook.tools import BashError, bash_tool

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "tools"))
from bash_helpers import Watcher, is_gone, kill_all, named_pids  # the tests' own watcher and liveness check

TARGET_MS = 300.0
SETSID = shutil.which("setsid") or "setsid"


def tree(trap: bool) -> str:
    ignore = 'trap "" TERM\n' if trap else ""
    return f"""echo shell $$
bash -c '{ignore}{SETSID} sh -c "echo grandchild \\$\\$; exec sleep 1000" &
echo child $$
wait' &
wait
"""


NAMES = ("shell", "child", "grandchild")


async def one_run(trap: bool, timeout_s: float | None) -> tuple[float, float]:
    """(ms until no process survives, ms until execute raised), counted from the abort or the deadline."""
    controller = AbortController()
    watcher = Watcher()
    args: dict[str, Any] = {"command": tree(trap)}
    if timeout_s is not None:
        args["timeout"] = timeout_s
    returned: list[float] = []

    async def call() -> None:
        try:
            await bash_tool().execute("bench", args, controller.signal, watcher)
        except BashError:
            returned.append(time.perf_counter())
        else:
            raise AssertionError("the command was not stopped")

    called = time.perf_counter()
    task = asyncio.create_task(call())
    procs = list((await watcher.until_named(*NAMES)).values())
    if timeout_s is None:
        start = time.perf_counter()
        controller.abort()
    else:
        start = called + timeout_s
    for _ in itertools.count():  # poll: nothing to wait on but the processes themselves
        if all(is_gone(p) for p in procs):
            break
        await asyncio.sleep(0.001)
    gone = time.perf_counter()
    await task
    return (gone - start) * 1000, (returned[0] - start) * 1000


DYING = """
import asyncio, re
from pi_notebook.ai import AbortController
from pi_notebook.tools import bash_tool
COMMAND = {command!r}
async def main():
    ready = asyncio.Event()
    def update(result):
        text = result.content[0].text if result.content else ""
        if not ready.is_set() and all(re.search(rf"^{{name}} \\d+$", text, re.M) for name in {names!r}):
            print(text, "READY", sep="\\n", flush=True)
            ready.set()
    await bash_tool().execute("bench", {{"command": COMMAND}}, AbortController().signal, update)
asyncio.run(main())
"""


def one_death(trap: bool) -> float:
    """ms from SIGKILL of a process running the tool until none of the tree's processes is left."""
    code = DYING.format(command=tree(trap), names=NAMES)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    assert child.stdout is not None
    output = ""
    stuck = threading.Timer(60, child.kill)  # bounds the blocking reads below
    stuck.start()
    while "READY" not in output:
        line = child.stdout.readline()
        if not line:
            raise RuntimeError(f"the tool did not start its tree: {output!r}")
        output += line
    stuck.cancel()
    procs = list(named_pids(output, NAMES).values())
    start = time.perf_counter()
    os.kill(child.pid, signal.SIGKILL)
    give_up = start + 10
    while not all(is_gone(p) for p in procs):  # poll: nothing to wait on but the processes themselves
        if time.perf_counter() > give_up:
            kill_all(procs)
            raise RuntimeError("processes survived the killed interpreter for 10 s")
        time.sleep(0.001)
    gone = time.perf_counter()
    child.wait()
    child.stdout.close()
    return (gone - start) * 1000


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered),
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "max": ordered[-1],
        "n": len(ordered),
    }


async def bench(runs: int, death_runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, trap, timeout_s in (
        ("B1 abort, child ignores SIGTERM", True, None),
        ("B2 abort, all obey SIGTERM", False, None),
        ("B3 timeout 0.3 s, child ignores SIGTERM", True, 0.3),
    ):
        gone, raised = zip(*[await one_run(trap, timeout_s) for _ in range(runs)], strict=True)
        results[name] = {"gone_ms": summary(list(gone)), "raised_ms": summary(list(raised))}
    for name, trap in (("K1 kernel SIGKILL, child ignores SIGTERM", True), ("K2 kernel SIGKILL, all obey", False)):
        if death_runs > 0:
            results[name] = {"gone_ms": summary([one_death(trap) for _ in range(death_runs)])}
    return results


def report(results: dict[str, Any]) -> str:
    lines = [f"{'workload':42} {'gone p50':>9} {'gone p99':>9} {'max':>8} {'p99/target':>11} {'raised p99':>11}"]
    for name, r in results.items():
        g = r["gone_ms"]
        raised = f"{r['raised_ms']['p99']:11.1f}" if "raised_ms" in r else f"{'-':>11}"
        lines.append(
            f"{name:42} {g['p50']:9.1f} {g['p99']:9.1f} {g['max']:8.1f} {g['p99'] / TARGET_MS:10.2f}x {raised}"
        )
    counts = ", ".join(sorted({f"{r['gone_ms']['n']}" for r in results.values()}))
    lines.append(
        f"(ms; n={counts} per workload; B: from abort/deadline, K: from the SIGKILL; target p99 < {TARGET_MS:.0f} ms)"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--death-runs", type=int, default=10, help="runs of K1 and K2 (0: skip them)")
    parser.add_argument("--json", action="store_true", help="print raw JSON results too")
    args = parser.parse_args()
    results = asyncio.run(bench(max(1, args.runs), max(0, args.death_runs)))
    print(report(results))
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
