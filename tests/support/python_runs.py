"""A run whose faux model calls the ``python`` tool, in a real kernel (``control_frontend.Frontend``): the setup
cell, starting the run and waiting for the code, awaiting its report, and reading the run widget's operations off
iopub. Shared by the kernel tests of the python tool's stop paths."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from control_frontend import Frontend

SETUP = """
import json, sys, time
from pi_notebook.notebook import configure, get_session
from pi_notebook.kernel import add_python_listener, python_tool
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
globals().get("remove_listener", lambda: None)()
real_stdout = sys.stdout
marks, ends = {{}}, []
def on_python(event):
    marks.setdefault(event.kind, time.monotonic())
    if event.kind in ("start", "stuck"):
        print(f"python {{event.kind}}", file=real_stdout, flush=True)
remove_listener = add_python_listener(on_python)
faux = FauxProvider(token_size=(1, 1))
call = faux_tool_call("python", {arguments}, id="call-1")
faux.set_responses([faux_assistant_message([call], "toolUse"), faux_assistant_message("after the tool")])
configure(model=faux.model, stream_fn=faux.stream, tools=[python_tool()], settings={settings})
def on_event(event):
    if event.type == "tool_execution_end":
        ends.append({{"text": event.result.content[0].text, "is_error": event.is_error}})
    elif event.type == "agent_settled":
        marks["settled"] = time.monotonic()
get_session().subscribe(on_event)
"""


REPORT = """
report = await run
print("REPORT " + json.dumps({"ends": ends, "marks": marks, "aborted": run.aborted, "labels": run.labels,
                              "last": run.messages[-1].content[0].text if run.messages[-1].content else ""}))
"""


def silent_run(until: Path) -> str:
    """A cell that loads pi_notebook and starts a run whose python tool says nothing until the file ``until``
    exists (for idle cullers: the run works, the kernel publishes nothing of its own, for as long as the test needs;
    the kernel and the test share the machine's files)."""
    return SILENT_RUN.format(flag=str(until))


SILENT_RUN = """
%load_ext pi_notebook
from pi_notebook.notebook import configure
from pi_notebook.kernel import python_tool
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
faux = FauxProvider(token_size=(1, 1))
code = "import os, time\\nwhile not os.path.exists({flag!r}):\\n    time.sleep(0.1)\\nprint('slept')"
call = faux_tool_call("python", {{"code": code}})
faux.set_responses([faux_assistant_message([call], "toolUse"), faux_assistant_message("done")])
configure(model=faux.model, stream_fn=faux.stream, tools=[python_tool()], settings={{"tools": {{"approval": "auto"}}}})
run = %pi sleep on it
"""

NO_RETRY = {"retry": {"enabled": False}, "compaction": {"enabled": False}, "tools": {"approval": "auto"}}


def widget_ops(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The run widget's operations in an iopub message (none for other messages)."""
    if message["msg_type"] != "comm_msg":
        return []
    data = message["content"]["data"]
    content = data.get("content") if data.get("method") == "custom" else None
    return list(content.get("ops", [])) if isinstance(content, dict) else []


def wait_for_op(frontend: Frontend, predicate: Any, what: str) -> float:
    """Wait for a widget operation matching ``predicate``; returns when (monotonic) it arrived."""
    frontend.wait(lambda m: any(predicate(op) for op in widget_ops(m)), what=what)
    return time.monotonic()


def start(
    frontend: Frontend,
    code: str,
    *,
    timeout: float | None = None,
    settings: Any = None,
    cell: str = "run = %pi go",
    ready: str | None = None,
) -> str:
    """Configure the faux model to call ``python`` with ``code``, start a run with ``cell``, wait until the
    code runs — and, with ``ready``, until the code's live output shows ``ready`` (a test that stops the code
    must not stop it before it got there); returns the cell's message id."""
    arguments: dict[str, Any] = {"code": code}
    if timeout is not None:
        arguments["timeout"] = timeout
    frontend.run(SETUP.format(arguments=repr(arguments), settings=repr({**NO_RETRY, **(settings or {})})))
    msg_id = frontend.execute(cell)
    frontend.wait(lambda m: stream_has(m, "python start"), what="the agent's code started")
    if ready is not None:
        wait_for_op(frontend, lambda op: op["op"] == "tool_append" and ready in op["text"], f"the code's {ready!r}")
    return msg_id


def stream_has(message: dict[str, Any], needle: str) -> bool:
    return message["msg_type"] == "stream" and needle in message["content"]["text"]


def finish(frontend: Frontend) -> dict[str, Any]:
    """Await the run (it must settle) and return what the kernel recorded; then check that a cell runs."""
    msg_id = frontend.execute(REPORT)
    frontend.finished(msg_id)
    lines = [
        m["content"]["text"]
        for m in frontend.seen
        if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == msg_id
    ]
    report: dict[str, Any] = json.loads("".join(lines).split("REPORT ", 1)[1])
    assert "next cell ok 4" in frontend.run("print('next cell ok', 2 + 2)")
    assert frontend.run("import signal; print(signal.getsignal(signal.SIGINT))").strip() in (
        "Handlers.SIG_IGN",
        "<built-in function default_int_handler>",
    )  # our handler is gone: ipykernel's is back
    return report


def tool_text(report: dict[str, Any]) -> str:
    [end] = report["ends"]
    assert end["is_error"] is True
    return str(end["text"])
