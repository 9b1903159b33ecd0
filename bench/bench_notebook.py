"""Notebook benchmark: Stop click to agent_settled in a real kernel, and comm bytes per streamed character.

    python bench/bench_notebook.py

N1  In a real kernel (jupyter_client), a %pi run streams 5000 tokens/s; ``run.view.stop_button.click()`` is
    timed to the ``agent_settled`` event, 30 runs, p50/p99 (target < 100 ms).
N2  With a dummy comm, the bytes the run widget sends for a 10k- and a 100k-character stream, and their
    ratio (linear: ~10x), plus the number of updates per second (coalesced: <= 20/s).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

SETUP = """
import asyncio, time
from pi_notebook.notebook import configure, get_session
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
faux = FauxProvider(tokens_per_second=5000, token_size=(1, 1))
configure(model=faux.model, stream_fn=faux.stream)
settled_at = []
get_session().subscribe(lambda e: settled_at.append(time.perf_counter()) if e.type == "agent_settled" else None)
"""

ONE_STOP = """
faux.set_responses([faux_assistant_message("word " * 50_000)])
run = %pi stream
await run.wait_for("message_update", count=50)
clicked = time.perf_counter()
run.view.stop_button.click()
await run
print(f"{(settled_at[-1] - clicked) * 1000:.3f}")
"""


def stop_latency(runs: int = 30) -> dict[str, float]:
    from kernel_harness import Kernel

    kernel = Kernel()
    try:
        kernel.run("%load_ext pi_notebook")
        kernel.run(SETUP)
        samples = sorted(float(kernel.run(textwrap.dedent(ONE_STOP)).stdout.strip()) for _ in range(runs))
    finally:
        kernel.shutdown()
    return {"p50": statistics.median(samples), "p99": samples[-1], "n": len(samples)}


async def comm_bytes(chars: int) -> tuple[int, float]:
    import dummy_comm

    sent = dummy_comm.install()
    from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
    from pi_notebook.notebook import Run
    from pi_notebook.session import AgentSession

    faux = FauxProvider(tokens_per_second=20_000, token_size=(1, 1))
    faux.set_responses([faux_assistant_message("abcd" * (chars // 4))])
    session = AgentSession(model=faux.model, stream_fn=faux.stream)
    started = time.monotonic()
    run = Run(session, 1, lambda: session.prompt("go"), label="go")
    await run
    elapsed = time.monotonic() - started
    return dummy_comm.custom_bytes(sent), len(dummy_comm.custom_messages(sent)) / elapsed


def main() -> None:
    small, _ = asyncio.run(comm_bytes(10_000))
    large, rate = asyncio.run(comm_bytes(100_000))
    print(
        f"N2 comm bytes: {small:,} B for 10k chars, {large:,} B for 100k chars — ratio {large / small:.2f}x "
        f"(linear ≈ 10x); {large / 100_000:.2f} B/char; {rate:.1f} updates/s (coalesced ≤ 20/s)"
    )
    result = stop_latency()
    print(
        f"N1 Stop click → agent_settled while streaming 5000 tok/s: p50 {result['p50']:.2f} ms, "
        f"max {result['p99']:.2f} ms over {result['n']} runs (target < 100 ms)"
    )


if __name__ == "__main__":
    main()
