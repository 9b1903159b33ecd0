"""In real JupyterLab with Debian's Chromium: the agent's ``python`` tool runs a busy loop on the kernel's main
thread, and a click on the run widget's own Stop button ends it. That click's ipywidgets comm message waits for
the main thread; the pi-notebook extension forwards it over the control comm (served on a kernel subshell),
which interrupts the code at once. Screenshot: test-artifacts/lab-python-stopped.png.

As in test_lab_extension.py, the server gets the working tree's bundle first on JUPYTER_PATH."""

from __future__ import annotations

import pytest
from lab_harness import JupyterLab, notebook
from playwright.sync_api import expect

pytestmark = pytest.mark.timeout(300)

WAIT = 30_000  # ms; every wait is on the DOM, this is only the bound

SETUP = """\
%load_ext pi_notebook
from pi_notebook.notebook import configure
from pi_notebook.kernel import python_tool
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
busy = "print('working')\\nn = 0\\nwhile True:\\n    n += 1"
call = faux_tool_call("python", {"code": busy, "timeout": 120}, id="busy-1")
faux = FauxProvider(token_size=(1, 1))
faux.set_responses([faux_assistant_message([call], "toolUse"), faux_assistant_message("never sent")])
configure(model=faux.model, stream_fn=faux.stream, tools=[python_tool()], settings={"tools": {"approval": "auto"}})
"""


CLICK_AND_TIME_SETTLED = """
(button) => new Promise((resolve, reject) => {
  const view = button.closest('.pi-run-view');
  const started = performance.now();
  const done = () => view.querySelector('.pi-log-agent_settled');
  const observer = new MutationObserver(() => {
    if (done()) { observer.disconnect(); resolve(performance.now() - started); }
  });
  observer.observe(view, {childList: true, subtree: true});
  setTimeout(() => { observer.disconnect(); reject(new Error('no agent_settled within 60 s')); }, 60000);
  button.click();
})
"""


def test_the_widgets_stop_ends_the_agents_busy_loop_and_the_next_cell_runs(lab: JupyterLab) -> None:
    path = notebook([SETUP, "%pi crunch some numbers", "print('next cell', 6 * 7)"], lab.root / "busy.ipynb")
    page = lab.open(path, workspace=path.stem)
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    status = page.locator(".jp-StatusBar-Widget .pi-StatusItem")
    expect(status).to_have_text("pi: idle", timeout=WAIT)  # the control comm is open
    lab.run_cell(page, 1)
    view = page.locator(".pi-run-view").first
    expect(status).to_have_text("pi: running tool", timeout=WAIT)  # the busy loop runs on the main thread now
    # The code's first print is live in its panel: the busy loop is running (under load, "running tool" can show
    # before the code has printed, and a Stop then would cut it before "working").
    expect(view.locator(".pi-tool .pi-tool-output")).to_contain_text("working", timeout=WAIT)
    stop = view.locator("button.pi-run-stop")
    expect(stop).to_be_enabled(timeout=WAIT)
    stop.scroll_into_view_if_needed()
    # Click in the page and time, there, until the event log shows agent_settled (a MutationObserver).
    seen = page.evaluate(CLICK_AND_TIME_SETTLED, stop.element_handle())
    settled = view.locator(".pi-log-agent_settled .pi-log-detail")
    expect(settled).to_have_text("aborted=true", timeout=WAIT)
    output = view.locator(".pi-tool.pi-tool-error .pi-tool-output")
    expect(output).to_contain_text("KeyboardInterrupt", timeout=WAIT)
    expect(output).to_contain_text("Interrupted: Stopped by the user")
    expect(output).to_contain_text("working")
    expect(status).to_have_text("pi: settled (aborted)", timeout=WAIT)
    lab.screenshot(page, "lab-python-stopped.png")
    print(f"widget Stop click to agent_settled shown in the event log: {seen:.0f} ms")  # noqa: T201
    lab.run_cell(page, 2)
    lab.wait_idle(page, 2)
    expect(page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-OutputArea")).to_contain_text("next cell 42")
