"""A server process on a loopback port for the deployment tests (Jupyter Server, a kernel gateway, JupyterHub):
started with its output in a log file, waited for until its URL answers, stopped (SIGTERM, then SIGKILL) with its
whole process group (a hub's proxy and single-user servers, a server's kernels)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Served:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        log: Path,
        ready: str,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float = 120,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Start ``argv`` and wait until ``ready`` (a URL) answers with success (a proxy answers 404 before its
        routes are set)."""
        self.log = log
        self._out = open(log, "w")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen(
            list(argv), stdout=self._out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, cwd=cwd,
            start_new_session=True,
        )  # fmt: skip
        try:
            self._wait(ready, timeout, dict(headers or {}))
        except BaseException:
            self.close()
            raise

    def _wait(self, url: str, timeout: float, headers: dict[str, str]) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.process.args!r} exited ({self.process.returncode}):\n{self.tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url, headers=headers, timeout=2).status_code < 400:
                    return
            time.sleep(0.25)  # polling the server's readiness, not waiting for a behaviour
        raise TimeoutError(f"{url} did not answer within {timeout} s:\n{self.tail()}")

    def tail(self, chars: int = 4000) -> str:
        if not self._out.closed:
            self._out.flush()
        return self.log.read_text(errors="replace")[-chars:]

    def close(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # what the group left behind (kernels, a proxy)
        self._out.close()
