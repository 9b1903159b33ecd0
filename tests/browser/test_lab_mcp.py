"""MCP tools in real JupyterLab with Debian's Chromium: the SDK-written test server added with ``%pi mcp add``; the
approval box for a tool that changes things (its preview names the server, and **Always for MCP server test** lets
the server's next call run without asking), and the notebook toolbar's Stop ending a call the server never answers
and ignores the cancellation of. Screenshots: test-artifacts/lab-mcp-approval.png, lab-mcp-stopped.png."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lab_harness import JupyterLab, notebook
from mcp_helpers import SERVER
from playwright.sync_api import expect

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("one_kernel_at_a_time")]

WAIT = 30_000


def setup(calls: str) -> str:
    return (
        "%load_ext pi_notebook\n"
        "from pi_notebook.notebook import configure\n"
        "from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call\n"
        "faux = FauxProvider(token_size=(64, 64))\n"
        f"faux.set_responses([*(faux_assistant_message([c], 'toolUse') for c in {calls}), "
        "faux_assistant_message('done')])\n"
        "configure(model=faux.model, stream_fn=faux.stream, tools=[])\n"
    )


def add_line(notes: Path) -> str:
    return f"%pi mcp add test --env MCP_TEST_NOTES={notes} -- {sys.executable} {SERVER}"


TIME_FROM_CLICK_TO_SETTLED = """
(view) => {
  window.piSettled = new Promise((resolve, reject) => {
    let pressed = null;  // the toolbar's button acts on the mouse going down
    document.addEventListener('mousedown', () => { pressed = performance.now(); }, {capture: true, once: true});
    const observer = new MutationObserver(() => {
      if (pressed !== null && view.querySelector('.pi-log-agent_settled')) {
        observer.disconnect();
        resolve(performance.now() - pressed);
      }
    });
    observer.observe(view, {childList: true, subtree: true});
    setTimeout(() => { observer.disconnect(); reject(new Error('no agent_settled within 60 s')); }, 60000);
  });
}
"""


def test_a_changing_mcp_tool_asks_and_always_covers_the_server(lab: JupyterLab, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    calls = (
        "[faux_tool_call('mcp__test__note', {'text': 'from the browser'}), "
        "faux_tool_call('mcp__test__note', {'text': 'again'})]"
    )
    path = notebook([setup(calls), add_line(notes), "%pi take notes"], lab.root / "mcp-approval.ipynb")
    page = lab.open(path, workspace=path.stem)
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    lab.run_cell(page, 1)
    lab.wait_idle(page, 1)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
    expect(cell.locator(".jp-OutputArea")).to_contain_text("pi: MCP server test: ready", timeout=WAIT)
    lab.run_cell(page, 2)
    box = page.locator(".pi-run-view .pi-approval").first
    expect(box).to_be_visible(timeout=WAIT)
    expect(box).to_contain_text("Allow mcp__test__note?")
    expect(box.locator("pre")).to_contain_text("note on MCP server test")
    expect(box.locator("pre")).to_contain_text('"text": "from the browser"')
    always = box.locator("button.pi-approve-always")
    expect(always).to_have_text("Always for MCP server test")
    lab.screenshot(page, "lab-mcp-approval.png")
    always.click()
    view = page.locator(".pi-run-view").first
    expect(view.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text("aborted=false", timeout=WAIT)
    outputs = view.locator(".pi-tool.pi-tool-ok .pi-tool-output")
    expect(outputs.nth(0)).to_contain_text("noted (1 notes)")
    expect(outputs.nth(1)).to_contain_text("noted (2 notes)")
    asked = [text for text in view.locator(".pi-log-detail").all_inner_texts() if "waiting for Run" in text]
    assert asked == ["mcp__test__note: waiting for Run / Skip / Always"]  # the second call did not ask
    assert notes.read_text() == "from the browser\nagain\n"


def test_the_toolbar_stop_ends_an_mcp_call_the_server_never_answers(lab: JupyterLab, tmp_path: Path) -> None:
    calls = "[faux_tool_call('mcp__test__hang_deaf', {})]"
    path = notebook(
        [setup(calls), add_line(tmp_path / "n.txt"), "%pi ask the slow server"], lab.root / "mcp-stop.ipynb"
    )
    page = lab.open(path, workspace=path.stem)
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    lab.run_cell(page, 1)
    lab.wait_idle(page, 1)
    status = page.locator(".jp-StatusBar-Widget .pi-StatusItem")
    lab.run_cell(page, 2)
    view = page.locator(".pi-run-view").first
    expect(status).to_have_text("pi: running tool", timeout=WAIT)
    expect(view.locator(".pi-tool .pi-tool-output")).to_contain_text("started", timeout=WAIT)  # the server has it
    button = page.locator(".jp-NotebookPanel-toolbar .pi-StopAgentRun")
    expect(button).to_be_visible()
    page.evaluate(TIME_FROM_CLICK_TO_SETTLED, view.element_handle())
    button.click()
    seen = page.evaluate("window.piSettled")
    expect(view.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text("aborted=true", timeout=WAIT)
    expect(view.locator(".pi-tool.pi-tool-error .pi-tool-output")).to_contain_text("Operation aborted")
    expect(status).to_have_text("pi: settled (aborted)", timeout=WAIT)
    lab.screenshot(page, "lab-mcp-stopped.png")
    print(f"toolbar Stop click to agent_settled during a hanging MCP call: {seen:.0f} ms")  # noqa: T201
    assert seen < 2000  # not the 2 s abort grace: the call ends at once
