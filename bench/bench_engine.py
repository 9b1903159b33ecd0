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
from pi_notebook.ai import AssistantMessageEventStream, MessageBuilder
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call

ROOT = Path(__file__).resolve().parent


def scripted_stream_fn(replies: list[dict[str, Any]]) -> Any:
    """The comparison scripts' "scripted" driver in Python: the same events, 4-character deltas, no usage
    estimate (so the loop, not the test provider, is measured). Built on our own MessageBuilder."""
    queue = iter(replies)  # not list.pop(0), which is O(replies) per request

    def stream_fn(model: Any, context: Any, options: Any) -> AssistantMessageEventStream:
        reply = next(queue)

        async def events() -> Any:
            builder = MessageBuilder(model.api, model.provider, model.id)
            yield builder.start()
            if reply["type"] == "text":
                yield builder.text_start()
                text = reply["text"]
                for i in range(0, len(text), 4):
                    yield builder.text_delta(0, text[i : i + 4])
                yield builder.text_end(0)
                yield builder.done("stop")
            else:
                yield builder.toolcall_start(reply["id"], reply["name"])
                raw = json.dumps(reply["args"], separators=(",", ":"))
                for i in range(0, len(raw), 4):
                    yield builder.toolcall_delta(0, raw[i : i + 4])
                yield builder.toolcall_end(0, reply["args"])
                yield builder.done("toolUse")

        return AssistantMessageEventStream(events())

    return stream_fn


def _driver(driver: str, replies: list[dict[str, Any]]) -> tuple[Any, Any]:
    if driver == "scripted":
        faux = FauxProvider()
        return scripted_stream_fn(replies), faux.model
    faux = FauxProvider(token_size=(1, 1))
    faux.set_responses(
        [
            faux_assistant_message(r["text"])
            if r["type"] == "text"
            else faux_assistant_message([faux_tool_call(r["name"], r["args"], id=r["id"])], "toolUse")
            for r in replies
        ]
    )
    return faux.stream, faux.model


async def w1_streaming(n: int, driver: str = "faux") -> float:
    stream_fn, model = _driver(driver, [{"type": "text", "text": "abcd" * n}])
    agent = Agent(stream_fn=stream_fn, model=model)
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


async def w2_turns(turns: int, driver: str = "faux") -> float:
    replies = [{"type": "tool", "id": f"call_{i}", "name": "echo", "args": {"text": f"t{i}"}} for i in range(turns)]
    stream_fn, model = _driver(driver, [*replies, {"type": "text", "text": "done"}])
    agent = Agent(stream_fn=stream_fn, model=model, tools=[ECHO])
    agent.subscribe(lambda event, signal: None)
    gc.collect()
    start = time.perf_counter()
    await agent.prompt("go")
    elapsed = time.perf_counter() - start
    assert len(agent.state.messages) == 2 * turns + 2
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


async def run_ours(repeats: int = 5, driver: str = "faux") -> dict[str, Any]:
    await w1_streaming(1000, driver)  # warm-up, untimed (as the comparison scripts do)
    await w2_turns(100, driver)
    w1_runs = {str(n): [round(await w1_streaming(n, driver), 3) for _ in range(repeats)] for n in (10_000, 100_000)}
    w2_runs = {str(t): [round(await w2_turns(t, driver), 4) for _ in range(repeats)] for t in (100, 2000)}
    return {
        "impl": "pi_notebook" + ("-scripted" if driver == "scripted" else ""),
        "driver": driver,
        "version": _version(),
        "w1_us_per_event": {n: min(v) for n, v in w1_runs.items()},
        "w1_runs": w1_runs,
        "w2_ms_per_turn": {t: min(v) for t, v in w2_runs.items()},
        "w2_runs": w2_runs,
        "w3_abort_ms": await w3_abort(200) if driver == "faux" else None,  # W3 always paces with faux
    }


def _version() -> str:
    from importlib.metadata import version

    return version("pi-notebook")


def _fmt(value: Any, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def report(results: list[dict[str, Any]]) -> str:
    """A table of every row, our flatness, then each other row against ours with the same driver (faux rows
    against our faux row, scripted rows against our scripted row): ratio > 1 means we are faster."""
    ours = {r.get("driver", "faux"): r for r in results if r["impl"].startswith("pi_notebook")}
    lines = [
        f"{'implementation':30} {'µs/ev@10k':>10} {'µs/ev@100k':>11} {'ms/turn@100':>12} {'ms/turn@2000':>13}"
        f" {'abort p50':>10} {'abort p99':>10}",
    ]
    for r in results:
        w1, w2, w3 = r.get("w1_us_per_event") or {}, r.get("w2_ms_per_turn") or {}, r.get("w3_abort_ms") or {}
        name = f"{r['impl']} {r.get('version', '')}"
        lines.append(
            f"{name:30} {_fmt(w1.get('10000')):>10} {_fmt(w1.get('100000')):>11}"
            f" {_fmt(w2.get('100'), 3):>12} {_fmt(w2.get('2000'), 3):>13}"
            f" {_fmt(w3.get('p50'), 3):>10} {_fmt(w3.get('p99'), 3):>10}"
        )
    lines.append("")
    for mine in ours.values():
        w1, w2 = mine["w1_us_per_event"], mine["w2_ms_per_turn"]
        lines.append(
            f"flatness ({mine['impl']}): streaming 100k/10k = {w1['100000'] / w1['10000']:.2f}x, "
            f"turns 2000/100 = {w2['2000'] / w2['100']:.2f}x (targets <= 1.5x)"
        )
    for other in results:
        if other["impl"].startswith("pi_notebook"):
            continue
        mine = ours.get(other.get("driver", "faux"), ours["faux"])
        w1, w2, w3 = mine["w1_us_per_event"], mine["w2_ms_per_turn"], mine["w3_abort_ms"]
        ratios = []
        o1, o2, o3 = other.get("w1_us_per_event") or {}, other.get("w2_ms_per_turn") or {}, other.get("w3_abort_ms")
        if o1.get("100000"):
            ratios.append(f"streaming@100k {o1['100000'] / w1['100000']:.1f}x")
        if o2.get("2000"):
            ratios.append(f"turns@2000 {o2['2000'] / w2['2000']:.1f}x")
        if isinstance(o3, dict) and o3.get("p99"):
            ratios.append(f"abort p99 {o3['p99'] / w3['p99']:.1f}x")
        elif other.get("w3_abort_ms") is None:
            ratios.append("abort: theirs does not stop")
        lines.append(f"{mine['impl']} vs {other['impl']}: {', '.join(ratios) or 'n/a'} (ratio > 1: ours faster)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", action="store_true", help="also run Pi on Node and the Python ports")
    parser.add_argument("--json", action="store_true", help="print raw JSON results too")
    args = parser.parse_args()
    ours, scripted = asyncio.run(run_ours()), asyncio.run(run_ours(driver="scripted"))
    scripted["w3_abort_ms"] = ours["w3_abort_ms"]  # the same workload in both rows: measured once
    results = [ours, scripted]
    if args.compare:
        sys.path.insert(0, str(ROOT / "compare"))
        from run_compare import collect  # type: ignore[import-not-found]

        results.extend(collect(timeout_s=900))
    print(report(results))
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
