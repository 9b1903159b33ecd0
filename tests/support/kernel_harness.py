"""A real IPython kernel driven over jupyter_client, for tests of what a notebook user does."""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass, field
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel


@dataclass
class Outcome:
    outputs: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    elapsed: float = 0.0

    def of_type(self, msg_type: str, mimetype: str | None = None) -> list[dict[str, Any]]:
        """The contents of the outputs of ``msg_type`` (e.g. ``display_data``), those holding ``mimetype`` if given."""
        return [
            output["content"]
            for output in self.outputs
            if output["msg_type"] == msg_type and (mimetype is None or mimetype in output["content"]["data"])
        ]

    @property
    def stdout(self) -> str:
        """What the cell printed."""
        return "".join(output["content"]["text"] for output in self.outputs if output["msg_type"] == "stream")

    @property
    def text(self) -> str:
        """stdout plus text/plain and text/markdown of results and displays, in order."""
        parts = []
        for output in self.outputs:
            if output["msg_type"] == "stream":
                parts.append(output["content"]["text"])
            elif output["msg_type"] in ("execute_result", "display_data"):
                data = output["content"]["data"]
                parts.append(data.get("text/markdown") or data.get("text/plain", ""))
        return "".join(parts)

    @property
    def shown(self) -> str:
        """What a reader sees: stdout, and results and displays as text (markdown rendered by a CommonMark
        renderer, so escaped characters read as themselves)."""
        from rendered_html import render

        parts = []
        for output in self.outputs:
            if output["msg_type"] == "stream":
                parts.append(output["content"]["text"])
            elif output["msg_type"] in ("execute_result", "display_data"):
                data = output["content"]["data"]
                markdown = data.get("text/markdown")
                parts.append(render(markdown, "markdown-it").text if markdown else data.get("text/plain", ""))
        return "".join(parts)


LOAD_TIMEOUT_S = 120
"""Deadline for a cell that loads the extension (``%load_ext pi_notebook``) in a new kernel: its first import of the
package takes seconds of CPU, over a minute on a loaded 2-core machine (a deadline, not a wait: a quick load returns
at once)."""
CELL_TIMEOUT_S = 60
"""Deadline for any other cell."""


def deadline(code: str, timeout: float | None) -> float:
    """The deadline of a cell: ``timeout`` if given, else :data:`LOAD_TIMEOUT_S` for a cell that loads the extension
    and :data:`CELL_TIMEOUT_S` for any other."""
    if timeout is not None:
        return timeout
    return LOAD_TIMEOUT_S if "load_ext pi_notebook" in code else CELL_TIMEOUT_S


class Kernel:
    """Starts a kernel with this interpreter; ``run(code)`` executes a cell and collects its outputs. ``env`` is the
    kernel's whole environment (default: this process's); ``kernel_name`` a kernelspec on ``JUPYTER_PATH``."""

    def __init__(self, env: dict[str, str] | None = None, kernel_name: str = "python3") -> None:
        self.manager: KernelManager
        self.client: BlockingKernelClient
        options = {} if env is None else {"env": env}
        self.manager, self.client = start_new_kernel(kernel_name=kernel_name, startup_timeout=60, **options)

    def run(self, code: str, timeout: float | None = None, *, allow_error: bool = False) -> Outcome:
        started = time.monotonic()
        msg_id = self.client.execute(code)
        outcome = self.collect(msg_id, deadline(code, timeout))
        outcome.elapsed = time.monotonic() - started
        if outcome.error is not None and not allow_error:
            raise AssertionError(f"cell failed: {outcome.error['ename']}: {outcome.error['evalue']}\n{code}")
        return outcome

    def start(self, code: str) -> str:
        """Send a cell without waiting; collect it later with ``collect``."""
        return str(self.client.execute(code))

    def collect(self, msg_id: str, timeout: float = 60) -> Outcome:
        outcome = Outcome()
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"cell {msg_id} did not finish within {timeout} s")
            try:
                message = self.client.get_iopub_msg(timeout=remaining)
            except queue.Empty:
                continue
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind = message["msg_type"]
            if kind == "status" and message["content"]["execution_state"] == "idle":
                return outcome
            if kind == "error":
                outcome.error = message["content"]
            if kind in ("stream", "execute_result", "display_data", "update_display_data", "error"):
                outcome.outputs.append({"msg_type": kind, "content": message["content"]})

    def wait_for_output(self, msg_id: str | None, needle: str, timeout: float = 60) -> Outcome:
        """Collect a running cell's outputs until one contains ``needle`` (the cell keeps running); ``msg_id``
        ``None``: any cell's (output of a run's task, say)."""
        outcome = Outcome()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                message = self.client.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                continue
            if msg_id is not None and message["parent_header"].get("msg_id") != msg_id:
                continue
            if message["msg_type"] in ("stream", "execute_result", "display_data", "error"):
                outcome.outputs.append({"msg_type": message["msg_type"], "content": message["content"]})
                if needle in outcome.text:
                    return outcome
        raise TimeoutError(f"no output containing {needle!r} within {timeout} s")

    def interrupt(self) -> None:
        self.manager.interrupt_kernel()

    def shutdown(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
