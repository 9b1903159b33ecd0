"""Engine benchmark: per-delta, per-turn and abort-to-idle costs, beside Pi and the Python ports of Pi.

    python bench/bench_engine.py            # ours only
    python bench/bench_engine.py --compare  # also Pi 0.83 on Node and the ports installed per bench/compare

Workloads (identical for every implementation, see bench/compare/README.md):
  W1  one reply of N tokens streamed by the faux provider (token size 1, no pacing), one counting listener:
      µs per delta event, N = 10k and 100k.
  W2  T assistant turns each calling a trivial echo tool, then a final reply: ms per turn, T = 100 and 2000.
  W3  abort() while a paced reply streams, until the agent is idle: p50/p99 ms over 200 runs.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from pi_notebook.agent import Agent, AgentTool, AgentToolResult
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

ROOT = Path(__file__).resolve().parent


async def w1_streaming(n: int) -> float:
    faux = FauxProvider(token_size=(1, 1))
    faux.set_responses([faux_assistant_message("abcd" * n)])
    agent = Agent(stream_fn=faux.stream, model=faux.model)
    count = 0

    def listener(event: Any, signal: Any) -> None:
        nonlocal count
        count += 1

    agent.subscribe(listener)
    gc.collect()
    start = time.perf_counter()
    await agent.prompt("go")
    elapsed = time.perf_counter() - start
    assert count >= n, count
    return elapsed / n * 1e6


async def _echo(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    return AgentToolResult(content="ok")


ECHO = AgentTool(name="echo", description="echo", parameters={"type": "object", "properties": {}}, execute=_echo)


async def w2_turns(turns: int) -> float:
    faux = FauxProvider(token_size=(1, 1))
    faux.set_responses(
        [faux_assistant_message([faux_tool_call("echo", {}, id=f"t{i}")], "toolUse") for i in range(turns)]
        + [faux_assistant_message("done")]
    )
    agent = Agent(stream_fn=faux.stream, model=faux.model, tools=[ECHO])
    agent.subscribe(lambda event, signal: None)
    gc.collect()
    start = time.perf_counter()
    await agent.prompt("go")
    elapsed = time.perf_counter() - start
    assert faux.state.call_count == turns + 1
    return elapsed / turns * 1e3


def _count_updates(limit: int, ready: asyncio.Event) -> Any:
    updates = 0

    def listener(event: Any, signal: Any) -> None:
        nonlocal updates
        if event.type == "message_update":
            updates += 1
            if updates == limit:
                ready.set()

    return listener


async def w3_abort(runs: int) -> dict[str, float]:
    samples = []
    for _ in range(runs):
        faux = FauxProvider(tokens_per_second=2000, token_size=(1, 1))
        faux.set_responses([faux_assistant_message("abcd" * 100_000)])
        agent = Agent(stream_fn=faux.stream, model=faux.model)
        ready = asyncio.Event()
        agent.subscribe(_count_updates(20, ready))
        task = asyncio.create_task(agent.prompt("go"))
        await ready.wait()
        start = time.perf_counter()
        agent.abort()
        await agent.wait_for_idle()
        samples.append((time.perf_counter() - start) * 1e3)
        await task
        assert agent.state.messages[-1].stop_reason == "aborted"
    samples.sort()
    return {
        "p50": statistics.median(samples),
        "p99": samples[min(len(samples) - 1, int(len(samples) * 0.99))],
        "n": len(samples),
    }


async def run_ours(repeats: int = 3) -> dict[str, Any]:
    w1_runs = {str(n): [round(await w1_streaming(n), 3) for _ in range(repeats)] for n in (10_000, 100_000)}
    w2_runs = {str(t): [round(await w2_turns(t), 4) for _ in range(repeats)] for t in (100, 2000)}
    return {
        "impl": "pi_notebook",
        "version": _version(),
        "w1_us_per_event": {n: min(v) for n, v in w1_runs.items()},
        "w1_runs": w1_runs,
        "w2_ms_per_turn": {t: min(v) for t, v in w2_runs.items()},
        "w2_runs": w2_runs,
        "w3_abort_ms": await w3_abort(200),
    }


def _version() -> str:
    from importlib.metadata import version

    return version("pi-notebook")


def _fmt(value: Any, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def report(results: list[dict[str, Any]]) -> str:
    ours = results[0]
    lines = [
        f"{'implementation':28} {'µs/ev@10k':>10} {'µs/ev@100k':>11} {'ms/turn@100':>12} {'ms/turn@2000':>13}"
        f" {'abort p50':>10} {'abort p99':>10}",
    ]
    for r in results:
        w1, w2, w3 = r.get("w1_us_per_event") or {}, r.get("w2_ms_per_turn") or {}, r.get("w3_abort_ms") or {}
        lines.append(
            f"{r['impl'] + ' ' + str(r.get('version', '')):28} {_fmt(w1.get('10000')):>10} {_fmt(w1.get('100000')):>11}"
            f" {_fmt(w2.get('100'), 3):>12} {_fmt(w2.get('2000'), 3):>13}"
            f" {_fmt(w3.get('p50'), 3):>10} {_fmt(w3.get('p99'), 3):>10}"
        )
    w1, w2 = ours["w1_us_per_event"], ours["w2_ms_per_turn"]
    lines.append("")
    lines.append(
        f"flatness (ours): streaming 100k/10k = {w1['100000'] / w1['10000']:.2f}x (target <= 1.5x), "
        f"turns 2000/100 = {w2['2000'] / w2['100']:.2f}x (target <= 1.5x)"
    )
    for other in results[1:]:
        ratios = []
        o1, o2, o3 = other.get("w1_us_per_event") or {}, other.get("w2_ms_per_turn") or {}, other.get("w3_abort_ms")
        if o1.get("100000"):
            ratios.append(f"streaming@100k {o1['100000'] / w1['100000']:.1f}x")
        if o2.get("2000"):
            ratios.append(f"turns@2000 {o2['2000'] / w2['2000']:.1f}x")
        if isinstance(o3, dict) and o3.get("p99"):
            ratios.append(f"abort p99 {o3['p99'] / ours['w3_abort_ms']['p99']:.1f}x")
        lines.append(
            f"ours is faster than {other['impl']} by: {', '.join(ratios) or 'n/a'}"
            + (f"  ({other['notes']})" if other.get("notes") else "")
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", action="store_true", help="also run Pi on Node and the Python ports")
    parser.add_argument("--json", action="store_true", help="print raw JSON results too")
    args = parser.parse_args()
    results = [asyncio.run(run_ours())]
    if args.compare:
        sys.path.insert(0, str(ROOT / "compare"))
        from run_compare import collect  # type: ignore[import-not-found]

        results.extend(collect(timeout_s=900))
    print(report(results))
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
