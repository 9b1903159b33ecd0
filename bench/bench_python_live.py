"""The python tool's live output in the run widget (dummy comm): what it costs the agent's code, and what it sends.

    python bench/bench_python_live.py

L1  µs per ``print`` in the agent's code (100k prints of a short line), in a run with a widget (live output on)
    and in a run without one (no listener), and their ratio.
L2  Bytes the widget sends for 1 MB and for 10 MB written in 1,000-character pieces as fast as the code can: the
    panel's tail bounds each batch, so bytes depend on the batches sent (time), not on the output's size.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))


def session_for(code: str, marks: dict[str, float]) -> Any:
    from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
    from pi_notebook.kernel import python_tool
    from pi_notebook.session import AgentSession

    faux = FauxProvider(token_size=(1, 1))
    call = faux_tool_call("python", {"code": code}, id="bench")
    faux.set_responses([faux_assistant_message([call], "toolUse"), faux_assistant_message("done")])
    return AgentSession(
        model=faux.model,
        stream_fn=faux.stream,
        tools=[python_tool(namespace={"marks": marks, "time": time})],
        settings={"tools": {"approval": "auto"}, "compaction": {"enabled": False}},
    )


async def run_code(code: str, with_view: bool) -> dict[str, float]:
    from pi_notebook.notebook import Run

    marks: dict[str, float] = {}
    session = session_for(code, marks)
    run = Run(session, 1, lambda: session.prompt("go"), label="go", with_view=with_view)
    await run
    return marks


PRINTS = "marks['start'] = time.perf_counter()\nfor i in range(100_000):\n    print('line', i)\n"
PRINTS += "marks['end'] = time.perf_counter()"


async def per_print(with_view: bool, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        marks = await run_code(PRINTS, with_view)
        best = min(best, (marks["end"] - marks["start"]) / 100_000 * 1e6)
    return best


async def flood_bytes(megabytes: int) -> tuple[int, int, float]:
    import dummy_comm

    sent = dummy_comm.install()
    pieces = megabytes * 1000
    code = "import sys\nmarks['start'] = time.perf_counter()\n"
    code += f"for i in range({pieces}):\n    sys.stdout.write('x' * 999 + '\\n')\nmarks['end'] = time.perf_counter()"
    marks = await run_code(code, with_view=True)
    messages = dummy_comm.custom_messages(sent)
    live = [op for m in messages for op in m.get("ops", []) if op["op"] == "tool_append"]
    return dummy_comm.custom_bytes(sent), len(live), marks["end"] - marks["start"]


async def main() -> None:
    import dummy_comm

    dummy_comm.install()
    await per_print(True, repeats=1)  # warm up
    with_view, without = float("inf"), float("inf")
    for _ in range(3):  # alternated, best of each: the machine is shared
        with_view = min(with_view, await per_print(True, repeats=1))
        without = min(without, await per_print(False, repeats=1))
    ratio = with_view / without
    print(f"L1  µs per print: {with_view:.2f} with the live view, {without:.2f} without; ratio {ratio:.2f}")
    for megabytes in (1, 10):
        sent, batches, seconds = await flood_bytes(megabytes)
        print(
            f"L2  {megabytes:>2} MB written in {seconds:.2f} s: {sent:,} bytes sent over the comm in {batches} live "
            f"batches ({sent / (megabytes * 1_000_000):.3f} of the output)"
        )


if __name__ == "__main__":
    asyncio.run(main())
