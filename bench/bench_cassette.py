"""Cassette replay speed against the live run it recorded, over real loopback HTTP (the fault server).

    python bench/bench_cassette.py

One session operation per run: a prompt, a streamed tool call, the tool's result, then a streamed text reply of
N deltas (OpenAI wire format). Live, the fault server writes one SSE event every ``pace`` ms (0 = as fast as it
can, far faster than any model; 20 ms is a model streaming 50 tokens/s; 2 ms a very fast one); the run is recorded
to a cassette. Then the same operation is replayed from the cassette (timing ``fast``) with the server stopped and
no key. Printed per workload: session events per second live and in replay, the ratio (target: replay >= 10x
faster), and whether the event labels (Pi's trace notation, ``message_update`` left out) are the same. Replay is
best of 3.

Reading the 0 ms rows: there the live run is bound by the same Python work replay does (SSE parsing, the agent
loop, listeners), so replay can only save the socket I/O. And a burst makes the live labels a race: a label
reads the partial message when its event is delivered (``message_start:assistant:pending``), and a client that
falls behind a burst sees the message already finished; replay delivers each recorded chunk with a turn of the
event loop in between, as a paced stream does, so its labels are those of a paced live run.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from pi_notebook.agent import AgentTool, AgentToolResult
from pi_notebook.ai import Cassette, Model, close_connections
from pi_notebook.session import AgentSession, Settings
from pi_notebook.testing import EventRecorder, FaultServer, Reply

KEY_VARIABLE = "OPENAI_API_KEY"


async def echo(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    return AgentToolResult(content=f"echo: {args.get('text')}")


TOOLS = [AgentTool(name="echo", description="echo", parameters={"type": "object"}, execute=echo)]


async def run_once(model: Model) -> tuple[float, EventRecorder]:
    session = AgentSession(model=model, tools=TOOLS, settings=Settings(compaction={"enabled": False}))
    recorder = EventRecorder("session")
    session.subscribe(recorder)
    started = time.perf_counter()
    await session.prompt("go")
    elapsed = time.perf_counter() - started
    assert recorder.labels[-1] == "agent_settled:aborted=false", recorder.labels[-3:]
    return elapsed, recorder


async def workload(deltas: int, pace_ms: float, folder: Path) -> dict[str, Any]:
    path = folder / f"bench-{deltas}-{pace_ms}.jsonl"
    os.environ[KEY_VARIABLE] = "sk-bench-recording"
    pace = pace_ms / 1000
    with FaultServer() as server:
        server.script(
            [
                Reply.tool_call("echo", {"text": "x" * 40}, chunk_chars=4, delay_s=pace),
                Reply.text("abcd" * deltas, chunk_chars=4, delay_s=pace),
            ]
        )
        model = Model(id="bench", api="openai-completions", provider="openai", base_url=server.openai_base_url)
        with Cassette(path, mode="all"):
            live_s, live = await run_once(model)
        await close_connections()
    del os.environ[KEY_VARIABLE]
    replays = []
    for _ in range(3):
        with Cassette(path, mode="none") as cassette:
            replays.append(await run_once(model))
        assert cassette.unplayed == 0
    replay_s, replayed = min(replays, key=lambda item: item[0])
    events = len(live.events)
    return {
        "deltas": deltas,
        "pace": pace_ms,
        "live": events / live_s,
        "replay": len(replayed.events) / replay_s,
        "same_labels": replayed.labels == live.labels and len(replayed.events) == events,
        "events": events,
    }


async def main() -> None:
    print(f"{'text deltas':>11} {'server pace':>11} {'events':>7} {'live ev/s':>10} {'replay ev/s':>12} "
          f"{'ratio':>7} {'same labels':>11}")  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        for deltas, pace in ((200, 20.0), (500, 2.0), (2000, 2.0), (2000, 0.0), (10000, 0.0)):
            row = await workload(deltas, pace, Path(folder))
            ratio = row["replay"] / row["live"]
            print(
                f"{row['deltas']:>11} {row['pace']:>9.0f}ms {row['events']:>7} {row['live']:>10.0f} "
                f"{row['replay']:>12.0f} {ratio:>6.1f}x {row['same_labels']!s:>11}"
            )


if __name__ == "__main__":
    asyncio.run(main())
