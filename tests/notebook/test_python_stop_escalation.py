"""Issue 30 items 9 and 11, in a real kernel (the harness of ``test_python_tool_kernel.py``): Stop ends agent code
that swallows the interrupt — a bare ``except:`` in a retry loop, ``signal.signal(SIGINT, SIG_IGN)``, a blocked
signal mask — by interrupting it again, harder; the tool result says so, the run settles aborted, and the next cell
finds ipykernel's SIGINT handler and an empty signal mask. Code that no interrupt can end (a C call with every
signal blocked) is reported in the widget and the status bar as not stopping, with "Restart the kernel", until it
returns. Processes the code started (a child, and one in a session of its own) are killed by the Stop."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psutil
import pytest
from control_frontend import Frontend
from kernel_harness import Kernel

from pi_notebook.kernel.python_tool import UNSTOPPABLE_TEXT

pytestmark = pytest.mark.timeout(180)

# The faux model calls ``python`` with the code; what the kernel records (as in test_python_tool_kernel.py).

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
NO_RETRY = {"retry": {"enabled": False}, "compaction": {"enabled": False}, "tools": {"approval": "auto"}}


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    kernel = Kernel()
    kernel.run("%load_ext pi_notebook")
    yield kernel
    kernel.shutdown()


def widget_ops(message: dict[str, Any]) -> list[dict[str, Any]]:
    if message["msg_type"] != "comm_msg":
        return []
    data = message["content"]["data"]
    content = data.get("content") if data.get("method") == "custom" else None
    return list(content.get("ops", [])) if isinstance(content, dict) else []


def wait_for_op(frontend: Frontend, predicate: Any, what: str) -> None:
    frontend.wait(lambda m: any(predicate(op) for op in widget_ops(m)), what=what)


def start(frontend: Frontend, code: str) -> None:
    """Configure the faux model to call ``python`` with ``code``, start a run, wait for the code's 'working'."""
    frontend.run(SETUP.format(arguments=repr({"code": code}), settings=repr(NO_RETRY)))
    frontend.execute("run = %pi go")
    wait_for_op(frontend, lambda op: op["op"] == "tool_append" and "working" in op["text"], "the code's 'working'")


def finish(frontend: Frontend) -> dict[str, Any]:
    """Await the run (it must settle); what the kernel recorded; the next cell runs with ipykernel's handler."""
    msg_id = frontend.execute(REPORT)
    frontend.finished(msg_id)
    lines = [
        m["content"]["text"]
        for m in frontend.seen
        if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == msg_id
    ]
    report: dict[str, Any] = json.loads("".join(lines).split("REPORT ", 1)[1])
    handler = frontend.run("import signal; print(signal.getsignal(signal.SIGINT))").strip()
    assert handler in ("Handlers.SIG_IGN", "<built-in function default_int_handler>")  # ours is gone
    return report


def tool_text(report: dict[str, Any]) -> str:
    [end] = report["ends"]
    assert end["is_error"] is True
    return str(end["text"])


SWALLOWING = {
    "bare except in a retry loop": (
        "import time\nprint('working', flush=True)\nwhile True:\n    try:\n        time.sleep(0.05)\n"
        "    except:\n        pass"
    ),
    "SIGINT ignored": (
        "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('working', flush=True)\n"
        "time.sleep(1000)"
    ),
    "SIGINT blocked": (
        "import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\nprint('working', flush=True)\n"
        "while True:\n    time.sleep(0.05)"
    ),
}


@pytest.fixture
def frontend(kernel: Kernel) -> Frontend:
    return Frontend(kernel)


@pytest.mark.parametrize("kind", SWALLOWING)
def test_stop_ends_code_that_swallows_the_interrupt(frontend: Frontend, kind: str) -> None:
    subshell = frontend.create_subshell()
    comm_id = frontend.open(subshell)
    frontend.state(comm_id)
    start(frontend, SWALLOWING[kind])
    frontend.send(comm_id, {"action": "abort"}, subshell)
    report = finish(frontend)  # also checks that ipykernel's SIGINT handler is back
    text = tool_text(report)
    assert "KeyboardInterrupt" in text
    assert "Interrupted: Stopped by the user (the code did not stop at the first interrupt; it was interrupted" in text
    assert report["aborted"] is True
    assert [label for label in report["labels"] if label != "receipt"][-1] == "agent_settled"  # then its receipt
    mask = frontend.run("import signal; print(sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])))").strip()
    assert mask == "[]"  # a mask the code blocked is undone


def test_code_no_interrupt_ends_is_reported_with_restart_the_kernel_until_it_returns(frontend: Frontend) -> None:
    code = (
        "import ctypes, signal\nsignal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())\n"
        "print('working', flush=True)\nctypes.CDLL(None).sleep(4)"
    )
    subshell = frontend.create_subshell()
    comm_id = frontend.open(subshell)
    frontend.state(comm_id)
    start(frontend, code)
    frontend.send(comm_id, {"action": "abort"}, subshell)
    wait_for_op(frontend, lambda op: op["op"] == "tool_note" and op["text"] == UNSTOPPABLE_TEXT, "the widget's note")
    frontend.state(comm_id, note=UNSTOPPABLE_TEXT)  # the status bar's, while the code holds the main thread
    assert "Restart the kernel" in UNSTOPPABLE_TEXT
    report = finish(frontend)  # once the call returns (it ends normally: no signal reached it), the run settles
    assert report["aborted"] is True
    assert report["ends"] == [{"text": "working\nOut: 0", "is_error": False}]


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_stop_kills_the_processes_the_code_started(frontend: Frontend) -> None:
    """The toolbar's Stop (the control comm), which signals no process but the kernel's main thread."""
    code = (
        "import subprocess, time\nchild = subprocess.Popen(['sleep', '1000'])\n"
        "away = subprocess.Popen(['sleep', '1001'], start_new_session=True)\n"
        "print('working', child.pid, away.pid, flush=True)\ntime.sleep(1000)"
    )
    subshell = frontend.create_subshell()
    comm_id = frontend.open(subshell)
    frontend.state(comm_id)
    start(frontend, code)
    line = next(
        op["text"]
        for message in frontend.seen
        for op in widget_ops(message)
        if op["op"] == "tool_append" and "working" in op["text"]
    )
    pids = [int(word) for word in line.split()[1:3]]
    assert all(alive(pid) for pid in pids)
    frontend.send(comm_id, {"action": "abort"}, subshell)
    report = finish(frontend)
    text = tool_text(report)
    assert [pid for pid in pids if alive(pid)] == []
    assert f"sleep (pid {pids[0]})" in text and f"sleep (pid {pids[1]})" in text
    assert report["aborted"] is True
