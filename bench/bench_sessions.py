"""Per-event cost with 1 and with 20 named sessions streaming at once (target: 20 within 1.2x of 1).

    python bench/bench_sessions.py

In one process, on one event loop (as in a kernel), N named notebook sessions (a fresh ``SessionRegistry``,
each session saving to its own file in a temporary folder, each run with its widget) each stream one faux reply
of ``DELTAS`` text deltas; the clock runs from the first start to the last ``agent_settled``. The faux streams are
unpaced, so the loop is never idle: the figure is the notebook's own cost per event (session, run, widget
operations, file), not the faux provider's pacing. The second line repeats it with the cyclic garbage collector
off: the gap between the two is the collector scanning what the runs keep alive (every widget operation is
kept for snapshots), which grows with the number of sessions.
"""

from __future__ import annotations

import asyncio
import gc
import tempfile
import time

from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
from pi_notebook.notebook._registry import SessionRegistry

DELTAS = 4000


async def per_event_us(sessions: int, folder: str) -> float:
    registry = SessionRegistry()
    runs = []
    for index in range(sessions):
        faux = FauxProvider(token_size=(1, 1))
        faux.set_responses([faux_assistant_message("abcd" * DELTAS)])
        settings = {"sessions": {"dir": folder}}
        registry.configure(faux.model, faux.stream, settings=settings, name=f"s{index}")
    started = time.perf_counter()
    for index in range(sessions):
        entry = registry.get(f"s{index}")
        runs.append(entry.start("bench", lambda entry=entry: entry.session.prompt("go")))
    await asyncio.gather(*runs)
    elapsed = time.perf_counter() - started
    events = sum(len(run.events) for run in runs)
    for entry in registry:
        entry.dispose()
    return elapsed / events * 1e6


def main() -> None:
    for label in ("", " (gc off)"):
        if label:
            gc.disable()
        with tempfile.TemporaryDirectory() as folder:
            best = {n: min(asyncio.run(per_event_us(n, folder)) for _ in range(3)) for n in (1, 20)}
        print(
            f"sessions{label}: {best[1]:.1f} µs/event with 1 session, {best[20]:.1f} µs/event with 20 at once "
            f"({DELTAS} deltas each) — ratio {best[20] / best[1]:.2f}x (target <= 1.2x)"
        )
    gc.enable()


if __name__ == "__main__":
    main()
