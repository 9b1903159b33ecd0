"""Shared harness for the port benchmarks (stdlib only; runs inside each port's venv).

A port script supplies three async callables and calls ``main``:

* ``w1(n) -> seconds``: one prompt whose reply is one text message of ``n`` 4-char deltas.
* ``w2(t) -> seconds``: ``t`` tool-call turns to ``echo`` plus one final text reply.
* ``w3_once() -> ms | None``: abort()-to-idle latency while streaming (``None``: not idle in 2 s).

Each W1/W2 size is measured 3 times and the best is reported (all three in ``w1_runs``/``w2_runs``).
``main`` prints one JSON object on stdout (see ../README.md). ``--quick`` shrinks the sizes.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

QUICK = "--quick" in sys.argv
DRIVER = sys.argv[sys.argv.index("--driver") + 1] if "--driver" in sys.argv else None
W1_SIZES = [1_000, 10_000] if QUICK else [10_000, 100_000]
W2_SIZES = [10, 100] if QUICK else [100, 2000]
W3_REPS = 20 if QUICK else 200
W3_UPDATES = 20  # abort once this many message_update events arrived
W3_TOKENS_PER_SECOND = 2000
W3_TOKENS = 10_000  # 5 s at the nominal rate: never finishes within a repetition or the 2 s abort timeout
ABORT_TIMEOUT_S = 2.0


def text_of(n: int) -> str:
    return "abcd" * n  # n tokens of 4 characters


# Replies are described once; each port turns them into its faux messages or its scripted stream.
def text_reply(n: int) -> tuple:
    return ("text", text_of(n))


def tool_reply(i: int) -> tuple:
    return ("tool", f"call_{i}", "echo", {"text": f"t{i}"})


def chunks4(s: str) -> list[str]:
    return [s[i : i + 4] for i in range(0, len(s), 4)]


async def pace(tokens_per_second: float | None = None) -> None:
    """Between two deltas of a scripted stream. Unpaced, it does not yield to the event loop: a
    Python coroutine simply continues, the analog of the microtask hop in Pi's Node faux (an
    ``asyncio.sleep(0)`` would be a full loop turn per delta, like a Node macrotask)."""
    if tokens_per_second:
        await asyncio.sleep(1 / tokens_per_second)


def append_text(holder: Any, key: str, delta: str) -> None:
    """Append to ``holder[key]`` / ``holder.key`` without the quadratic copy of ``s += d`` on an
    attribute: move the string into a local first so CPython can grow it in place."""
    if isinstance(holder, dict):
        text = holder[key]
        holder[key] = ""
        text += delta
        holder[key] = text
    else:
        text = getattr(holder, key)
        setattr(holder, key, "")
        text += delta
        setattr(holder, key, text)


async def time_abort(
    run: Awaitable[Any],
    reached: asyncio.Event,
    abort: Callable[[], None],
    wait_idle: Callable[[], Awaitable[Any]] | None = None,
    cleanup: Callable[[], None] | None = None,
) -> float | None:
    """Start ``run``, wait for ``reached`` (set by a listener after W3_UPDATES updates), abort,
    and return ms until the run finished (and ``wait_idle`` resolved); None if not within 2 s."""
    task = asyncio.ensure_future(run)
    waiter = asyncio.ensure_future(reached.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if not reached.is_set():
        waiter.cancel()
        task.result()  # surface the error
        raise RuntimeError("run ended before enough message_update events arrived")
    t0 = time.perf_counter()
    abort()
    done, _ = await asyncio.wait({task}, timeout=ABORT_TIMEOUT_S)
    if not done:
        task.cancel()
        if cleanup:
            cleanup()
        await asyncio.gather(task, return_exceptions=True)
        return None
    task.result()
    if wait_idle is not None:
        await asyncio.wait_for(wait_idle(), ABORT_TIMEOUT_S)
    return (time.perf_counter() - t0) * 1000


def _pct(sorted_values: list[float], p: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, round(p / 100 * (len(sorted_values) - 1)))]


async def _run_all(w1, w2, w3_once) -> tuple[dict, list[str]]:
    out: dict[str, Any] = {
        "w1_us_per_event": {},
        "w1_runs": {},
        "w2_ms_per_turn": {},
        "w2_runs": {},
        "w3_abort_ms": None,
    }
    notes: list[str] = []
    await w1(1000)  # warm-up, untimed (same as the Node script)
    await w2(100)
    for n in W1_SIZES:
        try:
            runs = [round(await w1(n) * 1e6 / n, 3) for _ in range(3)]
            out["w1_runs"][str(n)] = runs
            out["w1_us_per_event"][str(n)] = min(runs)
        except Exception as exc:  # report, keep going
            out["w1_us_per_event"][str(n)] = None
            notes.append(f"w1 {n}: {type(exc).__name__}: {exc}")
    for t in W2_SIZES:
        try:
            runs = [round(await w2(t) * 1e3 / t, 4) for _ in range(3)]
            out["w2_runs"][str(t)] = runs
            out["w2_ms_per_turn"][str(t)] = min(runs)
        except Exception as exc:
            out["w2_ms_per_turn"][str(t)] = None
            notes.append(f"w2 {t}: {type(exc).__name__}: {exc}")
    try:
        lat: list[float] = []
        for _ in range(W3_REPS):
            ms = await w3_once()
            if ms is None:
                notes.append("w3: abort does not work (run not idle within 2 s of abort())")
                break
            lat.append(ms)
        else:
            lat.sort()
            out["w3_abort_ms"] = {"p50": round(_pct(lat, 50), 3), "p99": round(_pct(lat, 99), 3), "n": len(lat)}
    except Exception as exc:
        notes.append(f"w3: {type(exc).__name__}: {exc}")
    return out, notes


def main(impl: str, dist: str, driver: str, w1, w2, w3_once, notes: str = "") -> None:
    from importlib.metadata import version

    result: dict[str, Any] = {
        "impl": impl,
        "version": version(dist),
        "runtime": f"python {sys.version.split()[0]}",
        "driver": driver,
    }
    out, errors = asyncio.run(_run_all(w1, w2, w3_once))
    result.update(out)
    result["notes"] = "; ".join([*errors, notes] if notes else errors)
    print(json.dumps(result))
