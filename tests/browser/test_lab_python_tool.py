"""In real JupyterLab with Debian's Chromium, the agent's ``python`` tool as a person sees it: a click on **Run** in
the approval box runs the call (the variable it makes is there in the next cell); its prints and rich outputs show
in the tool's panel while the code still runs (``clear_output()`` takes the rich ones away); code stuck in a C call
after Stop is shown as such on the panel, the widget's status line and JupyterLab's status bar until it returns.
Every wait is on the DOM (the agent's code itself waits for a file the test makes once the page shows what it
must). Screenshots: test-artifacts/lab-python-*.png.

As in test_lab_python_stop.py, the server gets the working tree's bundle first on JUPYTER_PATH."""

from __future__ import annotations

import os
import re

import pytest
from lab_harness import JupyterLab, notebook
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.timeout(300)

WAIT = 30_000  # ms; every wait is on the DOM, this is only the bound
STUCK = "waiting for the code to return to Python"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
"""A 1x1 PNG, in base64."""


def setup(code: str, approval: str = "auto") -> str:
    """A cell that makes the faux model call ``python`` with ``code``, then answer "done"."""
    return (
        "%load_ext pi_notebook\n"
        "from pi_notebook.notebook import configure\n"
        "from pi_notebook.kernel import python_tool\n"
        "from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call\n"
        f"call = faux_tool_call('python', {{'code': {code!r}, 'timeout': 120}}, id='py-1')\n"
        "faux = FauxProvider(token_size=(1, 1))\n"
        "faux.set_responses([faux_assistant_message([call], 'toolUse'), faux_assistant_message('done')])\n"
        "configure(model=faux.model, stream_fn=faux.stream, tools=[python_tool()],\n"
        f"          settings={{'tools': {{'approval': {approval!r}}}}})\n"
    )


def start(lab: JupyterLab, cells: list[str], name: str) -> Page:
    """Open a notebook of ``cells``, run the setup cell and the ``%pi`` cell (cell 1)."""
    path = notebook(cells, lab.root / f"{name}.ipynb")
    page = lab.open(path, workspace=path.stem)
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    expect(page.locator(".jp-StatusBar-Widget .pi-StatusItem")).to_have_text("pi: idle", timeout=WAIT)
    lab.run_cell(page, 1)
    return page


def next_cell_prints(lab: JupyterLab, page: Page, index: int, text: str) -> None:
    lab.run_cell(page, index)
    lab.wait_idle(page, index)
    expect(page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea")).to_contain_text(text)


def test_run_on_an_approval_runs_the_agents_code_and_its_variable_is_the_users(lab: JupyterLab) -> None:
    code = "made_by_agent = 6 * 7\nprint('made it')"
    cells = [setup(code, approval="ask"), "%pi make a variable", "print('agent made', made_by_agent)"]
    page = start(lab, cells, "approve")
    view = page.locator(".pi-run-view").first
    box = view.locator(".pi-approval")
    expect(box).to_be_visible(timeout=WAIT)
    expect(box).to_contain_text("Allow python?")
    expect(box).to_contain_text("made_by_agent = 6 * 7")
    expect(page.locator(".jp-StatusBar-Widget .pi-StatusItem")).to_have_text("pi: awaiting approval", timeout=WAIT)
    expect(view.locator(".pi-run-state")).to_have_text("awaiting approval")
    lab.screenshot(page, "lab-python-approval.png")
    box.locator("button.pi-approve-run").click()
    expect(box).to_be_hidden(timeout=WAIT)
    expect(view.locator(".pi-tool.pi-tool-ok .pi-tool-output")).to_have_text("made it", timeout=WAIT)
    expect(view.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text("aborted=false", timeout=WAIT)
    next_cell_prints(lab, page, 2, "agent made 42")


def test_prints_and_rich_outputs_show_in_the_panel_while_the_code_runs(lab: JupyterLab) -> None:
    flag = lab.root / "live-go-on"
    code = (
        "import base64, pathlib, time\n"
        "from IPython.display import HTML, Image, clear_output, display\n"
        "print('live line')\n"
        "display(HTML('<table><tr><td>cell</td></tr></table>'"
        " '<img src=x onerror=\"document.body.dataset.pwned = 1\">'\n"
        " '<script>document.body.dataset.pwned = 1</script>'))\n"
        f"png = base64.b64decode({PNG!r})\n"
        "display(Image(data=png, format='png'))\n"
        f"while not pathlib.Path({str(flag)!r}).exists():\n"
        "    time.sleep(0.01)\n"
        "print('after the wait')\n"
        "clear_output(wait=True)\n"
        "display(HTML('<b>after the clear</b>'))"
    )
    page = start(lab, [setup(code), "%pi show me", "print('next', 6 * 7)"], "live")
    view = page.locator(".pi-run-view").first
    panel = view.locator(".pi-tool").first
    expect(panel.locator(".pi-tool-output")).to_have_text("live line\n", timeout=WAIT)
    expect(panel.locator(".pi-tool-displays .pi-tool-html td")).to_have_text("cell", timeout=WAIT)
    image = panel.locator(".pi-tool-displays img.pi-tool-image")
    expect(image).to_have_attribute("src", f"data:image/png;base64,{PNG}", timeout=WAIT)
    # the code is still running: no result yet, and the run is in its tool
    expect(panel).not_to_have_class(re.compile(r"\bpi-tool-(ok|error)\b"))
    assert panel.locator(".pi-tool-result").inner_text() == ""
    expect(view.locator(".pi-run-state")).to_have_text("running tool")
    lab.screenshot(page, "lab-python-live.png")
    flag.touch()
    expect(panel.locator(".pi-tool-result")).to_have_text("ok", timeout=WAIT)
    expect(panel.locator(".pi-tool-output")).to_contain_text("after the wait")
    # clear_output() took the table and the image away; what came after it stays after the end
    expect(panel.locator(".pi-tool-displays > *")).to_have_count(1)
    expect(panel.locator(".pi-tool-displays")).to_have_text("after the clear")
    expect(view.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text("aborted=false", timeout=WAIT)
    assert page.evaluate("document.body.dataset.pwned") is None  # the HTML was sanitised
    next_cell_prints(lab, page, 2, "next 42")


def test_code_stuck_after_stop_is_shown_until_it_returns(lab: JupyterLab) -> None:
    """Every signal blocked and the code in one C call (a read from a pipe nobody writes yet): no interrupt can end
    it until the call returns, when the test writes to the pipe. (Python code with SIGINT blocked is ended anyway:
    the escalation's SIGURG and trace reach it, tests/notebook/test_python_stop_escalation.py.)"""
    pipe = lab.root / "stuck-pipe"
    os.mkfifo(pipe)
    code = (
        "import os, signal\n"
        "print('working')\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())\n"
        "try:\n"
        f"    fd = os.open({str(pipe)!r}, os.O_RDONLY)\n"
        "    os.read(fd, 1)\n"
        "    os.close(fd)\n"
        "finally:\n"
        "    signal.pthread_sigmask(signal.SIG_UNBLOCK, signal.valid_signals())\n"
        "print('not reached')"
    )
    page = start(lab, [setup(code), "%pi block", "print('next', 6 * 7)"], "stuck")
    view = page.locator(".pi-run-view").first
    panel = view.locator(".pi-tool").first
    expect(panel.locator(".pi-tool-output")).to_have_text("working\n", timeout=WAIT)
    stop = view.locator("button.pi-run-stop")
    stop.scroll_into_view_if_needed()
    stop.click()
    expect(panel.locator(".pi-tool-note")).to_have_text(STUCK, timeout=WAIT)
    expect(view.locator(".pi-run-state")).to_have_text(f"running tool · {STUCK}")
    status = page.locator(".jp-StatusBar-Widget .pi-StatusItem")
    expect(status).to_have_text(f"pi: running tool, {STUCK}", timeout=WAIT)  # pushed while the loop is blocked
    assert view.locator(".pi-log-agent_settled").count() == 0  # not settled while the code runs
    lab.screenshot(page, "lab-python-stuck.png")
    with open(pipe, "wb") as writer:  # the code's read returns
        writer.write(b"x")
    expect(view.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text("aborted=true", timeout=WAIT)
    expect(panel.locator(".pi-tool-note")).to_be_hidden()
    expect(view.locator(".pi-run-state")).to_have_text("aborted")
    expect(status).to_have_text("pi: settled (aborted)", timeout=WAIT)
    expect(panel.locator(".pi-tool-output")).to_contain_text("Interrupted: Stopped by the user")
    next_cell_prints(lab, page, 2, "next 42")
