"""The ``pi_notebook.control`` comm in a real kernel (jupyter_client), spoken as the JupyterLab extension does:
discovery with ``comm_info`` over the control channel, ``comm_open``, ``{"action": "status"}``,
``{"action": "abort"}``, pushed run states, and comm messages on a kernel subshell while a cell awaits a run."""

from __future__ import annotations

import textwrap
import time

import pytest
from control_frontend import TARGET, Frontend
from kernel_harness import Kernel

pytestmark = pytest.mark.timeout(120)

SLOW_FAUX = """
import asyncio, threading
from pi_notebook.notebook import configure, get_session
from pi_notebook.session import Settings
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
faux = FauxProvider(tokens_per_second={tps}, token_size=(1, 1))
faux.set_responses([{first}, faux_assistant_message("second run ok")])
configure(model=faux.model, stream_fn=faux.stream,
          settings=Settings(retry={{"base_delay_ms": 60_000}}, compaction={{"enabled": False}}))
settled_on = []
get_session().subscribe(
    lambda e: settled_on.append(threading.current_thread().name) if e.type == "agent_settled" else None
)
"""
ENDLESS = 'faux_assistant_message("word " * 200_000)'
SHORT = 'faux_assistant_message("a short answer")'
FAILING = 'faux_assistant_message([], "error", "503 service unavailable")'


def setup(frontend: Frontend, first: str = ENDLESS, tps: int = 2000) -> None:
    frontend.run(SLOW_FAUX.format(tps=tps, first=first))


def test_load_ext_registers_the_target_that_comm_info_reveals_and_status_creates_no_session(
    fresh_kernel: Kernel,
) -> None:
    frontend = Frontend(fresh_kernel)
    assert frontend.comm_info() == {}  # nothing to open yet: the extension does not try
    frontend.run("%load_ext pi_notebook")
    comms = frontend.comm_info()
    assert [entry["target_name"] for entry in comms.values()] == [TARGET]  # the beacon
    frontend.run("%reload_ext pi_notebook")
    assert len(frontend.comm_info()) == 1  # reloading does not add beacons
    comm_id = frontend.open()
    state = frontend.state(comm_id)
    assert state["type"] == "state"
    assert state["state"] == "idle"
    assert state["run"] is None
    assert state["aborted"] is False
    assert abs(state["now"] - time.time() * 1000) < 5000
    assert comm_id in frontend.comm_info()  # the open comm is listed too
    frontend.send(comm_id, {"action": "status"})
    assert frontend.state(comm_id, reply="status")["state"] == "idle"
    out = frontend.run("from pi_notebook.notebook._registry import REGISTRY\nprint(REGISTRY.find())")
    assert out.strip() == "None"  # asking for the state did not configure a session
    # the open comm is how an approval question knows a page is there (it waits longer for the widget to render)
    assert frontend.run("print(REGISTRY.control.page_connected())").strip() == "True"
    frontend.shell("comm_close", {"comm_id": comm_id, "data": {}})
    assert frontend.run("print(REGISTRY.control.page_connected())").strip() == "False"


def test_status_replies_with_the_active_runs_state(frontend: Frontend) -> None:
    setup(frontend)
    comm_id = frontend.open()
    frontend.state(comm_id)
    frontend.run("run = %pi tell me a story")
    frontend.state(comm_id, state="streaming")
    frontend.send(comm_id, {"action": "status"})
    reply = frontend.state(comm_id, reply="status")
    assert reply["state"] == "streaming"
    assert reply["run"] is not None
    frontend.run("run.abort()\nawait run")


def test_run_state_changes_are_pushed_to_every_open_comm(frontend: Frontend) -> None:
    setup(frontend, first=SHORT, tps=200)
    first, second = frontend.open(), frontend.open()
    frontend.state(first)
    frontend.state(second)
    frontend.run("run = %pi hi")
    for comm_id in (first, second):
        streaming = frontend.state(comm_id, state="streaming")
        settled = frontend.state(comm_id, state="settled")
        assert streaming["run"] == settled["run"]
        assert settled["aborted"] is False
        assert "reply" not in settled  # pushed, not a reply
    pushed = [s["state"] for s in frontend.states(first) if "reply" not in s][1:]  # after the open reply
    assert pushed == ["starting", "streaming", "settled"]  # announced as soon as the run is created


def test_abort_stops_the_run_restores_queued_messages_and_replies_with_the_new_state(frontend: Frontend) -> None:
    setup(frontend)
    comm_id = frontend.open()
    frontend.state(comm_id)
    frontend.run("run = %pi stream forever")
    frontend.state(comm_id, state="streaming")
    out = frontend.run(
        textwrap.dedent(
            """
            %pi steer look at the tests first
            %pi follow then write the summary
            await run.wait_for("queue_update", count=2)  # both are queued
            print(get_session().queue)
            """
        )
    )
    assert "steering=['look at the tests first'], follow_up=['then write the summary']" in out
    frontend.send(comm_id, {"action": "abort"})
    pushed = frontend.state(comm_id, state="aborted")
    reply = frontend.state(comm_id, reply="abort")
    assert pushed["aborted"] is True
    assert reply["state"] == "aborted"
    assert reply["aborted"] is True
    assert reply["run"] == pushed["run"]
    out = frontend.run("print(run.aborted, run.labels[-2], repr(run.view.input.value))\nprint(get_session().queue)")
    assert "True agent_settled 'look at the tests first\\n\\nthen write the summary'" in out
    assert "QueueSnapshot(steering=[], follow_up=[])" in out
    # a new run works after the abort
    frontend.run("run2 = %pi again\nawait run2")
    assert frontend.state(comm_id, state="settled")["aborted"] is False


def test_abort_with_no_active_run_replies_with_the_last_state(frontend: Frontend) -> None:
    setup(frontend, first=SHORT)
    comm_id = frontend.open()
    frontend.run("run = %pi hi\nawait run")
    frontend.send(comm_id, {"action": "abort"})
    reply = frontend.state(comm_id, reply="abort")
    assert reply["state"] == "settled"
    assert reply["aborted"] is False


@pytest.mark.parametrize("channel", ["subshell", "main shell"])
def test_abort_while_a_cell_awaits_the_run_settles_it_on_the_kernel_thread(frontend: Frontend, channel: str) -> None:
    """JupyterLab >= 4.4 sends comm messages on a subshell (its default); with that off they go to the main
    shell, where ipykernel 7.4 dispatches comm messages concurrently with an awaiting cell. Both must work."""
    setup(frontend)
    subshell = frontend.create_subshell() if channel == "subshell" else None
    comm_id = frontend.open(subshell)
    frontend.state(comm_id)
    frontend.run("run = %pi stream forever")
    frontend.state(comm_id, state="streaming")
    awaiting = frontend.execute("report = await run\nprint('awaited', run.aborted, settled_on)")
    frontend.wait(
        lambda m: m["msg_type"] == "execute_input" and m["parent_header"].get("msg_id") == awaiting,
        what="the awaiting cell started",
    )
    assert frontend.comm_info()  # the control channel answers while the main shell is busy
    sent = frontend.send(comm_id, {"action": "abort"}, subshell)
    reply = frontend.state(comm_id, reply="abort")
    replied = time.monotonic()
    assert reply["state"] == "aborted"
    frontend.finished(awaiting)
    assert replied - sent < 10  # served while the main shell was busy, not after the (endless) run
    out = "".join(
        m["content"]["text"]
        for m in frontend.seen
        if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == awaiting
    )
    assert "awaited True ['MainThread']" in out  # the run was settled on the kernel's main thread


def test_retrying_state_carries_the_retry_deadline_and_abort_ends_the_retry(frontend: Frontend) -> None:
    setup(frontend, first=FAILING)
    comm_id = frontend.open()
    frontend.state(comm_id)
    frontend.run("run = %pi go")
    retrying = frontend.state(comm_id, state="retrying")
    assert retrying["retry_deadline"] - retrying["now"] == pytest.approx(60_000, abs=2000)
    frontend.send(comm_id, {"action": "status"})
    assert frontend.state(comm_id, reply="status")["state"] == "retrying"
    frontend.send(comm_id, {"action": "abort"})
    reply = frontend.state(comm_id, reply="abort", timeout=10)
    assert reply["state"] == "aborted"
    assert reply["retry_deadline"] == 0


def test_an_unknown_action_gets_an_error_message(frontend: Frontend) -> None:
    comm_id = frontend.open()
    frontend.state(comm_id)
    frontend.send(comm_id, {"action": "explode"})
    error = frontend.wait(
        lambda m: (
            m["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == comm_id
            and m["content"]["data"].get("type") == "error"
        )
    )
    assert "unknown action 'explode'" in error["content"]["data"]["error"]


def test_a_closed_comm_gets_no_more_pushes(frontend: Frontend) -> None:
    setup(frontend, first=SHORT)
    closed, kept = frontend.open(), frontend.open()
    frontend.state(closed)
    frontend.state(kept)
    frontend.shell("comm_close", {"comm_id": closed, "data": {}})
    frontend.run("run = %pi hi\nawait run")
    frontend.state(kept, state="settled")
    assert [s.get("reply") for s in frontend.states(closed)] == [None]  # only the state sent on open


def test_the_comm_stays_on_its_subshell_after_the_kernel_pushed_states_from_the_main_shell(frontend: Frontend) -> None:
    """ipykernel 7.4 routes a comm's incoming messages to the subshell of the last message the kernel sent on it;
    states pushed from a run (main-shell context) must not move the control comm to the main shell, which
    synchronous code (the agent's python tool) blocks: an abort must reach the comm's thread at once."""
    setup(frontend)
    subshell = frontend.create_subshell()
    comm_id = frontend.open(subshell)
    frontend.state(comm_id)
    frontend.run(
        "import threading\n"
        "from pi_notebook.kernel import KERNEL\n"
        "threads = []\n"
        "def spy(reason):\n"
        "    threads.append(threading.current_thread().name)\n"
        "    return lambda: None\n"
        "KERNEL.interrupts.hold = spy"
    )
    try:
        frontend.run("run = %pi stream forever")
        frontend.state(comm_id, state="streaming")  # pushed from the run's (main shell) context
        frontend.send(comm_id, {"action": "abort"}, subshell)
        frontend.state(comm_id, reply="abort")
        out = frontend.run("print(threads)")
    finally:
        frontend.run("del KERNEL.interrupts.hold")
    assert out.startswith("['subshell-"), out  # the comm's thread, not MainThread


def test_an_abort_names_a_run_and_a_bad_run_number_is_an_error(frontend: Frontend) -> None:
    setup(frontend)
    comm_id = frontend.open()
    frontend.state(comm_id)
    frontend.run("run = %pi stream forever")
    active = frontend.state(comm_id, state="streaming")["run"]
    frontend.send(comm_id, {"action": "abort", "run": "one"})
    error = frontend.wait(
        lambda m: (
            m["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == comm_id
            and m["content"]["data"].get("type") == "error"
        )
    )
    assert error["content"]["data"]["error"] == "'run' must be a run number, got 'one'"
    frontend.send(comm_id, {"action": "abort", "run": active + 1})  # not active: nothing stops
    assert frontend.state(comm_id, reply="abort")["state"] == "streaming"
    frontend.send(comm_id, {"action": "abort", "run": active})
    reply = [s for s in frontend.states(comm_id) if s.get("reply") == "abort"]
    assert len(reply) == 1
    assert frontend.state(comm_id, reply="abort", state="aborted")["run"] == active
