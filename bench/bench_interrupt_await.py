"""Kernel interrupt of a cell awaiting a quiet run: the interrupt button (SIGINT) to the cell's end, in a real kernel.

    python bench/bench_interrupt_await.py

The run's model has not answered (it waits until the run is stopped), so nothing but the run's one-second silence
check wakes the kernel's event loop. ``KernelManager.interrupt_kernel()`` is timed to the cell's ``idle`` status
(its ``KeyboardInterrupt`` shown, the run aborted), 20 times with ``signals_wake_the_loop`` (``kernel/_wake.py``) and
20 times with it replaced by a no-op in the kernel (ipykernel alone: its cancel waits for the loop to wake).
Measured here (2 cores, shared): ipykernel alone p50 68 ms, max 253 ms; with it p50 23 ms, max 31 ms (2.9x at p50).
"""

from __future__ import annotations

import statistics
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

SETUP = """
import asyncio, contextlib
from pi_notebook.notebook import _run, configure
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
faux = FauxProvider()
fixed = _run.signals_wake_the_loop
async def quiet_model(context, options, state, model):
    await options.signal.wait()
    return faux_assistant_message([], "aborted")
configure(model=faux.model, stream_fn=faux.stream)
"""

ONE = """
faux.set_responses([quiet_model])
run = %pi hello
print("awaiting", flush=True)
await run
"""


def latencies(kernel: Any, fixed: bool, runs: int) -> list[float]:
    kernel.run(f"_run.signals_wake_the_loop = {'fixed' if fixed else 'contextlib.nullcontext'}")
    pid = kernel.manager.provisioner.process.pid
    wchan = Path(f"/proc/{pid}/wchan")
    samples = []
    for _ in range(runs):
        msg_id = kernel.start(textwrap.dedent(ONE))
        kernel.wait_for_output(msg_id, "awaiting")
        while wchan.exists() and wchan.read_text() != "do_epoll_wait":
            time.sleep(0.002)  # until the kernel's loop sleeps in its selector
        started = time.monotonic()
        kernel.interrupt()
        outcome = kernel.collect(msg_id, timeout=30)
        samples.append((time.monotonic() - started) * 1000)
        assert outcome.error is not None, "the cell was not interrupted"
    return sorted(samples)


def main() -> None:
    from kernel_harness import Kernel

    kernel = Kernel()
    try:
        kernel.run("%load_ext pi_notebook")
        kernel.run(SETUP)
        results = {fixed: latencies(kernel, fixed, 20) for fixed in (False, True)}
    finally:
        kernel.shutdown()
    for fixed, samples in results.items():
        name = "with signals_wake_the_loop" if fixed else "ipykernel alone          "
        print(
            f"{name}: interrupt → cell ended p50 {statistics.median(samples):7.1f} ms, "
            f"max {samples[-1]:7.1f} ms over {len(samples)}"
        )
    ratio = statistics.median(results[False]) / statistics.median(results[True])
    print(f"p50 ratio ipykernel alone / with it: {ratio:.1f}x")


if __name__ == "__main__":
    main()
