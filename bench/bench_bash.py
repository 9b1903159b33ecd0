"""Bash tool benchmark: from abort (or timeout) to no surviving process, for a three-level process tree.

    python bench/bench_bash.py             # 50 runs per workload
    python bench/bench_bash.py --runs 200 --json

The tree: shell -> child -> grandchild, where the grandchild left the process group with ``setsid`` (so a
group kill alone misses it). Workloads:
  B1  abort, the child ignores SIGTERM (needs the SIGKILL after ``kill_grace_ms``, 200 ms by default);
  B2  abort, every process obeys SIGTERM;
  B3  timeout (0.3 s) with the child ignoring SIGTERM; measured from the deadline counted from the call (so
      it also includes the spawn, an upper bound).
Each run waits until all three processes printed their PIDs, fires the abort, and polls psutil every
millisecond until each PID is gone (exited or zombie). Also reported: abort until ``execute`` raised.
Target (DESIGN §5): whole tree gone within 300 ms of abort or timeout, p99.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from pi_notebook.ai import AbortController
from pi_notebook.tools import BashError, bash_tool

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "tools"))
from bash_helpers import Watcher, is_gone  # the tests' own watcher and liveness check

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


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered),
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "max": ordered[-1],
        "n": len(ordered),
    }


async def bench(runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, trap, timeout_s in (
        ("B1 abort, child ignores SIGTERM", True, None),
        ("B2 abort, all obey SIGTERM", False, None),
        ("B3 timeout 0.3 s, child ignores SIGTERM", True, 0.3),
    ):
        gone, raised = zip(*[await one_run(trap, timeout_s) for _ in range(runs)], strict=True)
        results[name] = {"gone_ms": summary(list(gone)), "raised_ms": summary(list(raised))}
    return results


def report(results: dict[str, Any]) -> str:
    lines = [f"{'workload':42} {'gone p50':>9} {'gone p99':>9} {'max':>8} {'p99/target':>11} {'raised p99':>11}"]
    for name, r in results.items():
        g, e = r["gone_ms"], r["raised_ms"]
        lines.append(
            f"{name:42} {g['p50']:9.1f} {g['p99']:9.1f} {g['max']:8.1f} {g['p99'] / TARGET_MS:10.2f}x {e['p99']:11.1f}"
        )
    lines.append(
        f"(ms; n={next(iter(results.values()))['gone_ms']['n']} per workload; target p99 < {TARGET_MS:.0f} ms)"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--json", action="store_true", help="print raw JSON results too")
    args = parser.parse_args()
    results = asyncio.run(bench(max(1, args.runs)))
    print(report(results))
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
