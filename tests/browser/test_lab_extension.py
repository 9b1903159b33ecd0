"""The pi-notebook JupyterLab extension in real JupyterLab with Debian's Chromium: the notebook toolbar's
"Stop agent run" button, the Accel+. shortcut and the status bar item, through the ``pi_notebook.control``
comm — while a cell awaits the run, with the run widget collapsed or never rendered, during a retry, and
from a page that connects while the kernel is busy. Screenshots land in test-artifacts/lab-ext-*.png.

The server is given the working tree's built bundle (``pi_notebook/labextension``) first on JUPYTER_PATH,
so this tests what would ship, whether or not the installed copy is current."""

from __future__ import annotations

import re

import pytest
from lab_harness import JupyterLab, notebook, wait_for_log
from playwright.sync_api import Locator, Page, expect

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("one_kernel_at_a_time")]

WAIT = 30_000  # ms; every wait is on the DOM, this is only the bound

SETUP = """\
%load_ext pi_notebook
from pi_notebook.notebook import configure
from pi_notebook.session import Settings
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
faux = FauxProvider(tokens_per_second=40, token_size=(1, 1))
story = "# A long story\\n\\nOnce upon a time, **an agent** kept talking. " + "And talking. " * 2000
faux.set_responses([{responses}])
configure(model=faux.model, stream_fn=faux.stream,
          settings=Settings(retry={{"base_delay_ms": 30_000}}, compaction={{"enabled": False}}))
"""
STORY = "faux_assistant_message(story)"
FAILURE = 'faux_assistant_message([], "error", "503 service unavailable")'


def setup_cell(*responses: str) -> str:
    return SETUP.format(responses=", ".join(responses))


def status(page: Page) -> Locator:
    return page.locator(".jp-StatusBar-Widget .pi-StatusItem")


def stop_button(page: Page) -> Locator:
    return page.locator(".jp-NotebookPanel-toolbar .pi-StopAgentRun")


def event_log_settled(scope: Page | Locator) -> Locator:
    return scope.locator(".pi-log-agent_settled .pi-log-detail")


def test_toolbar_button_then_shortcut_stop_two_runs_and_the_status_bar_follows(lab: JupyterLab) -> None:
    path = notebook(
        [setup_cell(STORY, STORY), "%pi tell me a long story", "%pi and another one"], lab.root / "two.ipynb"
    )
    page = lab.open(path, workspace=path.stem)
    expect(status(page)).to_be_hidden()  # no pi in this kernel yet
    expect(stop_button(page)).to_be_hidden()
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    expect(status(page)).to_have_text("pi: idle", timeout=WAIT)

    # first run: the toolbar button
    lab.run_cell(page, 1)
    expect(status(page)).to_have_text("pi: streaming", timeout=WAIT)
    button = stop_button(page)
    expect(button).to_be_visible()
    expect(button).to_have_text("Stop agent run")
    first = page.locator(".pi-run-view").nth(0)
    first.locator(".pi-msg-assistant .pi-msg-body h1").wait_for(timeout=WAIT)
    lab.screenshot(page, "lab-ext-toolbar-streaming.png")
    button.click()
    expect(event_log_settled(first)).to_have_text("aborted=true", timeout=WAIT)
    expect(status(page)).to_have_text("pi: settled (aborted)", timeout=WAIT)
    expect(button).to_be_hidden()
    wait_for_log(page, 0, ["agent_end", "agent_settled"])
    lab.screenshot(page, "lab-ext-toolbar-stopped.png")

    # second run: the shortcut, pressed while a cell's editor has the focus
    lab.run_cell(page, 2)
    second = page.locator(".pi-run-view").nth(1)
    expect(status(page)).to_have_text("pi: streaming", timeout=WAIT)
    expect(stop_button(page)).to_be_visible()
    page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".cm-content").click()
    expect(page.locator(".jp-Notebook.jp-mod-editMode")).to_have_count(1)
    lab.screenshot(page, "lab-ext-shortcut-streaming.png")
    page.keyboard.press("Control+Period")
    expect(event_log_settled(second)).to_have_text("aborted=true", timeout=WAIT)
    expect(status(page)).to_have_text("pi: settled (aborted)", timeout=WAIT)
    expect(stop_button(page)).to_be_hidden()
    assert page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".cm-content").inner_text() == "%pi and another one"
    lab.screenshot(page, "lab-ext-shortcut-stopped.png")


def test_stop_while_a_cell_awaits_the_run_with_the_widget_output_collapsed(lab: JupyterLab) -> None:
    path = notebook([setup_cell(STORY), "%pi tell me a long story", "%pi wait"], lab.root / "collapsed.ipynb")
    page = lab.open(path, workspace=path.stem)
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    lab.run_cell(page, 1)
    lab.wait_idle(page, 1)
    run_cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
    run_cell.locator(".pi-run-view").wait_for(timeout=WAIT)
    run_cell.locator(".jp-Cell-outputCollapser").click()  # collapse the widget's output
    expect(run_cell.locator(".pi-run-view")).to_be_hidden()
    lab.run_cell(page, 2)  # `%pi wait` awaits the run: the kernel stays busy
    awaiting = page.locator(".jp-Notebook .jp-Cell").nth(2)
    expect(awaiting.locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\*\]"))
    expect(page.get_by_text("Python 3 (ipykernel) | Busy")).to_be_visible()
    expect(status(page)).to_have_text("pi: streaming", timeout=WAIT)
    lab.screenshot(page, "lab-ext-awaiting-collapsed.png")
    stop_button(page).click()
    lab.wait_idle(page, 2)  # the awaiting cell returns: its report is the static event log
    report = awaiting.locator(".jp-OutputArea-output")
    expect(report).to_contain_text("agent_settled", timeout=WAIT)
    row = report.locator("tr", has_text="agent_settled")
    expect(row).to_contain_text("aborted=true")
    expect(status(page)).to_have_text("pi: settled (aborted)", timeout=WAIT)
    lab.screenshot(page, "lab-ext-awaiting-stopped.png")


def test_shortcut_stops_a_run_whose_widget_was_never_rendered(lab: JupyterLab) -> None:
    # started from Python, not by the magic (which displays the widget): a run with no view on the page
    start = "from pi_notebook.notebook import get_notebook_session\nentry = get_notebook_session()\n"
    start += "run = entry.start('story', lambda: entry.session.prompt('tell me a long story'))"
    path = notebook([setup_cell(STORY), start, "%pi events"], lab.root / "nowidget.ipynb")
    page = lab.open(path, workspace=path.stem)
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    lab.run_cell(page, 1)
    lab.wait_idle(page, 1)
    expect(status(page)).to_have_text("pi: streaming", timeout=WAIT)
    assert page.locator(".pi-run-view").count() == 0
    page.keyboard.press("Escape")  # command mode
    page.keyboard.press("Control+Period")
    expect(status(page)).to_have_text("pi: settled (aborted)", timeout=WAIT)
    lab.run_cell(page, 2)
    lab.wait_idle(page, 2)
    row = page.locator(".jp-Notebook .jp-Cell").nth(2).locator("tr", has_text="agent_settled")
    expect(row).to_contain_text("aborted=true", timeout=WAIT)
    assert page.locator(".pi-run-view").count() == 0
    lab.screenshot(page, "lab-ext-no-widget-stopped.png")


def test_status_bar_counts_a_retry_down_and_stop_ends_it(lab: JupyterLab) -> None:
    path = notebook([setup_cell(FAILURE, STORY), "run = %pi go"], lab.root / "retry.ipynb")
    page = lab.open(path, workspace=path.stem)
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    lab.run_cell(page, 1)
    item = status(page)
    expect(item).to_have_text(re.compile(r"^pi: retry in (30|29) s$"), timeout=WAIT)
    first = item.inner_text()
    expect(item).not_to_have_text(first, timeout=WAIT)  # the browser counts down
    expect(item).to_have_text(re.compile(r"^pi: retry in (29|28) s$"))
    expect(stop_button(page)).to_be_visible()
    lab.screenshot(page, "lab-ext-retry-countdown.png")
    stop_button(page).click()
    expect(item).to_have_text("pi: settled (aborted)", timeout=WAIT)
    expect(stop_button(page)).to_be_hidden()


def test_a_page_opened_while_a_cell_awaits_connects_and_stops_the_run(lab: JupyterLab) -> None:
    path = notebook([setup_cell(STORY), "%pi tell me a long story", "%pi wait"], lab.root / "reload.ipynb")
    page = lab.open(path, workspace=path.stem)
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    lab.run_cell(page, 1)
    lab.run_cell(page, 2)  # busy until the run settles
    expect(status(page)).to_have_text("pi: streaming", timeout=WAIT)
    # A second page on the same notebook connects to the busy kernel: comm_info over the control channel,
    # then a comm opened on the target's subshell.
    other = lab.browser.new_page(viewport={"width": 1500, "height": 1000})
    other.goto(lab.url(path, workspace=path.stem))
    other.wait_for_selector(".jp-NotebookPanel", timeout=60_000)
    expect(status(other)).to_have_text("pi: streaming", timeout=WAIT)
    expect(stop_button(other)).to_be_visible()
    lab.screenshot(other, "lab-ext-second-page-streaming.png")
    other.locator(".jp-Notebook").first.click(position={"x": 5, "y": 5})
    other.keyboard.press("Escape")
    other.keyboard.press("Control+Period")
    expect(status(other)).to_have_text("pi: settled (aborted)", timeout=WAIT)
    expect(status(page)).to_have_text("pi: settled (aborted)", timeout=WAIT)
    lab.wait_idle(page, 2)
    row = page.locator(".jp-Notebook .jp-Cell").nth(2).locator("tr", has_text="agent_settled")
    expect(row).to_contain_text("aborted=true", timeout=WAIT)
    lab.screenshot(other, "lab-ext-second-page-stopped.png")


def test_after_a_kernel_restart_the_extension_reconnects_when_pi_is_loaded_again(lab: JupyterLab) -> None:
    path = notebook([setup_cell(STORY), "run = %pi tell me a long story"], lab.root / "restart.ipynb")
    page = lab.open(path, workspace=path.stem)
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    expect(status(page)).to_have_text("pi: idle", timeout=WAIT)
    page.get_by_role("menuitem", name="Kernel").click()
    page.get_by_role("menuitem", name=re.compile(r"^Restart Kernel…")).click()
    page.locator(".jp-Dialog .jp-mod-accept", has_text="Restart").click()
    expect(status(page)).to_be_hidden(timeout=WAIT)  # the new kernel has not loaded pi_notebook
    expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(timeout=60_000)
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    expect(status(page)).to_have_text("pi: idle", timeout=WAIT)
    lab.run_cell(page, 1)
    expect(status(page)).to_have_text("pi: streaming", timeout=WAIT)
    page.keyboard.press("Control+Period")
    expect(status(page)).to_have_text("pi: settled (aborted)", timeout=WAIT)
    lab.screenshot(page, "lab-ext-after-restart-stopped.png")
