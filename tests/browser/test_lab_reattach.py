"""In real JupyterLab with Debian's Chromium: a run outlives its browser tab. A page reloaded while the run streams,
while the agent's python code holds the kernel's main thread, or while a tool waits for approval gets the run back:
the status bar item and the toolbar's Stop within a second of connecting (the control comm on a subshell this page
makes over the control channel), and the live widget in its cell, drawn from the kernel's state (nothing replayed
from zero; while the agent's code holds the main thread, where ipywidgets answers, once it returns or is stopped).
Stop works from the reopened page and from a second window. A kernel that dies or restarts under a widget turns it
into a "kernel gone" widget. Screenshots: test-artifacts/lab-reattach-*.png.

The notebooks are written unsaved-run style: the run's output is not in the file, as when a tab is closed before
JupyterLab autosaves, so the reloaded page has to add the widget's output back itself. They are signed (trusted), as
a notebook JupyterLab saved is: an untrusted notebook shows a re-added widget as its one-line text.

As in test_lab_extension.py, the server gets the working tree's bundle first on JUPYTER_PATH."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import nbformat
import pytest
from lab_harness import JupyterLab, notebook
from nbformat.sign import NotebookNotary
from playwright.sync_api import Locator, Page, expect

from pi_notebook.notebook._volatile import RUN_DISPLAY
from pi_notebook.notebook.widget._display import STATIC_MARKER

STATIC_NOTE = "The live widget of this run is gone with the kernel that ran it; this is its saved copy."
"""What the extension writes above a saved run's static copy (labextension/src/staticCopy.ts)."""

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("one_kernel_at_a_time")]

WAIT = 30_000  # ms; every wait is on the DOM, this is only the bound
BUSY = "import time\nfor i in range(1200):\n    print('tick', i, flush=True)\n    time.sleep(0.1)"
"""The agent's code: holds the kernel's main thread for two minutes unless stopped."""

SETUP = """\
%load_ext pi_notebook
import os
from pi_notebook.notebook import configure
from pi_notebook.kernel import python_tool
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
faux = FauxProvider(tokens_per_second=40, token_size=(1, 1))
story = "# A long story\\n\\nOnce upon a time, **an agent** kept talking. " + "And talking. " * 3000
def script(code=None):
    first = faux_assistant_message([faux_tool_call("python", {{"code": code, "timeout": 120}})], "toolUse")
    faux.set_responses([first if code else faux_assistant_message(story), faux_assistant_message("done")])
configure(model=faux.model, stream_fn=faux.stream, tools=[python_tool()],
          settings={{"tools": {{"approval": {approval!r}}}}})
print("kernel pid", os.getpid())
"""

TIMING = """
window.__pi = {};
const Native = window.WebSocket;
window.WebSocket = class extends Native {
  constructor(url, protocols) {
    super(url, protocols);
    if (String(url).includes('/channels') && window.__pi.open === undefined) {
      this.addEventListener('open', () => { window.__pi.open ??= performance.now(); });
    }
  }
};
new MutationObserver(() => {
  const item = document.querySelector('.jp-StatusBar-Widget .pi-StatusItem');
  if (window.__pi.status === undefined && item && item.textContent.startsWith('pi: running')) {
    window.__pi.status = performance.now();
  }
}).observe(document, { childList: true, subtree: true, characterData: true });
"""
"""Records in the page when the kernel's websocket opened and when the status bar first showed a running run."""


def setup(approval: str = "auto") -> str:
    return SETUP.format(approval=approval)


def trusted(path: Path) -> Path:
    """Sign the notebook, as JupyterLab does when it saves one (the server checks the same signature store)."""
    NotebookNotary().sign(nbformat.read(path, as_version=4))
    return path


def status(page: Page) -> Locator:
    return page.locator(".jp-StatusBar-Widget .pi-StatusItem")


def toolbar_stop(page: Page) -> Locator:
    return page.locator(".jp-NotebookPanel-toolbar .pi-StopAgentRun")


def cell(page: Page, index: int) -> Locator:
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def settled(view: Locator) -> Locator:
    return view.locator(".pi-log-agent_settled .pi-log-detail")


def open_setup(lab: JupyterLab, cells: list[str], name: str) -> Page:
    path = trusted(notebook(cells, lab.root / f"{name}.ipynb"))
    page = lab.open(path, workspace=name, prepare=lambda page: page.add_init_script(TIMING))
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    expect(status(page)).to_have_text("pi: idle", timeout=WAIT)
    return page


def reload(page: Page) -> None:
    page.reload()
    page.wait_for_selector(".jp-NotebookPanel", timeout=60_000)


def second_window(lab: JupyterLab, page: Page, name: str) -> Page:
    other = lab.browser.new_page(viewport={"width": 1500, "height": 1000})
    other.goto(lab.url(lab.root / f"{name}.ipynb", workspace=f"{name}-2"))
    other.wait_for_selector(".jp-NotebookPanel", timeout=60_000)
    return other


def test_a_page_reloaded_while_the_agents_code_runs_gets_the_run_back_and_stops_it(lab: JupyterLab) -> None:
    cells = [setup(), f"script({BUSY!r})\n%pi crunch", f"script({BUSY!r})\n%pi crunch again"]
    page = open_setup(lab, cells, "busy")
    lab.run_cell(page, 1)
    expect(cell(page, 1).locator(".pi-tool-output")).to_contain_text("tick", timeout=WAIT)  # the code holds the thread

    reload(page)
    expect(status(page)).to_have_text("pi: running tool", timeout=WAIT)
    expect(toolbar_stop(page)).to_be_visible()
    seen = page.evaluate("window.__pi.status - window.__pi.open")
    print(f"reloaded page: status bar back {seen:.0f} ms after the kernel websocket opened")  # noqa: T201
    # The run's output was not in the file: the page added it back to its cell. ipywidgets draws it once the
    # kernel's main thread answers (the agent's code holds it), so nothing of the widget yet.
    expect(cell(page, 1).locator(".jp-OutputArea-output")).to_have_count(1, timeout=WAIT)
    assert page.locator(".pi-run-view").count() == 0
    lab.screenshot(page, "lab-reattach-busy-reloaded.png")

    # A second window on the same notebook gets it too, and stops it with the shortcut.
    other = second_window(lab, page, "busy")
    expect(status(other)).to_have_text("pi: running tool", timeout=WAIT)
    other.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
    other.keyboard.press("Escape")
    other.keyboard.press("Control+Period")
    expect(status(other)).to_have_text("pi: settled (aborted)", timeout=WAIT)
    expect(status(page)).to_have_text("pi: settled (aborted)", timeout=WAIT)

    # The main thread is free: the reloaded page's widget is drawn from the kernel's state, the whole run so far.
    view = cell(page, 1).locator(".pi-run-view")
    expect(settled(view)).to_have_text("aborted=true", timeout=WAIT)
    output = view.locator(".pi-tool-output")
    expect(output).to_contain_text("tick")
    expect(output).to_contain_text("Interrupted: Stopped by the user")
    assert "No such comm" not in output.inner_text()  # the kernel's log about the old page's comms is not the code's
    assert view.locator(".pi-log-label", has_text=re.compile("^agent_start$")).count() == 1  # not run again
    assert view.locator(".pi-msg-user").count() == 1
    lab.screenshot(page, "lab-reattach-busy-stopped.png")
    other.close()

    # The reopened page stops the next run with its toolbar button.
    lab.run_cell(page, 2)
    expect(status(page)).to_have_text("pi: running tool", timeout=WAIT)
    second = cell(page, 2).locator(".pi-run-view")
    expect(second.locator(".pi-tool-output")).to_contain_text("tick", timeout=WAIT)
    toolbar_stop(page).click()
    expect(settled(second)).to_have_text("aborted=true", timeout=WAIT)
    expect(status(page)).to_have_text("pi: settled (aborted)", timeout=WAIT)


def test_a_page_reloaded_mid_stream_shows_the_live_widget_from_the_kernels_state(lab: JupyterLab) -> None:
    page = open_setup(lab, [setup(), "script()\n%pi tell me a long story"], "stream")
    lab.run_cell(page, 1)
    body = cell(page, 1).locator(".pi-msg-assistant .pi-msg-body")
    expect(body.locator("h1")).to_have_text("A long story", timeout=WAIT)
    expect(body).to_contain_text("And talking. And talking.", timeout=WAIT)
    before = len(body.inner_text())

    reload(page)
    expect(status(page)).to_have_text("pi: streaming", timeout=WAIT)
    view = cell(page, 1).locator(".pi-run-view")
    body = view.locator(".pi-msg-assistant .pi-msg-body")
    expect(body.locator("h1")).to_have_text("A long story", timeout=WAIT)
    # The first paint of the reopened widget holds what had streamed before the reload (the kernel's snapshot),
    # and it goes on streaming.
    page.wait_for_function("([el, n]) => el.innerText.length > n", arg=[body.element_handle(), before])
    grown = len(body.inner_text())
    page.wait_for_function("([el, n]) => el.innerText.length > n", arg=[body.element_handle(), grown])
    assert view.locator(".pi-log-label", has_text=re.compile("^agent_start$")).count() == 1
    lab.screenshot(page, "lab-reattach-stream-reloaded.png")

    view.locator("button.pi-run-stop").click()
    expect(settled(view)).to_have_text("aborted=true", timeout=WAIT)
    expect(status(page)).to_have_text("pi: settled (aborted)", timeout=WAIT)
    # The output the page added back is the run's whole output: saved, it holds the static copy (issue 37 item 8).
    [output] = save(page, lab.root / "stream.ipynb").cells[1].outputs
    assert output.data["text/html"].startswith(STATIC_MARKER) and "tell me a long story" in output.data["text/html"]
    assert output.metadata == RUN_DISPLAY


def save(page: Page, path: Path) -> nbformat.NotebookNode:
    """Save with Ctrl+S and read the file once JupyterLab says it is saved."""
    page.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    page.wait_for_function("() => !document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty')")
    notebook: nbformat.NotebookNode = nbformat.read(path, as_version=4)
    return notebook


def test_after_a_kernel_restart_and_a_reload_a_saved_run_shows_its_static_copy(lab: JupyterLab) -> None:
    """The widget's model is gone with the kernel: the output shows the run's static copy, not ipywidgets' "Error
    displaying widget: model not found" (issue 37 item 8)."""
    reply = "Hello from a run whose kernel is gone."
    cells = [setup(), f"faux.set_responses([faux_assistant_message({reply!r})])\nrun = %pi say hello", "await run"]
    page = open_setup(lab, cells, "restarted")
    lab.run_cell(page, 1)
    lab.run_cell(page, 2)
    lab.wait_idle(page, 2)
    expect(cell(page, 1).locator(".pi-run-view .pi-msg-assistant")).to_contain_text(reply, timeout=WAIT)
    save(page, lab.root / "restarted.ipynb")
    page.get_by_role("menuitem", name="Kernel").click()
    page.get_by_role("menuitem", name=re.compile(r"^Restart Kernel…")).click()
    page.locator(".jp-Dialog .jp-mod-accept", has_text="Restart").click()
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)
    reload(page)
    output = cell(page, 1).locator(".jp-OutputArea-output")
    expect(output).to_contain_text(STATIC_NOTE, timeout=WAIT)
    expect(output).to_contain_text(reply)
    expect(output).not_to_contain_text("Error displaying widget")
    lab.screenshot(page, "lab-reattach-static-copy.png")


def test_a_page_reloaded_while_a_tool_waits_for_approval_answers_it(lab: JupyterLab) -> None:
    code = "print('approved and ran')"
    page = open_setup(lab, [setup(approval="ask"), f"script({code!r})\n%pi print something"], "approval")
    lab.run_cell(page, 1)
    expect(cell(page, 1).locator(".pi-approval")).to_be_visible(timeout=WAIT)
    expect(status(page)).to_have_text("pi: awaiting approval", timeout=WAIT)

    reload(page)
    expect(status(page)).to_have_text("pi: awaiting approval", timeout=WAIT)
    view = cell(page, 1).locator(".pi-run-view")
    box = view.locator(".pi-approval")
    expect(box).to_be_visible(timeout=WAIT)
    expect(box).to_contain_text(code)
    lab.screenshot(page, "lab-reattach-approval-reloaded.png")
    box.locator("button.pi-approve-run").click()
    expect(settled(view)).to_have_text("aborted=false", timeout=WAIT)
    expect(view.locator(".pi-tool-output")).to_contain_text("approved and ran")
    expect(status(page)).to_have_text("pi: settled", timeout=WAIT)


def gone_banner(view: Locator) -> str:
    return str(view.evaluate("view => getComputedStyle(view, '::before').content"))


def stop_clickable(view: Locator) -> bool:
    return bool(view.locator("button.pi-run-stop").evaluate("b => getComputedStyle(b).pointerEvents !== 'none'"))


def kernel_pid(page: Page) -> int:
    text = cell(page, 0).locator(".jp-OutputArea").inner_text()
    match = re.search(r"kernel pid (\d+)", text)
    assert match, text
    return int(match[1])


def test_a_widget_whose_kernel_died_or_restarted_says_kernel_gone(lab: JupyterLab) -> None:
    cells = [setup(), "script()\n%pi tell me a long story", "script()\n%pi and another one"]
    page = open_setup(lab, cells, "gone")
    lab.run_cell(page, 1)
    first = cell(page, 1).locator(".pi-run-view")
    expect(first.locator(".pi-run-state")).to_have_text("streaming", timeout=WAIT)
    assert gone_banner(first) == "none" and stop_clickable(first)

    os.kill(kernel_pid(page), signal.SIGKILL)  # the server restarts it: a new process, without pi_notebook
    dialog = page.locator(".jp-Dialog", has_text="appears to have died")
    dialog.locator(".jp-mod-accept").click(timeout=WAIT)  # JupyterLab says so; the widget must say it too
    expect(status(page)).to_be_hidden(timeout=WAIT)
    expect(toolbar_stop(page)).to_be_hidden()
    page.wait_for_function("view => getComputedStyle(view, '::before').content.includes('Kernel gone')",
                           arg=first.element_handle(), timeout=WAIT)  # fmt: skip
    assert not stop_clickable(first)
    assert first.locator(".pi-run-state").evaluate("s => getComputedStyle(s, '::after').content") == '"kernel gone"'
    lab.screenshot(page, "lab-reattach-kernel-died.png")

    # The new kernel's run is live; the dead one's widget stays gone.
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    lab.run_cell(page, 2)
    second = cell(page, 2).locator(".pi-run-view")
    expect(second.locator(".pi-run-state")).to_have_text("streaming", timeout=WAIT)
    assert gone_banner(second) == "none" and stop_clickable(second)
    assert "Kernel gone" in gone_banner(first)

    # A restart from the Kernel menu ends that one too.
    page.get_by_role("menuitem", name="Kernel").click()
    page.get_by_role("menuitem", name=re.compile(r"^Restart Kernel…")).click()
    page.locator(".jp-Dialog .jp-mod-accept", has_text="Restart").click()
    page.wait_for_function("view => getComputedStyle(view, '::before').content.includes('Kernel gone')",
                           arg=second.element_handle(), timeout=WAIT)  # fmt: skip
    assert not stop_clickable(second)
    lab.screenshot(page, "lab-reattach-kernel-restarted.png")
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)  # back, for the teardown
