"""Real JupyterLab on 127.0.0.1 driven by Playwright in Debian's Chromium (never a downloaded browser).

``JupyterLab(tmp_path)`` starts ``jupyter lab`` with this interpreter; ``lab.open(notebook)`` gives a
Playwright page on a notebook whose kernel has started. Screenshots go to ``test-artifacts/`` so a person
can look at them.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from loopback_core import note_url
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

CHROMIUM = "/usr/bin/chromium"
CLOSED_PORT = 9
"""The discard port: nothing listens there on a test machine, so a connection to it is refused at once."""
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
    # Nothing past loopback (tests/support/loopback_guard.py): every other request goes to a proxy on a closed
    # port of 127.0.0.1 and fails there; Chromium never sends loopback requests through a proxy.
    f"--proxy-server=http://127.0.0.1:{CLOSED_PORT}",
]


def require_chromium() -> None:
    """Browser tests need Debian's chromium; say how to get it instead of skipping silently."""
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        raise RuntimeError(f"{CHROMIUM} is missing: apt-get install -y chromium (see README, Tests)")


def guard(page: Page) -> Page:
    """Note each request ``page`` tries past loopback (the proxy flag stops it): the loopback guard fails the test."""
    page.on("request", lambda request: note_url(request.url, "chromium"))
    return page


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


LOG_IN_ORDER = """([index, labels, atStart]) => {
  const view = document.querySelectorAll('.pi-run-view')[index];
  if (!view) return false;
  const seen = [...view.querySelectorAll('.pi-log-label')].map((label) => label.textContent);
  if (atStart) return labels.every((label, at) => seen[at] === label);
  let at = -1;
  return labels.every((label) => (at = seen.indexOf(label, at + 1)) >= 0);
}"""


def wait_for_log(page: Page, view: int, labels: list[str], *, at_start: bool = False, timeout: float = 30_000) -> None:
    """Wait until the event log of the page's ``view``-th run view shows ``labels`` in this order (``at_start``: as
    its first rows). The log is read whole in one evaluation in the page: a view that is redrawn meanwhile (a
    snapshot empties its log until the next frame draws it again) is never read half-drawn. Times out (the test
    fails) if the order never shows."""
    page.wait_for_function(LOG_IN_ORDER, arg=[view, labels, at_start], timeout=timeout)


def notebook(cells: list[str], path: Path) -> Path:
    """Write a notebook with one code cell per source and a kernelspec, so Lab does not ask for a kernel. Cells
    have ids (``cell-0``, ...), as nbformat 4.5 files do, so a reloaded page knows them by the same ids."""
    content = {
        "cells": [
            {
                "id": f"cell-{index}",
                "cell_type": "code",
                "metadata": {},
                "source": source,
                "outputs": [],
                "execution_count": None,
            }
            for index, source in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(content))
    return path


class JupyterLab:
    def __init__(
        self,
        root: Path,
        env: dict[str, str] | None = None,
        settings: dict[str, dict[str, Any]] | None = None,
        args: list[str] | None = None,
    ) -> None:
        """``env`` adds variables to the server's (and so its kernels') environment, e.g. ``JUPYTER_PATH``;
        ``settings`` are user settings by plugin file (``"@jupyter-widgets/jupyterlab-manager/plugin"``: its
        values), as a user sets them in the Settings Editor; ``args`` adds options to ``jupyter lab``
        (``--gateway-url=...``)."""
        require_chromium()
        self.root = root
        self.port = free_port()
        self.token = secrets.token_hex(16)
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(root / ".jupyter"),
            "JUPYTER_RUNTIME_DIR": str(root / ".run"),
            **(env or {}),
        }
        quiet = root / ".jupyter/lab/user-settings/@jupyterlab/apputils-extension/notification.jupyterlab-settings"
        quiet.parent.mkdir(parents=True, exist_ok=True)
        quiet.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        for name, values in (settings or {}).items():
            chosen = root / ".jupyter/lab/user-settings" / f"{name}.jupyterlab-settings"
            chosen.parent.mkdir(parents=True, exist_ok=True)
            chosen.write_text(json.dumps(values))
        self.log = open(root / "jupyter-lab.log", "w")  # noqa: SIM115 - closed in close()
        # `-m jupyterlab`, not `-m jupyter lab`: the latter runs the first `jupyter-lab` script on PATH, which in a
        # venv made with --system-site-packages (a worktree's) is the system one, so its kernels (`python` is the
        # server's interpreter) imported the system's pi_notebook instead of this checkout's.
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
                f"--port={self.port}", "--ip=127.0.0.1", f"--ServerApp.token={self.token}",
                f"--ServerApp.root_dir={root}", "--LabApp.news_url=", "--ServerApp.disable_check_xsrf=True",
                *(args or []),
            ],
            stdout=self.log, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
        self._wait_ready()
        self._playwright: Playwright = sync_playwright().start()
        self.browser: Browser = self._playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)

    def _wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        url = f"http://127.0.0.1:{self.port}/api/status?token={self.token}"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited: {(self.root / 'jupyter-lab.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.2)  # polling the server's readiness, not waiting for a behaviour
        raise TimeoutError("jupyter lab did not start")

    def open(
        self,
        path: Path,
        workspace: str | None = None,
        prepare: Callable[[Page], object] | None = None,
        *,
        watched: bool = False,
    ) -> Page:
        """``workspace`` names a fresh JupyterLab workspace, so notebooks opened earlier are not restored;
        ``prepare`` is called with the page before it loads anything (to watch its requests, say). ``watched``: the
        test routes and asserts every request this page makes past loopback itself (one it makes on purpose, a
        click that loads a remote image, included), so the loopback guard leaves them to it."""
        page = self.browser.new_page(viewport={"width": 1500, "height": 1000})
        if not watched:
            guard(page)
        if prepare is not None:
            prepare(page)
        page.goto(self.url(path, workspace))
        page.wait_for_selector(".jp-NotebookPanel", timeout=60_000)
        page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)  # the kernel is up
        page.locator(".jp-Notebook .jp-CodeCell .cm-content").first.wait_for(timeout=60_000)  # editors are ready
        return page

    def url(self, path: Path, workspace: str | None = None) -> str:
        """The address (with the token) that opens ``path`` in Lab, in ``workspace`` if given."""
        where = f"workspaces/{workspace}/tree" if workspace else "tree"
        return f"http://127.0.0.1:{self.port}/lab/{where}/{path.relative_to(self.root)}?token={self.token}"

    def run_cell(self, page: Page, index: int) -> None:
        """Select cell ``index``, run it with Shift+Enter, and wait until the kernel has taken it."""
        cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
        cell.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Escape")
        page.keyboard.press("Shift+Enter")
        prompt = cell.locator(".jp-InputPrompt")
        page.wait_for_function(
            "prompt => /\\[(\\*|\\d+)\\]/.test(prompt.textContent)", arg=prompt.element_handle(), timeout=60_000
        )

    def wait_idle(self, page: Page, index: int) -> None:
        """Wait until cell ``index`` has finished (its prompt shows an execution count)."""
        prompt = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-InputPrompt")
        page.wait_for_function(
            "prompt => /\\[\\d+\\]/.test(prompt.textContent)", arg=prompt.element_handle(), timeout=60_000
        )

    def screenshot(self, page: Page, name: str, **options: Any) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / name
        page.screenshot(path=str(path), **options)
        return path

    def shutdown_kernels(self) -> None:
        """Close every page and shut down every kernel the server runs (between tests: two cores only)."""
        for context in self.browser.contexts:
            context.close()
        base = f"http://127.0.0.1:{self.port}/api/sessions"
        with urllib.request.urlopen(f"{base}?token={self.token}", timeout=10) as response:
            sessions = json.load(response)
        for session in sessions:
            request = urllib.request.Request(f"{base}/{session['id']}?token={self.token}", method="DELETE")
            with urllib.request.urlopen(request, timeout=30):
                pass

    def close(self) -> None:
        try:
            self.browser.close()
            self._playwright.stop()
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)  # reaped: no ResourceWarning from an unwaited process at exit
            self.log.close()


LABEXTENSION = Path(__file__).resolve().parents[2] / "pi_notebook" / "labextension"
"""The built JupyterLab extension of this checkout."""


def lab_with_extension(
    tmp_path_factory: Any,
    env: dict[str, str] | None = None,
    settings: dict[str, dict[str, Any]] | None = None,
    args: list[str] | None = None,
) -> Iterator[JupyterLab]:
    """A JupyterLab serving this checkout's extension (through ``JUPYTER_PATH``), closed afterwards; for a module
    fixture: ``yield from lab_with_extension(tmp_path_factory)``. ``env``, ``settings`` and ``args``: as
    :class:`JupyterLab`."""
    data = tmp_path_factory.mktemp("jupyter-data")
    (data / "labextensions").mkdir()
    (data / "labextensions" / "pi-notebook").symlink_to(LABEXTENSION, target_is_directory=True)
    # First on the path, before what the environment already lists (a worktree's venv lists the system's share
    # folder there, where the widget extensions are).
    path = os.pathsep.join(filter(None, [str(data), os.environ.get("JUPYTER_PATH")]))
    lab = JupyterLab(
        tmp_path_factory.mktemp("lab"), env={**(env or {}), "JUPYTER_PATH": path}, settings=settings, args=args
    )
    yield lab
    lab.close()
