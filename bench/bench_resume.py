"""Resume time of a 10 000-message session file (target: < 1 s), and where it goes.

    python bench/bench_resume.py

Writes a session of user / assistant (text + tool call) / tool result messages with ``SessionStore``, then
times, best of 3: ``load_session`` (read + rebuild the transcript), ``AgentSession.resume`` (the same, plus
opening the file to continue it, what ``%pi resume`` does), and ``list_sessions`` on the folder (what
``%pi sessions`` and the ``%load_ext`` greeting read).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_store import messages

from pi_notebook.ai.providers.faux import FauxProvider
from pi_notebook.session import AgentSession, SessionStore, list_sessions, load_session

TARGET_S = 1.0


def best_of(repeats: int, call: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - started)
    return best


def main(count: int = 10_000) -> None:
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        with SessionStore.new(folder) as store:
            for message in messages(count):
                store.append_message(message)  # type: ignore[arg-type]
            path = store.path
        size_mb = path.stat().st_size / 1e6
        faux = FauxProvider()

        def resume() -> None:
            session = AgentSession(model=faux.model, stream_fn=faux.stream)
            session.resume(path)
            assert len(session.messages) == count
            session.dispose()

        load = best_of(3, lambda: load_session(path))
        resumed = best_of(3, resume)
        listed = best_of(3, lambda: list_sessions(folder))
    verdict = "meets" if resumed < TARGET_S else "MISSES"
    print(f"resume of {count} messages ({size_mb:.1f} MB): load_session {load * 1000:.0f} ms, ", end="")
    print(f"AgentSession.resume {resumed * 1000:.0f} ms ({verdict} the {TARGET_S:.0f} s target, ", end="")
    print(f"{resumed / TARGET_S:.2f}x of it), list_sessions {listed * 1000:.0f} ms")


if __name__ == "__main__":
    main()
