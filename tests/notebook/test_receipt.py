"""A run's receipt (``pi_notebook.notebook._receipt``): cells changed, run, interrupted and never run, files
written and edited, bash commands killed, python code interrupted, and the cost so far; no lines for a run that
changed nothing and was not stopped."""

from __future__ import annotations

from typing import Any

from pi_notebook.agent import AgentToolResult, ToolExecutionEndEvent, ToolExecutionStartEvent
from pi_notebook.ai.messages import AssistantMessage, Cost, Usage
from pi_notebook.ai.providers.faux import faux_assistant_message, faux_tool_call
from pi_notebook.kernel import CellChanges
from pi_notebook.notebook._receipt import build_receipt


def tool(call: str, name: str, args: dict[str, Any], text: str, *, error: bool = False) -> list[Any]:
    end = ToolExecutionEndEvent(call, name, AgentToolResult(content=text), error)
    return [ToolExecutionStartEvent(call, name, args), end]


def reply(*calls: Any, cost: float = 0.0) -> AssistantMessage:
    message = faux_assistant_message(list(calls), "toolUse")
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
        "cost $0.0133 (in 200 tok, out 40 tok)",
    ]
    assert receipt.as_dict()["cells_never_run"] == ["c"]


def test_a_run_that_changed_nothing_has_no_receipt_lines_unless_it_was_stopped() -> None:
    quiet = build_receipt([], [reply(cost=0.5)], CellChanges(), aborted=False)
    assert quiet.lines() == [] and quiet.cost_usd == 0.5
    stopped = build_receipt([], [reply(cost=0.5)], None, aborted=True)
    assert stopped.lines() == ["cost $0.5000 (in 100 tok, out 20 tok)"]
    assert stopped.cells_never_run == []  # no cell tools: nothing to say about cells
