"""A kernel reached as a browser reaches it: Jupyter Server's REST API (``/api/kernels``) and the kernel's websocket
(``/api/kernels/<id>/channels``, JSON messages), on a Jupyter Server, through JupyterHub's proxy
(``<hub>/user/<name>``) or on a kernel gateway. Synchronous (``websocket-client``, which Jupyter Server installs):
``RemoteKernel.start(base, token).run(code)``.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
import websocket
from kernel_harness import deadline as cell_deadline


@dataclass
class Result:
    stdout: str = ""
    error: dict[str, Any] | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)


class RemoteKernel:
    """One kernel of a Jupyter Server (``base`` is its URL, ``/user/<name>`` included for a hub's)."""

    def __init__(self, base: str, token: str, kernel_id: str) -> None:
        self.base = base.rstrip("/")
        self.token = token
        self.id = kernel_id
        self.session = uuid.uuid4().hex
        self._ws: websocket.WebSocket | None = None

    @classmethod
    def start(cls, base: str, token: str, name: str = "python3") -> RemoteKernel:
        response = httpx.post(f"{base.rstrip('/')}/api/kernels", json={"name": name}, headers=auth(token), timeout=60)
        response.raise_for_status()
        return cls(base, token, response.json()["id"])

    def connect(self) -> RemoteKernel:
        url = self.base.replace("http", "ws", 1) + f"/api/kernels/{self.id}/channels?session_id={self.session}"
        self._ws = websocket.create_connection(url, header=[f"Authorization: token {self.token}"], timeout=60)
        return self

    def close(self) -> None:
        """Close the websocket (the kernel goes on)."""
        if self._ws is not None:
            self._ws.close()
            self._ws = None

    def send(self, msg_type: str, content: dict[str, Any], channel: str = "shell") -> str:
        assert self._ws is not None, "connect() first"
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": msg_type, "session": self.session, "username": "test",
                  "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "version": "5.3"}  # fmt: skip
        message = {"header": header, "parent_header": {}, "metadata": {}, "content": content, "channel": channel}
        self._ws.send(json.dumps(message))
        return msg_id

    def run(self, code: str, timeout: float | None = None) -> Result:
        """Execute ``code`` as a cell and collect what it printed until the kernel is idle again (within
        ``kernel_harness.deadline``)."""
        timeout = cell_deadline(code, timeout)
        msg_id = self.send("execute_request", {"code": code, "silent": False, "store_history": True})
        result = Result()
        assert self._ws is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._ws.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                message = json.loads(self._ws.recv())
            except websocket.WebSocketTimeoutException:
                break
            if message.get("parent_header", {}).get("msg_id") != msg_id or message.get("channel") != "iopub":
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                result.stdout += content["text"]
            elif kind == "error":
                result.error = content
            elif kind in ("execute_result", "display_data"):
                result.outputs.append(content)
            elif kind == "status" and content["execution_state"] == "idle":
                return result
        raise TimeoutError(f"the cell did not finish within {timeout} s:\n{code}")

    def alive(self) -> bool:
        """The server still lists this kernel."""
        response = httpx.get(f"{self.base}/api/kernels", headers=auth(self.token), timeout=30)
        response.raise_for_status()
        return any(kernel["id"] == self.id for kernel in response.json())

    def shutdown(self) -> None:
        self.close()
        httpx.delete(f"{self.base}/api/kernels/{self.id}", headers=auth(self.token), timeout=60)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"token {token}"}


def wait_until(predicate: Any, timeout: float, what: str, every: float = 0.5) -> None:
    """Poll ``predicate()`` until it is true: for state only a server can be asked about (a kernel culled)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(every)  # polling a server's state, not waiting for a behaviour
    raise TimeoutError(f"not within {timeout} s: {what}")
