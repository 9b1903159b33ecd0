"""Engine benchmark: per-delta, per-turn and abort-to-idle costs, beside Pi and the Python ports of Pi.

    python bench/bench_engine.py            # ours only
    python bench/bench_engine.py --compare  # also Pi 0.83 on Node and the ports installed per bench/compare

Workloads (identical for every implementation, see bench/compare/README.md):
  W1  one reply of N tokens streamed by the faux provider (token size 1, no pacing), one counting listener:
      µs per delta event, N = 10k and 100k.
  W2  T assistant turns each calling a trivial echo tool, then a final reply: ms per turn, T = 100 and 2000.
  W3  abort() while a paced reply streams, until the agent is idle: p50/p99 ms over 200 runs.
  W4  tool-heavy turns: T replies with 5 parallel echo tool calls each, then a final reply: ms per turn, T = 100, 1000.
  W5  session-level turns: W2 through an AgentSession with its JSONL store on (a temporary directory):
      ms per turn, T = 100 and 1000.

Each size is measured three times, interleaved (100, 2000, 100, 2000, ...) so that load drifting on a shared
machine hits both sizes alike; the table shows the medians and the three runs are printed below it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pi_notebook.agent import Agent, AgentTool, AgentToolResult
from pi_notebook.ai import AssistantMessageEventStream, MessageBuilder
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_notebook.session import AgentSession, SessionStore

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
                for index, call in enumerate(reply.get("calls") or [reply]):
                    yield builder.toolcall_start(call["id"], call["name"])
                    raw = json.dumps(call["args"], separators=(",", ":"))
                    for i in range(0, len(raw), 4):
                        yield builder.toolcall_delta(index, raw[i : i + 4])
                    yield builder.toolcall_end(index, call["args"])
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
            else faux_assistant_message(
                [faux_tool_call(c["name"], c["args"], id=c["id"]) for c in r.get("calls") or [r]], "toolUse"
            )
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


def _tool_replies(turns: int, calls: int) -> list[dict[str, Any]]:
    def call(turn: int, index: int) -> dict[str, Any]:
        return {"type": "tool", "id": f"call_{turn}_{index}", "name": "echo", "args": {"text": f"t{turn}"}}

    if calls == 1:
        replies = [call(i, 0) for i in range(turns)]
    else:
        replies = [{"type": "tool", "calls": [call(i, j) for j in range(calls)]} for i in range(turns)]
    return [*replies, {"type": "text", "text": "done"}]


async def w2_turns(turns: int, driver: str = "faux", calls: int = 1) -> float:
    """W2 (``calls=1``) and W4 (``calls=5``): ms per turn of ``turns`` tool turns on a bare Agent."""
    stream_fn, model = _driver(driver, _tool_replies(turns, calls))
    agent = Agent(stream_fn=stream_fn, model=model, tools=[ECHO])
    agent.subscribe(lambda event, signal: None)
    gc.collect()
    start = time.perf_counter()
    await agent.prompt("go")
    elapsed = time.perf_counter() - start
    assert len(agent.state.messages) == (1 + calls) * turns + 2
    return elapsed / turns * 1e3


def _line_count(path: Path) -> int:
    with path.open(encoding="utf-8") as lines:
        return sum(1 for _ in lines)


async def w5_session_turns(turns: int, driver: str = "faux") -> float:
    """W5: W2 through an AgentSession whose store writes every message to a JSONL file."""
    stream_fn, model = _driver(driver, _tool_replies(turns, 1))
    with tempfile.TemporaryDirectory() as directory, SessionStore(Path(directory) / "s.jsonl") as store:
        session = AgentSession(model=model, stream_fn=stream_fn, tools=[ECHO], store=store)
        session.subscribe(lambda event: None)
        gc.collect()
        start = time.perf_counter()
        await session.prompt("go")
        elapsed = time.perf_counter() - start
        assert len(session.agent.state.messages) == 2 * turns + 2
        assert _line_count(store.path) >= 2 * turns + 2
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


async def _interleaved(measure: Any, sizes: tuple[int, ...], repeats: int, digits: int) -> dict[str, list[float]]:
    """``repeats`` runs of each size, interleaved (small, large, small, large, ...)."""
    runs: dict[str, list[float]] = {str(size): [] for size in sizes}
    for _ in range(repeats):
        for size in sizes:
            runs[str(size)].append(round(await measure(size), digits))
    return runs


def _medians(runs: dict[str, list[float]]) -> dict[str, float]:
    return {size: statistics.median(values) for size, values in runs.items()}


async def run_ours(repeats: int = 3, driver: str = "faux") -> dict[str, Any]:
    await w1_streaming(1000, driver)  # warm-up, untimed (as the comparison scripts do)
    await w2_turns(100, driver)
    w1_runs = await _interleaved(lambda n: w1_streaming(n, driver), (10_000, 100_000), repeats, 3)
    w2_runs = await _interleaved(lambda t: w2_turns(t, driver), (100, 2000), repeats, 4)
    w4_runs = await _interleaved(lambda t: w2_turns(t, driver, calls=5), (100, 1000), repeats, 4)
    w5_runs = await _interleaved(lambda t: w5_session_turns(t, driver), (100, 1000), repeats, 4)
    return {
        "impl": "pi_notebook" + ("-scripted" if driver == "scripted" else ""),
        "driver": driver,
        "version": _version(),
        "w1_us_per_event": _medians(w1_runs),
        "w1_runs": w1_runs,
        "w2_ms_per_turn": _medians(w2_runs),
        "w2_runs": w2_runs,
        "w4_ms_per_turn": _medians(w4_runs),
        "w4_runs": w4_runs,
        "w5_ms_per_turn": _medians(w5_runs),
        "w5_runs": w5_runs,
        "w3_abort_ms": await w3_abort(200) if driver == "faux" else None,  # W3 always paces with faux
    }


def _version() -> str:
    from importlib.metadata import version

    return version("pi-notebook")


def _fmt(value: Any, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _median_of(row: dict[str, Any], workload: str, unit: str) -> dict[str, float]:
    """A row's medians for one workload: from its runs when it lists them (the comparison scripts report the
    best of three as the headline value, we compare medians throughout), else its headline values."""
    runs = row.get(f"{workload}_runs")
    if isinstance(runs, dict) and all(runs.values()):
        return {size: statistics.median(values) for size, values in runs.items()}
    values = row.get(f"{workload}_{unit}")
    return values if isinstance(values, dict) else {}


def report(results: list[dict[str, Any]]) -> str:
    """A table of every row's medians, the three runs of each, our flatness, then each other row against ours
    with the same driver (faux rows against our faux row, scripted rows against our scripted row): ratio > 1
    means we are faster. Columns a row does not measure (W4, W5 for the other implementations) show "—"."""
    ours = {r.get("driver", "faux"): r for r in results if r["impl"].startswith("pi_notebook")}
    lines = [
        f"{'implementation (medians)':30} {'µs/ev@10k':>10} {'µs/ev@100k':>11} {'ms/turn@100':>12} {'ms/turn@2000':>13}"
        f" {'5tools@100':>11} {'5tools@1000':>12} {'session@100':>12} {'session@1000':>13}"
        f" {'abort p50':>10} {'abort p99':>10}",
    ]
    for r in results:
        if "error" in r and "w1_us_per_event" not in r:
            lines.append(f"{r['impl']:30} error: {r['error']}")
            continue
        w1, w2 = _median_of(r, "w1", "us_per_event"), _median_of(r, "w2", "ms_per_turn")
        w4, w5 = _median_of(r, "w4", "ms_per_turn"), _median_of(r, "w5", "ms_per_turn")
        w3 = r.get("w3_abort_ms") or {}
        name = f"{r['impl']} {r.get('version', '')}"
        lines.append(
            f"{name:30} {_fmt(w1.get('10000')):>10} {_fmt(w1.get('100000')):>11}"
            f" {_fmt(w2.get('100'), 3):>12} {_fmt(w2.get('2000'), 3):>13}"
            f" {_fmt(w4.get('100'), 3):>11} {_fmt(w4.get('1000'), 3):>12}"
            f" {_fmt(w5.get('100'), 3):>12} {_fmt(w5.get('1000'), 3):>13}"
            f" {_fmt(w3.get('p50'), 3):>10} {_fmt(w3.get('p99'), 3):>10}"
        )
    lines.append("")
    lines.append("runs (each size measured three times, interleaved with the other size):")
    for r in results:
        parts = []
        for workload, label in (("w1", "µs/ev"), ("w2", "ms/turn"), ("w4", "5tools"), ("w5", "session")):
            for size, values in (r.get(f"{workload}_runs") or {}).items():
                parts.append(f"{label}@{size} " + "/".join(f"{v:.3g}" for v in values))
        if parts:
            load = r.get("other_cpu_cores")
            lines.append(f"  {r['impl']}: " + "; ".join(parts) + (f" (other cpu: {load} cores)" if load else ""))
    lines.append("")
    for mine in ours.values():
        w1, w2 = _median_of(mine, "w1", "us_per_event"), _median_of(mine, "w2", "ms_per_turn")
        w4, w5 = _median_of(mine, "w4", "ms_per_turn"), _median_of(mine, "w5", "ms_per_turn")
        lines.append(
            f"flatness ({mine['impl']}): streaming 100k/10k = {w1['100000'] / w1['10000']:.2f}x, "
            f"turns 2000/100 = {w2['2000'] / w2['100']:.2f}x, 5 tools 1000/100 = {w4['1000'] / w4['100']:.2f}x, "
            f"session 1000/100 = {w5['1000'] / w5['100']:.2f}x (targets <= 1.2x)"
        )
    for other in results:
        if other["impl"].startswith("pi_notebook") or "w1_us_per_event" not in other:
            continue
        mine = ours.get(other.get("driver", "faux")) or next(iter(ours.values()))
        w1, w2, w3 = _median_of(mine, "w1", "us_per_event"), _median_of(mine, "w2", "ms_per_turn"), mine["w3_abort_ms"]
        ratios = []
        o1, o2 = _median_of(other, "w1", "us_per_event"), _median_of(other, "w2", "ms_per_turn")
        o3 = other.get("w3_abort_ms")
        for size in ("10000", "100000"):
            if o1.get(size):
                ratios.append(f"streaming@{int(size) // 1000}k {o1[size] / w1[size]:.1f}x")
        for size in ("100", "2000"):
            if o2.get(size):
                ratios.append(f"turns@{size} {o2[size] / w2[size]:.1f}x")
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
    parser.add_argument(
        "--scripted-only", action="store_true", help="only our scripted-driver row (W3 is then measured for it)"
    )
    args = parser.parse_args()
    if args.scripted_only:
        scripted = asyncio.run(run_ours(driver="scripted"))
        scripted["w3_abort_ms"] = asyncio.run(w3_abort(200))
        results = [scripted]
    else:
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
