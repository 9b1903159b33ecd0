"""Memory benchmark: what a settled ``%pi`` run keeps alive in a real kernel, as a ratio to its transcript.

    python bench/bench_memory.py [RUNS] [REPLY_CHARS]      # defaults: 200 runs, 20,000-character replies

M1  A kernel (jupyter_client) runs RUNS faux runs, one after another, as a user types them (``%pi ...`` in one
    cell, so ``Out`` keeps the run; an ``await`` in the next). After 20 runs (warm-up) and after all of them it
    reports its open ipywidgets and its resident set size; the growth between the two, per run, is divided by a
    run's transcript (its messages as JSON, as the session file holds them). Target: at most 2x.
M2  The same in a second kernel with tracemalloc on (Python's own allocations, without allocator slack or
    tracemalloc's overhead in the RSS figure of M1, which is why M1 runs without it).

The per-run figure includes what the kernel itself keeps per executed cell (IPython's history, ``Out``), since
that is what a notebook user pays too.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

WARM_UP = 20


def measure(runs: int, reply_chars: int, *, trace: bool) -> dict[str, float]:
    from kernel_harness import Kernel
    from memory_workload import Workload

    kernel = Kernel()
    try:
        workload = Workload(kernel, reply_chars=reply_chars, trace=trace)
        workload.runs(WARM_UP)
        before = workload.probe()
        workload.runs(runs - WARM_UP)
        after = workload.probe()
    finally:
        kernel.shutdown()
    count = after.runs - before.runs
    transcript = (after.transcript - before.transcript) / count
    grown = (after.traced - before.traced) if trace else (after.rss - before.rss)
    return {
        "widgets_before": before.widgets,
        "widgets_after": after.widgets,
        "per_run": grown / count,
        "transcript": transcript,
        "ratio": grown / count / transcript,
    }


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    reply_chars = int(sys.argv[2]) if len(sys.argv) > 2 else 20_000
    if runs <= WARM_UP:
        raise SystemExit(f"RUNS must exceed the {WARM_UP} warm-up runs")
    for name, trace in (("M1 RSS", False), ("M2 tracemalloc", True)):
        result = measure(runs, reply_chars, trace=trace)
        print(
            f"{name}: {runs} runs of {reply_chars:,}-char replies — open widgets {result['widgets_before']} after "
            f"{WARM_UP} runs, {result['widgets_after']} after {runs}; {result['per_run'] / 1024:,.1f} KiB per settled "
            f"run for a {result['transcript'] / 1024:,.1f} KiB transcript: {result['ratio']:.2f}x (target <= 2x)"
        )


if __name__ == "__main__":
    main()
