"""A run's receipt (``pi_notebook.notebook._receipt``): cells changed, run, interrupted and never run, files
written and edited, bash commands killed, python code interrupted, and the cost so far; no lines for a run that
changed nothing and was not stopped."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.agent import AgentToolResult, ToolExecutionEndEvent, ToolExecutionStartEvent
from pi_notebook.ai import Model
from pi_notebook.ai.messages import AssistantMessage, Cost, Usage
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_notebook.kernel import CellChanges
from pi_notebook.notebook import Run
from pi_notebook.notebook._receipt import build_receipt
from pi_notebook.session import AgentSession, Settings
from pi_notebook.testing import FaultServer, Reply
from pi_notebook.tools import write_tool


def tool(call: str, name: str, args: dict[str, Any], text: str, *, error: bool = False) -> list[Any]:
    end = ToolExecutionEndEvent(call, name, AgentToolResult(content=text), error)
    return [ToolExecutionStartEvent(call, name, args), end]


def reply(*calls: Any, cost: float = 0.0) -> AssistantMessage:
    return reply_of(faux_assistant_message(list(calls), "toolUse"), cost)


def reply_of(message: AssistantMessage, cost: float = 0.0) -> AssistantMessage:
    message.usage = Usage(input=100, output=20, cost=Cost(total=cost))
    return message


def test_a_stopped_run_lists_what_it_changed_and_what_the_stop_cut_short() -> None:
    cells = CellChanges()
    cells.record("i", "inserted", "new-1")
    cells.record("e", "edited", "show")
    cells.record("e2", "edited", "show")
    cells.record("d", "deleted", "old")
    cells.record("r1", "ran", "a")
    cells.record("r2", "interrupted", "b", "Stopped by the user")
    events = [
        *tool("w", "write", {"path": "out.csv", "content": "x"}, "Successfully wrote 1 bytes to out.csv"),
        *tool("w2", "write", {"path": "bad.csv", "content": "x"}, "EACCES", error=True),
        *tool("ed", "edit", {"path": "src/app.py", "edits": []}, "Successfully replaced 1 block(s) in src/app.py."),
        *tool("b", "bash", {"command": "sleep 100"}, "Command aborted", error=True),
        *tool("b2", "bash", {"command": "exit 3"}, "Command exited with code 3", error=True),
        *tool("p", "python", {"code": "while True: pass"}, "KeyboardInterrupt\n\nInterrupted: Stopped", error=True),
    ]
    runs = [faux_tool_call("cell_run", {"cell_id": name}, id=f"r{n}") for n, name in enumerate("abc", 1)]
    messages = [reply(*runs, cost=0.0123), reply(cost=0.001)]
    receipt = build_receipt(events, messages, cells, aborted=True)
    assert receipt.cells_inserted == ["new-1"] and receipt.cells_edited == ["show"] and receipt.cells_deleted == ["old"]
    assert receipt.cells_run == ["a"] and receipt.cells_interrupted == ["b"] and receipt.cells_never_run == ["c"]
    assert receipt.files_written == ["out.csv"] and receipt.files_edited == ["src/app.py"]
    assert receipt.commands_killed == ["sleep 100"] and receipt.python_interrupted == 1
    assert (receipt.input_tokens, receipt.output_tokens) == (200, 40)
    assert receipt.lines() == [
        "cells inserted `new-1`; edited `show`; deleted `old`; ran `a`",
        "stopped: cells interrupted `b` (Stopped by the user); never ran `c`",
        "files written `out.csv`; edited `src/app.py`",
        "stopped: killed `sleep 100`; python code interrupted (1)",
        "spent in 200 tok · out 40 tok · $0.0133",
    ]
    assert receipt.as_dict()["cells_never_run"] == ["c"]


def test_a_run_that_changed_nothing_has_no_receipt_lines_unless_it_was_stopped() -> None:
    quiet = build_receipt([], [reply(cost=0.5)], CellChanges(), aborted=False)
    assert quiet.lines() == [] and quiet.cost_usd == 0.5
    stopped = build_receipt([], [reply(cost=0.5)], None, aborted=True)
    assert stopped.lines() == ["spent in 100 tok · out 20 tok · $0.5000"]
    assert stopped.cells_never_run == []  # no cell tools: nothing to say about cells


# -- the receipt and the usage line say the same (issue 37 items 10 and 13) ---------------------------------------


@pytest.fixture
def widgets(dummy_comm: list[Any]) -> None:
    """Widgets on conftest's dummy comm."""


def spent_of(run: Run) -> tuple[str, str]:
    """What the run's receipt and its widget's usage line say it spent (the line without its turns)."""
    assert run.receipt is not None and run.view is not None
    receipt = run.receipt.lines()[-1].removeprefix("spent ")
    usage = run.view.transcript.usage
    assert usage == run.usage_line()
    return receipt, usage.split(" · ", 1)[1]


async def test_the_receipt_counts_the_input_the_usage_line_counts(widgets: None, tmp_path: Path) -> None:
    """Item 10: the usage line counted every input token (cached ones too, as the input budget does), the receipt
    only the uncached ones: 5204 against 2222 for one run."""
    faux = FauxProvider()  # its prompt cache reports the repeated prefix as cached on the second request
    call = faux_tool_call("write", {"path": "out.txt", "content": "x" * 2000})
    faux.set_responses([faux_assistant_message([call], "toolUse"), faux_assistant_message("written")])
    session = AgentSession(model=faux.model, stream_fn=faux.stream, tools=[write_tool(tmp_path)])
    run = Run(session, 1, lambda: session.prompt("write it " + "y" * 4000), label="write it")
    await run
    receipt, usage = spent_of(run)
    assert receipt == usage
    assert run.receipt is not None and run.receipt.cache_read_tokens > 0  # the tokens the receipt left out
    assert run.receipt.input_tokens == session.budget.input_tokens
    assert re.fullmatch(r"in \d+ tok \(\d+ cached\) · out \d+ tok · \$0\.0000", usage), usage


async def test_estimated_usage_and_an_unknown_cost_say_so(widgets: None, server: FaultServer) -> None:
    """Item 13: a server that reports no usage (llama-cpp-python) gets estimated counts, which read as measured;
    a model without prices cost "$0.0000", which reads as free."""
    reply = Reply.text("a short answer")
    server.script([dataclasses.replace(reply, send_usage=False)])
    model = Model(id="smollm2", api="openai-completions", provider="openai-compatible", base_url=server.openai_base_url)
    session = AgentSession(model=model, settings=Settings(budget={"max_cost_usd": 0.5}))
    run = Run(session, 1, lambda: session.prompt("hello"), label="hello")
    await run
    assert run.view is not None
    usage = run.view.transcript.usage
    assert re.fullmatch(
        r"turns 1 · in ~\d+ tok · out ~\d+ tok · cost unknown \(no prices: the \$0\.50 budget cannot apply\) · "
        r"estimated",
        usage,
    ), usage
    receipt = build_receipt(run.events, run.messages, None, aborted=True, model=model).lines()[-1]
    assert re.fullmatch(
        r"spent in ~\d+ tok · out ~\d+ tok · cost unknown \(no prices\) · estimated",
        receipt,
    ), receipt
    free = build_receipt([], [reply_of(faux_assistant_message("hi"))], None, aborted=True, model=FauxProvider().model)
    assert free.lines() == ["spent in 100 tok · out 20 tok · $0.0000"]  # the offline model is free
