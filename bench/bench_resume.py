"""Resume time of a 10 000-message session file (target: < 1 s), and where it goes.

    python bench/bench_resume.py

Writes a session of user / assistant (text + tool call) / tool result messages with ``SessionStore``, then
times, best of 3: ``load_session`` (read + rebuild the transcript), ``AgentSession.resume`` (the same, plus
opening the file to continue it, what ``%pi resume`` does), and ``list_sessions`` on the folder (what
``%pi sessions`` and the ``%load_ext`` greeting read).

Then large files (issue 30 item 13), best of 3: ``list_sessions`` on a folder holding a 1 GB session file (a
header, then zeros: sparse) beside a 100 MB real one, and ``AgentSession.resume`` refusing a 1 GB session file
and a 200 MB file that is no session (JSON lines without a header); each with the bytes the process read
(``/proc/self/io``).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_store import messages

from pi_notebook.ai.providers.faux import FauxProvider
from pi_notebook.session import AgentSession, SessionFileError, SessionStore, list_sessions, load_session

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


def bytes_read() -> int:
    with open("/proc/self/io", encoding="ascii") as io:
        return int(next(line for line in io if line.startswith("rchar:")).split()[1])


def measured(call: Callable[[], object]) -> tuple[float, float]:
    """Best time of 3 (ms) and the MB read by the last call."""
    best = best_of(2, call)
    before = bytes_read()
    started = time.perf_counter()
    call()
    best = min(best, time.perf_counter() - started)
    return best * 1000, (bytes_read() - before) / 1e6


def refused(path: Path) -> None:
    faux = FauxProvider()
    try:
        AgentSession(model=faux.model, stream_fn=faux.stream).resume(path)
    except SessionFileError:
        return
    raise AssertionError(f"{path} was resumed")


def large_files() -> None:
    header = b'{"type":"session","version":3,"id":"big","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n'
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        huge = folder / "huge.jsonl"
        with open(huge, "wb") as file:
            file.write(header)
            file.truncate(1 << 30)
        with SessionStore.new(folder) as store:
            batch = messages(3000)
            while store.path.stat().st_size < 100_000_000:
                for message in batch:
                    store.append_message(message)  # type: ignore[arg-type]
        other = folder / "other" / "log.jsonl"
        other.parent.mkdir()
        line = b'{"level":"info","text":"' + b"x" * 200 + b'"}\n'
        with open(other, "wb") as file:
            for _ in range(200):
                file.write(line * ((1 << 20) // len(line)))
        listed = measured(lambda: list_sessions(folder))
        too_large = measured(lambda: refused(huge))
        no_session = measured(lambda: refused(other))
    print(f"list_sessions, 1 GB + 100 MB files: {listed[0]:.0f} ms, {listed[1]:.1f} MB read")
    print(f"resume refuses a 1 GB session file: {too_large[0]:.1f} ms, {too_large[1]:.2f} MB read")
    print(f"resume refuses a 200 MB file that is no session: {no_session[0]:.1f} ms, {no_session[1]:.2f} MB read")


if __name__ == "__main__":
    main()
    large_files()
