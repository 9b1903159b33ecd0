"""The ``pi_notebook.control`` comm in a real kernel (jupyter_client), spoken as the JupyterLab extension does:
discovery with ``comm_info`` over the control channel, ``comm_open``, ``{"action": "status"}``,
``{"action": "abort"}``, pushed run states, and comm messages on a kernel subshell while a cell awaits a run."""

from __future__ import annotations

import queue
import textwrap
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kernel_harness import Kernel

pytestmark = pytest.mark.timeout(120)

TARGET = "pi_notebook.control"

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


class Frontend:
    """What the JupyterLab extension does, over jupyter_client: every iopub message is kept, so nothing a
    test waits for is dropped while it waits for something else."""

    def __init__(self, kernel: Kernel) -> None:
        self.client = kernel.client
        self.session = kernel.client.session
        self.seen: list[dict[str, Any]] = []

    # -- control channel -------------------------------------------------------------------------------
    def control(self, msg_type: str, content: dict[str, Any], timeout: float = 10) -> dict[str, Any]:
        msg = self.session.msg(msg_type, content)
        self.client.control_channel.send(msg)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                reply = self.client.get_control_msg(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                continue
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                return dict(reply["content"])
        raise TimeoutError(f"no {msg_type} reply within {timeout} s")

    def comm_info(self) -> dict[str, Any]:
        """``comm_info`` for the target over the control channel, as the extension probes."""
        return dict(self.control("comm_info_request", {"target_name": TARGET})["comms"])

    def create_subshell(self) -> str:
        return str(self.control("create_subshell_request", {})["subshell_id"])

    # -- shell channel ---------------------------------------------------------------------------------
    def shell(self, msg_type: str, content: dict[str, Any], subshell_id: str | None = None) -> str:
        msg = self.session.msg(msg_type, content)
        if subshell_id is not None:
            msg["header"]["subshell_id"] = subshell_id
        self.client.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])

    def open(self, subshell_id: str | None = None) -> str:
        comm_id = f"test-{time.monotonic_ns()}"
        self.shell("comm_open", {"comm_id": comm_id, "target_name": TARGET, "data": {}}, subshell_id)
        return comm_id

    def send(self, comm_id: str, data: dict[str, Any], subshell_id: str | None = None) -> float:
        self.shell("comm_msg", {"comm_id": comm_id, "data": data}, subshell_id)
        return time.monotonic()

    def execute(self, code: str) -> str:
        return str(self.client.execute(code))

    # -- iopub -----------------------------------------------------------------------------------------
    def wait(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30, what: str = "") -> dict[str, Any]:
        """The first iopub message (already seen or arriving) that matches ``predicate``."""
        for message in self.seen:
            if predicate(message):
                return message
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                message = self.client.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                continue
            self.seen.append(message)
            if message["msg_type"] == "error":
                content = message["content"]
                raise AssertionError(f"a cell failed: {content['ename']}: {content['evalue']}")
            if predicate(message):
                return message
        raise TimeoutError(f"nothing matched within {timeout} s: {what}")

    def state(self, comm_id: str, timeout: float = 30, **expected: Any) -> dict[str, Any]:
        """The first state message on ``comm_id`` whose fields equal ``expected``."""

        def match(message: dict[str, Any]) -> bool:
            if message["msg_type"] != "comm_msg" or message["content"]["comm_id"] != comm_id:
                return False
            data = message["content"]["data"]
            return all(data.get(key) == value for key, value in expected.items())

        return dict(self.wait(match, timeout, f"comm {comm_id} sends {expected}")["content"]["data"])

    def states(self, comm_id: str) -> list[dict[str, Any]]:
        return [
            m["content"]["data"]
            for m in self.seen
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id
        ]

    def finished(self, msg_id: str, timeout: float = 30) -> float:
        """Wait until the cell ``msg_id`` is done; returns when (monotonic) it was seen done."""
        self.wait(
            lambda m: (
                m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"
                and m["parent_header"].get("msg_id") == msg_id
            ),
            timeout,
            f"cell {msg_id} finishes",
        )
        return time.monotonic()

    def run(self, code: str, timeout: float = 30) -> str:
        """Run a cell to the end; returns its stdout."""
        msg_id = self.execute(code)
        self.finished(msg_id, timeout)
        return "".join(
            m["content"]["text"]
            for m in self.seen
            if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == msg_id
        )


@pytest.fixture(scope="module")
def loaded() -> Iterator[Kernel]:
    kernel = Kernel()
    kernel.run("%load_ext pi_notebook")
    yield kernel
    kernel.shutdown()


@pytest.fixture
def frontend(loaded: Kernel) -> Frontend:
    return Frontend(loaded)


def setup(frontend: Frontend, first: str = ENDLESS, tps: int = 2000) -> None:
    frontend.run(SLOW_FAUX.format(tps=tps, first=first))


def test_load_ext_registers_the_target_that_comm_info_reveals_and_status_creates_no_session() -> None:
    kernel = Kernel()
    try:
        frontend = Frontend(kernel)
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
    finally:
        kernel.shutdown()


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
    out = frontend.run("print(run.aborted, run.labels[-1], repr(run.view.input.value))\nprint(get_session().queue)")
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
    assert replied - sent < 2.0  # served while the main shell was busy, not after the (endless) run
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
