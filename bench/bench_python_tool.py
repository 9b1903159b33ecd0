"""python tool benchmark: Stop to ``agent_settled`` while the agent's code blocks the kernel's main thread.

    python bench/bench_python_tool.py              # 30 runs per workload
    python bench/bench_python_tool.py --runs 100 --json

In a real kernel (jupyter_client), the faux model calls the ``python`` tool with a pure-Python busy loop or a
``time.sleep(1000)``. Once the code runs (a listener prints a marker when it starts), the benchmark stops it:

  P1  control comm: ``{"action": "abort"}`` sent on a comm opened over a kernel subshell, as the JupyterLab
      extension's toolbar Stop, Accel+. and the forwarded run-widget Stop do;
  P2  kernel interrupt: ``KernelManager.interrupt_kernel()`` (SIGINT to the kernel), the interrupt button.

Measured: from the moment the stop is sent (this process) to the session's ``agent_settled`` event in the
kernel, both on ``time.monotonic()`` (CLOCK_MONOTONIC, shared by the processes of one machine); also from the
stop to the code's end (the python tool's ``end`` event). Target (DESIGN §5): p99 < 100 ms. With fewer than
100 runs, p99 is the slowest run. Measured here (2 cores, load average ~4, 50 runs): control comm busy loop
p50 12-15 / p99 21-34 ms, sleep p50 8-9 / p99 12-21 ms; kernel interrupt busy loop p50 5-6 / p99 15-16 ms,
sleep p50 4-5 / p99 10-47 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from control_frontend import Frontend  # the tests' frontend: control channel, comms on a subshell, iopub
from kernel_harness import Kernel

TARGET_MS = 100.0

SETUP = """
import json, sys, time
from pi_notebook.notebook import configure, get_session
from pi_notebook.kernel import add_python_listener, python_tool
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
real_stdout = sys.stdout
marks = {}
def on_python(event):
    marks[event.kind] = time.monotonic()
    if event.kind == "start":
        print("python start", file=real_stdout, flush=True)
add_python_listener(on_python)
faux = FauxProvider(token_size=(1, 1))
configure(model=faux.model, stream_fn=faux.stream, tools=[python_tool()],
          settings={"retry": {"enabled": False}, "compaction": {"enabled": False},
                    "tools": {"approval": "auto"}})
def on_event(event):
    if event.type == "agent_settled":
        marks["settled"] = time.monotonic()
        marks["aborted"] = event.aborted
get_session().subscribe(on_event)
def arm(code):
    marks.clear()
    call = faux_tool_call("python", {"code": code}, id="bench")
    faux.set_responses([faux_assistant_message([call], "toolUse"), faux_assistant_message("never")])
"""
CODES = {
    "busy loop": "n = 0\nwhile True:\n    n += 1",
    "sleep": "import time\ntime.sleep(1000)",
}


class Bench:
    def __init__(self) -> None:
        self.kernel = Kernel()
        self.frontend = Frontend(self.kernel)
        self.frontend.run("%load_ext pi_notebook")
        self.frontend.run(SETUP)
        self.subshell = self.frontend.create_subshell()
        self.comm = self.frontend.open(self.subshell)
        self.frontend.state(self.comm)

    def once(self, code: str, path: str) -> tuple[float, float]:
        """(stop -> agent_settled, stop -> code ended) in ms for one run."""
        frontend = self.frontend
        frontend.seen.clear()
        frontend.run(f"arm({code!r})\nrun = %pi go")
        frontend.wait(lambda m: m["msg_type"] == "stream" and "python start" in m["content"]["text"])
        if path == "control comm":
            sent = frontend.send(self.comm, {"action": "abort"}, self.subshell)
        else:
            sent = time.monotonic()
            self.kernel.interrupt()
        try:
            marks = json.loads(frontend.run("await run\nprint(json.dumps(marks))").strip().splitlines()[-1])
        except TimeoutError:
            self.kernel.interrupt()  # get the kernel back to say what happened
            state = frontend.run("print(marks, run.labels[-8:])", timeout=10)
            raise RuntimeError(f"{path}: the run did not settle within 30 s: {state}") from None
        if marks.get("aborted") is not True:
            raise RuntimeError(f"the run did not settle aborted: {marks}")
        return (marks["settled"] - sent) * 1000, (marks["end"] - sent) * 1000

    def close(self) -> None:
        self.kernel.shutdown()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    bench = Bench()
    results: list[dict[str, Any]] = []
    try:
        for path in ("control comm", "kernel interrupt"):
            for kind, code in CODES.items():
                bench.once(code, path)  # warm-up
                samples = [bench.once(code, path) for _ in range(args.runs)]
                settled = [s for s, _ in samples]
                ended = [e for _, e in samples]
                results.append(
                    {
                        "path": path,
                        "code": kind,
                        "runs": args.runs,
                        "settled_p50_ms": round(statistics.median(settled), 1),
                        "settled_p99_ms": round(percentile(settled, 0.99), 1),
                        "settled_max_ms": round(max(settled), 1),
                        "code_end_p50_ms": round(statistics.median(ended), 1),
                        "code_end_p99_ms": round(percentile(ended, 0.99), 1),
                    }
                )
    finally:
        bench.close()
    if args.json:
        print(json.dumps(results, indent=1))
        return
    print(f"Stop -> agent_settled while the agent's python code runs ({args.runs} runs each)")
    print(f"{'path':<18}{'code':<11}{'settled p50':>12}{'p99':>8}{'max':>8}{'code end p50':>14}{'p99':>8}")
    for r in results:
        print(
            f"{r['path']:<18}{r['code']:<11}{r['settled_p50_ms']:>10.1f}ms{r['settled_p99_ms']:>6.1f}ms"
            f"{r['settled_max_ms']:>6.1f}ms{r['code_end_p50_ms']:>12.1f}ms{r['code_end_p99_ms']:>6.1f}ms"
        )
    worst = max(r["settled_p99_ms"] for r in results)
    print(f"worst p99: {worst:.1f} ms -> {'meets' if worst < TARGET_MS else 'misses'} the {TARGET_MS:g} ms target")


if __name__ == "__main__":
    main()
