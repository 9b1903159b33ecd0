"""JupyterLab with ``--gateway-url`` on a real Jupyter Kernel Gateway (its kernels run in the gateway, as in a remote
pod), driven in Debian's Chromium: ``%load_ext``, ``%pi``, the widget, an approval, the control comm (status bar,
toolbar Stop, Accel+.) and every stop path of the ``python`` tool while the agent's code holds the kernel's main
thread: the widget's Stop (forwarded over the control comm on a subshell, through the gateway), Accel+., the
toolbar's Stop, the kernel interrupt (Lab asks the gateway, which signals the kernel), and a page reloaded mid-code
that gets its status bar and Stop back. Screenshots: test-artifacts/gateway-*.png.

The gateway is started with ``list_kernels`` on (Lab lists the gateway's kernels) and a token, which Lab sends
(``GatewayClient.auth_token``)."""

from __future__ import annotations

import re
import secrets
import sys
from collections.abc import Iterator

import pytest
from lab_harness import JupyterLab, lab_with_extension, notebook
from playwright.sync_api import Locator, Page, expect
from served import Served, free_port

pytestmark = pytest.mark.timeout(400)

WAIT = 30_000
BUSY = "import time\nfor i in range(1200):\n    print('tick', i, flush=True)\n    time.sleep(0.1)"

SETUP = """\
%load_ext pi_notebook
import os
from pi_notebook.notebook import configure
from pi_notebook.kernel import python_tool
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
faux = FauxProvider(token_size=(1, 1))
def script(code):
    call = faux_tool_call("python", {"code": code, "timeout": 120})
    faux.set_responses([faux_assistant_message([call], "toolUse"), faux_assistant_message("done")])
configure(model=faux.model, stream_fn=faux.stream, tools=[python_tool()])
print("kernel cwd", os.getcwd())
"""
RUN = f"script({BUSY!r})\n%pi crunch"
RUN_WITHOUT_ASKING = f"%pi settings tools.approval=auto\n{RUN}"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("gateway")
    port, token = free_port(), secrets.token_hex(16)
    served = Served(
        [
            sys.executable, "-m", "jupyter", "kernelgateway", "--KernelGatewayApp.api=kernel_gateway.jupyter_websocket",
            "--KernelGatewayApp.ip=127.0.0.1", f"--KernelGatewayApp.port={port}",
            f"--KernelGatewayApp.auth_token={token}", "--JupyterWebsocketPersonality.list_kernels=True",
        ],
        log=root / "kernel-gateway.log",
        ready=f"http://127.0.0.1:{port}/api/kernelspecs",
        headers={"Authorization": f"token {token}"},
        env={"JUPYTER_RUNTIME_DIR": str(root / ".run")},
        cwd=root,
    )  # fmt: skip
    yield f"http://127.0.0.1:{port}", token
    served.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, gateway: tuple[str, str]) -> Iterator[JupyterLab]:
    url, token = gateway
    args = [f"--gateway-url={url}", f"--GatewayClient.auth_token={token}"]
    yield from lab_with_extension(tmp_path_factory, args=args)


def status(page: Page) -> Locator:
    return page.locator(".jp-StatusBar-Widget .pi-StatusItem")


def cell(page: Page, index: int) -> Locator:
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def stopped(page: Page, view: Locator) -> None:
    expect(view.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text("aborted=true", timeout=WAIT)
    expect(view.locator(".pi-tool-output")).to_contain_text("KeyboardInterrupt")
    expect(status(page)).to_have_text("pi: settled (aborted)", timeout=WAIT)


def start(lab: JupyterLab, page: Page, index: int) -> Locator:
    lab.run_cell(page, index)
    view = cell(page, index).locator(".pi-run-view")
    expect(view.locator(".pi-tool-output")).to_contain_text("tick", timeout=WAIT)
    expect(status(page)).to_have_text("pi: running tool", timeout=WAIT)
    return view


def test_pi_through_a_kernel_gateway_widget_approval_control_comm_and_every_stop(lab: JupyterLab) -> None:
    path = notebook([SETUP, RUN, *[RUN_WITHOUT_ASKING] * 4], lab.root / "gateway.ipynb")
    try:
        page = lab.open(path, workspace=path.stem)
    except Exception:
        for context in lab.browser.contexts:
            for opened in context.pages:
                lab.screenshot(opened, "gateway-open-failed.png")
        raise
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    expect(cell(page, 0).locator(".jp-OutputArea")).to_contain_text("kernel cwd")  # the gateway's, not the lab's
    assert str(lab.root) not in cell(page, 0).locator(".jp-OutputArea").inner_text()
    expect(status(page)).to_have_text("pi: idle", timeout=WAIT)

    # 1. An approval in the widget, then the widget's own Stop while the agent's code holds the main thread.
    lab.run_cell(page, 1)
    view = cell(page, 1).locator(".pi-run-view")
    expect(status(page)).to_have_text("pi: awaiting approval", timeout=WAIT)
    view.locator(".pi-approval button.pi-approve-run").click()
    expect(view.locator(".pi-tool-output")).to_contain_text("tick", timeout=WAIT)
    lab.screenshot(page, "gateway-running.png")
    view.locator("button.pi-run-stop").click()
    stopped(page, view)
    lab.screenshot(page, "gateway-widget-stop.png")

    # 2-4. Accel+., the toolbar's Stop, the kernel interrupt (Lab asks the gateway).
    for index, how in ((2, "shortcut"), (3, "toolbar"), (4, "interrupt")):
        view = start(lab, page, index)
        if how == "shortcut":
            page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
            page.keyboard.press("Escape")
            page.keyboard.press("Control+Period")
        elif how == "toolbar":
            page.locator(".jp-NotebookPanel-toolbar .pi-StopAgentRun").click()
        else:
            page.get_by_role("menuitem", name="Kernel").click()
            page.get_by_role("menuitem", name=re.compile(r"^Interrupt Kernel")).click()
        stopped(page, view)

    # 5. A page reloaded while the code runs gets the run back through the gateway, and stops it.
    start(lab, page, 5)
    page.reload()
    page.wait_for_selector(".jp-NotebookPanel", timeout=60_000)
    expect(status(page)).to_have_text("pi: running tool", timeout=WAIT)
    page.locator(".jp-NotebookPanel-toolbar .pi-StopAgentRun").click()
    expect(status(page)).to_have_text("pi: settled (aborted)", timeout=WAIT)
    lab.screenshot(page, "gateway-reloaded-stopped.png")
