"""The ``python`` tool in a real kernel (jupyter_client): the agent's code runs on the user's namespace, and every
stop path ends a busy loop and a ``time.sleep(1000)`` — the control comm's abort over a real subshell, the
kernel's interrupt, the call's timeout, ``timeouts.tool_ms``, ``timeouts.turn_ms`` and the wall-time budget —
with the tool result, the run's ``agent_settled`` and the time to it, and the next cell running normally.

Times are measured on ``time.monotonic()`` on both sides (CLOCK_MONOTONIC, shared by the processes of one
machine); they are printed, not asserted (``bench/bench_python_tool.py`` reports percentiles)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from control_frontend import Frontend
from kernel_harness import Kernel
from python_runs import (
    NO_RETRY,
    finish,
    start,
    stream_has,
    tool_text,
    wait_for_op,
    widget_ops,
)

pytestmark = pytest.mark.timeout(180)

BUSY = "print('working')\nn = 0\nwhile True:\n    n += 1"
SLEEP = "import time\nprint('working')\ntime.sleep(1000)"
CODES = {"busy loop": BUSY, "sleep": SLEEP}


def settle_ms(report: dict[str, Any], since: float) -> float:
    return float(report["marks"]["settled"] - since) * 1000


def measured(record_property: Any, name: str, ms: float, what: str) -> None:
    """Report a time (``-s`` shows it; junit XML keeps it); never asserted (see bench/bench_python_tool.py)."""
    record_property(name, round(ms, 1))
    print(f"{name}: {ms:.1f} ms {what}")  # noqa: T201


def test_a_variable_the_agent_makes_is_used_by_the_next_cell(frontend: Frontend) -> None:
    start(frontend, "prices = [3, 1, 2]\ntotal = sum(prices)\nprint('sum', total)\ntotal * 10")
    report = finish(frontend)
    [end] = report["ends"]
    assert end == {"text": "sum 6\nOut: 60", "is_error": False}
    assert report["aborted"] is False
    assert report["last"] == "after the tool"
    assert "max 3 60" in frontend.run("print('max', max(prices), _)")  # the agent's variables and `_`


@pytest.mark.parametrize("kind", CODES)
def test_control_comm_abort_over_a_subshell_stops_the_code_and_aborts_the_run(
    frontend: Frontend, kind: str, record_property: Any
) -> None:
    subshell = frontend.create_subshell()
    comm_id = frontend.open(subshell)
    frontend.state(comm_id)
    start(frontend, CODES[kind], ready="working")
    sent = frontend.send(comm_id, {"action": "abort"}, subshell)
    report = finish(frontend)
    text = tool_text(report)
    assert text.startswith("working\nTraceback (most recent call last):\n  Agent code [")
    assert text.endswith("\nKeyboardInterrupt\n\nInterrupted: Stopped by the user")
    assert report["aborted"] is True
    after = report["labels"][report["labels"].index("agent_settled") + 1 :]
    assert after == ["receipt", "receipt"]  # the receipt ends a stopped run's log: the interrupted code, the cost
    measured(
        record_property, f"abort_to_settled[{kind}]", settle_ms(report, sent), "from the comm message to agent_settled"
    )


def test_an_abort_for_another_run_leaves_the_code_running(frontend: Frontend) -> None:
    subshell = frontend.create_subshell()
    comm_id = frontend.open(subshell)
    frontend.state(comm_id)
    start(frontend, "import time\ntime.sleep(1.5)\nprint('slept')")
    frontend.send(comm_id, {"action": "abort", "run": 999}, subshell)
    report = finish(frontend)
    assert report["ends"] == [{"text": "slept", "is_error": False}]
    assert report["aborted"] is False


@pytest.mark.parametrize("kind", CODES)
def test_the_kernel_interrupt_stops_the_code_and_aborts_the_run(
    kernel: Kernel, frontend: Frontend, kind: str, record_property: Any
) -> None:
    start(frontend, CODES[kind], ready="working")
    sent = time.monotonic()
    kernel.interrupt()
    report = finish(frontend)
    text = tool_text(report)
    assert "KeyboardInterrupt\n\nInterrupted by the kernel's interrupt; the run is aborted" in text
    assert report["aborted"] is True
    measured(
        record_property, f"interrupt_to_settled[{kind}]", settle_ms(report, sent), "from the interrupt to agent_settled"
    )


@pytest.mark.parametrize("kind", CODES)
def test_the_calls_timeout_ends_the_code_and_the_run_goes_on(
    frontend: Frontend, kind: str, record_property: Any
) -> None:
    start(frontend, CODES[kind], timeout=0.5)
    report = finish(frontend)
    text = tool_text(report)
    assert text.endswith("KeyboardInterrupt\n\nPython code timed out after 0.5 seconds")
    assert report["aborted"] is False
    assert report["last"] == "after the tool"  # the model got the timeout and answered
    late = (report["marks"]["end"] - report["marks"]["start"] - 0.5) * 1000
    measured(record_property, f"timeout_to_code_end[{kind}]", late, "from the call's deadline to the code's end")
    deadline = report["marks"]["start"] + 0.5
    measured(record_property, f"timeout_to_settled[{kind}]", settle_ms(report, deadline), "(the model answers between)")


@pytest.mark.parametrize("kind", CODES)
def test_the_session_tool_timeout_ends_the_code_and_the_run_goes_on(
    frontend: Frontend, kind: str, record_property: Any
) -> None:
    start(frontend, CODES[kind], settings={"timeouts": {"tool_ms": 500}})
    report = finish(frontend)
    text = tool_text(report)
    assert text.startswith("working\nTraceback")
    assert text.endswith("KeyboardInterrupt\n\nInterrupted: Tool python timed out after 0.5 seconds")
    assert report["aborted"] is False
    assert report["last"] == "after the tool"
    late = (report["marks"]["end"] - report["marks"]["start"] - 0.5) * 1000
    measured(
        record_property, f"tool_ms_to_code_end[{kind}]", late, "after the code's start + tool_ms (armed a bit earlier)"
    )


@pytest.mark.parametrize("kind", CODES)
def test_the_wall_time_budget_ends_the_code_and_aborts_the_run(
    frontend: Frontend, kind: str, record_property: Any
) -> None:
    start(frontend, CODES[kind], settings={"budget": {"wall_time_ms": 1000}})
    report = finish(frontend)
    text = tool_text(report)
    assert "KeyboardInterrupt\n\nInterrupted: Run budget exceeded (wall_time): 1000 ms used, limit 1000 ms" in text
    assert report["aborted"] is True
    assert "budget_exceeded" in report["labels"]
    assert report["last"] == ""  # the aborted reply: no further model request
    ran = (report["marks"]["end"] - report["marks"]["start"]) * 1000
    measured(record_property, f"wall_budget_code_ran[{kind}]", ran, "the code ran (the run's budget: 1000 ms)")


def test_the_turn_timeout_ends_the_code_and_aborts_the_run(frontend: Frontend) -> None:
    start(frontend, SLEEP, settings={"timeouts": {"turn_ms": 800}})
    report = finish(frontend)
    assert "Interrupted: Turn timed out: 800 ms used, limit 800 ms" in tool_text(report)
    assert report["aborted"] is True
    assert "budget_exceeded" in report["labels"]


STUCK_TEXT = "waiting for the code to return to Python"
UNINTERRUPTIBLE = """
import ctypes, signal, time
libc = ctypes.CDLL(None)
signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())  # a C call that no signal ends
print('working')  # the test stops the run once it sees this: signals are blocked by then
try:
    libc.sleep(2)
finally:
    returned = time.monotonic()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, signal.valid_signals())
print('not reached')
"""


def test_prints_and_rich_outputs_reach_the_widget_while_the_code_runs(frontend: Frontend, tmp_path: Any) -> None:
    """The code waits for a file the test makes only once its print and displays came over the widget's comm."""
    flag = tmp_path / "go-on"
    code = (
        "from IPython.display import HTML, Image, display\nimport pathlib, time\nprint('live line')\n"
        "display(HTML('<table><tr><td>cell</td></tr></table>'))\n"
        "display(Image(data=bytes.fromhex('89504e470d0a1a0a'), format='png'))\n"
        f"while not pathlib.Path({str(flag)!r}).exists():\n    time.sleep(0.01)\nprint('after')"
    )
    start(frontend, code)
    wait_for_op(frontend, lambda op: op["op"] == "tool_append" and "live line" in op["text"], "the live print")
    wait_for_op(frontend, lambda op: op["op"] == "tool_display" and op["mime"] == "text/html", "the HTML display")
    wait_for_op(frontend, lambda op: op["op"] == "tool_display" and op["mime"] == "image/png", "the image")
    assert not [op for m in frontend.seen for op in widget_ops(m) if op["op"] == "tool_end"]  # still running
    flag.touch()
    report = finish(frontend)
    [end] = report["ends"]
    assert end["is_error"] is False and end["text"].startswith("live line\n")
    assert end["text"].endswith("after")
    [tool_end] = [op for m in frontend.seen for op in widget_ops(m) if op["op"] == "tool_end"]
    assert tool_end["text"] == end["text"]  # the result replaces the live text, as for any tool


CANARY = "sk-canary-live-0123456789abcdef"


def test_a_key_the_agents_code_prints_never_reaches_the_widget_even_cut_between_two_writes(
    frontend: Frontend, tmp_path: Any
) -> None:
    """The code prints a provider key whole, then its first 7 characters, waits until that write was sent over the
    comm, then the rest: every live operation is redacted, as the result is (issue 30 item 5)."""
    sent, rest_sent = tmp_path / "first-piece-sent", tmp_path / "second-piece-sent"
    code = (
        "import pathlib, sys, time\nkey = users_key\nprint('whole', key)\n"
        "sys.stdout.write('cut ' + key[:7]); sys.stdout.flush()\n"
        f"while not pathlib.Path({str(sent)!r}).exists():\n    time.sleep(0.01)\n"
        "sys.stdout.write(key[7:] + ' done\\n'); sys.stdout.flush()\n"
        f"while not pathlib.Path({str(rest_sent)!r}).exists():\n    time.sleep(0.01)\n"
    )
    # the key is in the environment (so the session knows it) and in a variable of the user's: the agent's code
    # does not see the environment's keys (they are hidden while it runs), but it can print a variable
    frontend.run(f"import os\nos.environ['OPENAI_API_KEY'] = users_key = {CANARY!r}")
    try:
        start(frontend, code)
        wait_for_op(frontend, lambda op: op["op"] == "tool_append" and "cut" in op["text"], "the first write")
        sent.touch()
        wait_for_op(frontend, lambda op: op["op"] == "tool_append" and "done" in op["text"], "the second write")
        rest_sent.touch()
        finish(frontend)
    finally:
        frontend.run("_ = os.environ.pop('OPENAI_API_KEY', None)")
    live = [op["text"] for m in frontend.seen for op in widget_ops(m) if op["op"] == "tool_append"]
    assert "".join(live) == "whole ***\ncut *** done\n", live  # sent while the code ran, each key redacted
    outputs = [m["content"] for m in frontend.seen if m["msg_type"] != "execute_input"]  # (the test's code has it)
    for piece in (CANARY, CANARY[:7], CANARY[7:]):
        assert piece not in json.dumps(outputs)  # no comm message or output holds the key or either piece


def test_code_stuck_in_a_c_call_is_reported_and_the_run_settles_only_after_it_returns(
    frontend: Frontend, record_property: Any
) -> None:
    subshell = frontend.create_subshell()
    comm_id = frontend.open(subshell)
    frontend.state(comm_id)
    start(frontend, UNINTERRUPTIBLE, ready="working")
    sent = frontend.send(comm_id, {"action": "abort"}, subshell)
    frontend.wait(lambda m: stream_has(m, "python stuck"), what="the stuck event")
    noted = wait_for_op(
        frontend, lambda op: op["op"] == "tool_note" and op["text"] == STUCK_TEXT, "the widget's stuck note"
    )
    frontend.state(comm_id, note=STUCK_TEXT, state="running tool")  # the status bar's too, while the loop is blocked
    status_noted = time.monotonic()
    cleared = wait_for_op(frontend, lambda op: op["op"] == "tool_note" and op["text"] == "", "the note cleared")
    frontend.state(comm_id, note="", state="aborted")
    report = finish(frontend)
    returned = float(frontend.run("print(returned)"))
    marks = report["marks"]
    assert noted < returned < cleared  # the widget showed it while the C call still ran, until it returned
    assert status_noted < returned
    assert marks["stuck"] < returned  # reported while the C call still ran
    assert marks["settled"] > returned  # never settled while the code ran
    assert "Interrupted: Stopped by the user" in tool_text(report)
    assert "not reached" not in tool_text(report)
    assert report["aborted"] is True
    measured(record_property, "abort_to_stuck", (marks["stuck"] - sent) * 1000, "from the abort to the stuck event")
    measured(record_property, "return_to_settled", settle_ms(report, returned), "from the C call's return")


def test_the_kernel_interrupt_while_a_cell_awaits_the_run_ends_the_code_the_cell_and_the_run(
    kernel: Kernel, frontend: Frontend
) -> None:
    """The previous SIGINT handler (ipykernel's, which cancels the awaiting cell) is still called."""
    awaiting = start(frontend, SLEEP, cell="run = %pi go\nawait run", ready="working")
    kernel.interrupt()
    errors = []
    while True:  # Frontend.wait fails on any error output; this cell's error is expected
        message = frontend.client.get_iopub_msg(timeout=30)
        if message["parent_header"].get("msg_id") != awaiting:
            frontend.seen.append(message)
            continue
        if message["msg_type"] == "error":
            errors.append(message["content"]["ename"])
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            break
    assert errors in (["KeyboardInterrupt"], ["CancelledError"])  # the awaiting cell was interrupted
    report = finish(frontend)
    assert "Interrupted by the kernel's interrupt; the run is aborted" in tool_text(report)
    assert report["aborted"] is True


FIGURES = """
%matplotlib inline
from pi_notebook.notebook import configure
from pi_notebook.kernel import python_tool
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
drawn = "import matplotlib.pyplot as plt\\nplt.figure()\\nplt.plot([3, 2, 1])\\nplt.title('drawn, not shown')"
shown = "import matplotlib.pyplot as plt\\nplt.plot([1, 2, 3])\\nplt.show()"
calls = [faux_tool_call("python", {"code": code}, id=f"fig-{i}") for i, code in enumerate([drawn, shown])]
faux = FauxProvider(token_size=(1, 1))
faux.set_responses([faux_assistant_message([call], "toolUse") for call in calls] + [faux_assistant_message("done")])
configure(model=faux.model, stream_fn=faux.stream, tools=[python_tool()], settings=SETTINGS)
"""
FIGURES_SEEN = """
import json, matplotlib.pyplot as plt
results = [m for m in run.messages if m.role == "toolResult"]
print("FIGURES " + json.dumps({"outputs": [[sorted(o["data"]) for o in m.details["outputs"]] for m in results],
                               "texts": [m.content[0].text for m in results], "open": plt.get_fignums()}))
"""


def test_figures_the_agents_code_draws_show_in_its_panel_as_a_cells_would(kernel: Kernel) -> None:
    # With the inline backend a cell's figures show when it ends, shown or not; the agent's code is run as a cell
    # would be, so a figure it only draws shows in its tool call (panel and result), not under the user's cell.
    kernel.run(FIGURES.replace("SETTINGS", repr(NO_RETRY)))
    awaited = kernel.run("run = %pi plot\nawait run")
    assert not [o for o in awaited.outputs if "image/png" in o["content"].get("data", {})], awaited.outputs
    seen = json.loads(kernel.run(FIGURES_SEEN).text.split("FIGURES ", 1)[1])
    assert seen["outputs"] == [[["image/png", "text/plain"]], [["image/png", "text/plain"]]]
    assert all(text.startswith("<Figure size") for text in seen["texts"]), seen["texts"]
    assert seen["open"] == []  # closed, as the inline backend closes a cell's figures


def test_what_the_kernels_own_threads_write_meanwhile_is_not_the_codes_output(
    frontend: Frontend, tmp_path: Any
) -> None:
    """A reloaded page's widget manager sends messages for comms the kernel no longer has: the kernel's shell
    channel thread logs "No such comm" while it routes them, on stderr, while the agent's code runs (issue 37 item
    7). Neither that nor a thread of the user's started before the code is the code's output."""
    flag = tmp_path / "go-on"
    code = "import pathlib, time\nprint('waiting')\n"
    code += f"while not pathlib.Path({str(flag)!r}).exists():\n    time.sleep(0.01)"
    frontend.run(
        "import sys, threading\nchatty = threading.Event()\n"
        "def chatter():\n    chatty.wait()\n    print('user thread', file=sys.stderr, flush=True)\n"
        "threading.Thread(target=chatter, daemon=True).start()"
    )
    start(frontend, code + "\nchatty.set()\ntime.sleep(0.2)\nprint('done')", ready="waiting")
    frontend.shell("comm_msg", {"comm_id": "no-such-comm-0001", "data": {}})  # routed, and logged, meanwhile
    probe = frontend.shell("kernel_info_request", {}, frontend.create_subshell())  # routed after it
    frontend.wait(lambda m: m["parent_header"].get("msg_id") == probe, what="the shell channel thread went on")
    flag.touch()
    report = finish(frontend)
    [end] = report["ends"]
    assert end == {"text": "waiting\ndone", "is_error": False}
