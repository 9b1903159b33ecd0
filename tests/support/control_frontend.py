"""What the JupyterLab extension does, over jupyter_client: the control channel, comms (on a subshell if asked),
and every iopub message kept so a test can wait for any of them."""

from __future__ import annotations

import copy
import queue
import time
from collections.abc import Callable
from typing import Any

from jupyter_client.session import Session
from kernel_harness import Kernel, deadline

TARGET = "pi_notebook.control"


class Frontend:
    """What the JupyterLab extension does, over jupyter_client: every iopub message is kept, so nothing a
    test waits for is dropped while it waits for something else."""

    def __init__(self, kernel: Kernel) -> None:
        self.client = kernel.client
        self.session = kernel.client.session
        self.seen: list[dict[str, Any]] = []
        self.on_message: Callable[[dict[str, Any]], None] | None = None
        """Called with every iopub message as it arrives (a fake page answers the kernel's requests there)."""

    def as_client(self, session_id: str) -> Frontend:
        """This connection as another page's: what it sends carries ``session_id`` as its client id (each
        JupyterLab page's kernel connection has its own). It shares what this one reads: wait on this one."""
        other = copy.copy(self)
        other.session = Session(key=self.session.key, signature_scheme=self.session.signature_scheme)
        other.session.session = session_id
        return other

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
    def shell(
        self,
        msg_type: str,
        content: dict[str, Any],
        subshell_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Send a shell request (on a subshell if given; ``metadata`` as a frontend adds it, e.g. JupyterLab's
        ``cellId``); its message id."""
        msg = self.session.msg(msg_type, content)
        if subshell_id is not None:
            msg["header"]["subshell_id"] = subshell_id
        if metadata is not None:
            msg["metadata"] = metadata
        self.client.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])

    def open(self, subshell_id: str | None = None, data: dict[str, Any] | None = None) -> str:
        comm_id = f"test-{time.monotonic_ns()}"
        self.shell("comm_open", {"comm_id": comm_id, "target_name": TARGET, "data": data or {}}, subshell_id)
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
            if self.on_message is not None:
                self.on_message(message)
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
        """The state messages seen on ``comm_id`` (not its ``views``), in order."""
        return [
            m["content"]["data"]
            for m in self.seen
            if m["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == comm_id
            and m["content"]["data"].get("type") == "state"
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

    def run(self, code: str, timeout: float | None = None) -> str:
        """Run a cell to the end (``kernel_harness.deadline``); returns its stdout."""
        msg_id = self.execute(code)
        self.finished(msg_id, deadline(code, timeout))
        return "".join(
            m["content"]["text"]
            for m in self.seen
            if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == msg_id
        )
