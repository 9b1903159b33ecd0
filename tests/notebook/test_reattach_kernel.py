"""A page that connects while a run goes on, in a real kernel (jupyter_client), spoken as the JupyterLab extension
does: the control comm opened on a subshell answers with the state and the live widgets of the active runs while
the agent's python code holds the main thread; ``%pi abort`` typed in a subshell console stops that code; the
other ``%pi`` commands say in one line that they need the main shell; and an active run has the kernel publish an
activity signal for idle cullers, with no parent, until it settles."""

from __future__ import annotations

from typing import Any

import pytest
from control_frontend import Frontend

from pi_notebook.notebook._volatile import RUN_DISPLAY
from pi_notebook.notebook.widget._display import STATIC_MARKER, WIDGET_MIMETYPE

pytestmark = pytest.mark.timeout(120)

SETUP = """
from pi_notebook.notebook import configure
from pi_notebook.kernel import python_tool
from pi_notebook.notebook._registry import REGISTRY
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
faux = FauxProvider(token_size=(1, 1))
call = faux_tool_call("python", {{"code": {code!r}}}, id="call-1")
faux.set_responses([faux_assistant_message([call], "toolUse"), faux_assistant_message("after the tool")])
configure(model=faux.model, stream_fn=faux.stream, tools=[python_tool()],
          settings={{"tools": {{"approval": "auto"}}, "retry": {{"enabled": False}}}})
"""
BUSY = "print('working', flush=True)\nn = 0\nwhile True:\n    n += 1"


def execute_in_cell(frontend: Frontend, code: str, cell_id: str, subshell: str | None = None) -> str:
    """An ``execute_request`` as JupyterLab sends it: the cell's id in the metadata."""
    content = {"code": code, "silent": False, "store_history": True}
    return frontend.shell("execute_request", content, subshell, metadata={"cellId": cell_id})


def execute_on(frontend: Frontend, code: str, subshell: str) -> str:
    return frontend.shell("execute_request", {"code": code, "silent": False, "store_history": False}, subshell)


def stdout_of(frontend: Frontend, msg_id: str) -> str:
    frontend.finished(msg_id)
    return "".join(
        m["content"]["text"]
        for m in frontend.seen
        if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == msg_id
    )


def start_busy(frontend: Frontend) -> str:
    """Start a run whose python code holds the main thread (endless); returns its cell's message id."""
    frontend.run(SETUP.format(code=BUSY))
    msg_id = execute_in_cell(frontend, "run = %pi crunch", "cell-7")
    frontend.wait(
        lambda m: m["msg_type"] == "comm_msg" and "working" in str(m["content"]["data"]), what="the code runs"
    )
    return msg_id


def comm_message(frontend: Frontend, comm_id: str, kind: str) -> dict[str, Any]:
    message = frontend.wait(
        lambda m: (
            m["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == comm_id
            and m["content"]["data"].get("type") == kind
        ),
        what=f"a {kind} message on {comm_id}",
    )
    return dict(message["content"]["data"])


def test_a_page_opening_while_the_agents_code_holds_the_main_thread_gets_state_and_views(frontend: Frontend) -> None:
    start_busy(frontend)
    # The page of a reload: a new subshell and comm, while the code holds the main thread (it never returns).
    subshell = frontend.create_subshell()
    comm_id = frontend.open(subshell)
    state = frontend.state(comm_id, timeout=10, type="state")
    assert state["state"] == "running tool"
    views = comm_message(frontend, comm_id, "views")
    [view] = views["views"]
    assert view["run"] == state["run"]
    assert view["cell_id"] == "cell-7"  # the cell that showed the run, from the request's metadata
    assert view["text"] == f"Run {state['run']}: crunch"
    assert view["data"]["text/plain"] == view["text"] and view["metadata"] == RUN_DISPLAY  # the display's bundle,
    assert view["data"]["text/html"].startswith(STATIC_MARKER) and "crunch" in view["data"]["text/html"]  # its copy
    assert view["data"][WIDGET_MIMETYPE]["model_id"] == view["model_id"]
    token = views["process"]
    frontend.send(comm_id, {"action": "status"}, subshell)
    assert frontend.state(comm_id, reply="status", timeout=10)["state"] == "running tool"
    frontend.send(comm_id, {"action": "abort"}, subshell)
    assert frontend.state(comm_id, reply="abort")["state"] == "aborted"
    check = f"print(w.model_id == {view['model_id']!r}, '{token}' in str(w._dom_classes))"
    out = frontend.run(f"w = REGISTRY.get().current_run.view\n{check}")
    assert out.strip() == "True True"  # the widget named is the run's; it carries the kernel process's class


def test_a_settled_run_is_not_in_the_views(frontend: Frontend) -> None:
    frontend.run(SETUP.format(code="print('quick')"))
    frontend.run("run = %pi go\nawait run")
    comm_id = frontend.open()
    frontend.state(comm_id)
    assert comm_message(frontend, comm_id, "views")["views"] == []


def test_pi_abort_in_a_subshell_console_stops_the_agents_code(frontend: Frontend) -> None:
    cell = start_busy(frontend)
    console = frontend.create_subshell()  # JupyterLab's "New Subshell Console for Notebook"
    out = stdout_of(frontend, execute_on(frontend, "%pi abort", console))
    assert out == "pi: stopping\n"
    frontend.finished(cell)
    out = frontend.run("report = await run\nprint(run.aborted, run.status.status, 'agent_settled' in run.labels)")
    assert out.strip() == "True aborted True"
    assert frontend.run("print(run.messages[-2].content[0].text.splitlines()[-1])").strip() == (
        "Interrupted: Stopped by the user"
    )


def test_other_pi_commands_in_a_subshell_console_say_they_need_the_main_shell(frontend: Frontend) -> None:
    frontend.run(SETUP.format(code="print('quick')"))
    console = frontend.create_subshell()
    out = stdout_of(frontend, execute_on(frontend, "%pi steer go left", console))
    only = "abort, events, help, queue, status"
    assert out == f"pi: %pi steer runs on the kernel's main shell; on a subshell %pi does only: {only}\n"
    assert stdout_of(frontend, execute_on(frontend, "%pi abort", console)) == "pi: nothing to abort\n"
    assert "activity for idle cullers: every 60 s" in stdout_of(frontend, execute_on(frontend, "%pi status", console))


def test_an_active_run_signals_activity_without_a_parent_until_it_settles(frontend: Frontend) -> None:
    frontend.run(SETUP.format(code="import time\ntime.sleep(1.5)\nprint('slept')"))
    frontend.run("REGISTRY.control.activity.every = 0.2")
    try:
        frontend.run("run = %pi go")
        pings = []
        for _ in range(3):  # a silent tool holds the main thread; the signal comes from its own thread
            pings.append(
                frontend.wait(
                    lambda m: (
                        m["msg_type"] == "comm_msg" and m["content"]["data"] == {"type": "activity"} and m not in pings
                    ),
                    what="an activity signal",
                )
            )
        assert all(m["content"]["comm_id"] == "pi_notebook.control.beacon" for m in pings)
        assert all(m["parent_header"] == {} for m in pings)  # it answers no request: no cell gets it
        assert "True" in frontend.run("await run\nprint(run.done)")
        slept = next(i for i, m in enumerate(frontend.seen) if m["msg_type"] == "comm_msg" and "slept" in str(m))
        assert frontend.seen.index(pings[-1]) < slept  # while the silent tool held the main thread, not after
        out = frontend.run(
            "import asyncio\nwhile REGISTRY.control.activity.running:\n    await asyncio.sleep(0.05)\n"
            "print('stopped', REGISTRY.control.activity.sent >= 3)"
        )
        assert out.strip() == "stopped True"  # the thread ends once no run is active
    finally:
        frontend.run("REGISTRY.control.activity.every = 60.0")
