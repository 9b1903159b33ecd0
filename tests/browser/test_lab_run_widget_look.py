"""Issue 37 item 18 in real JupyterLab with Debian's Chromium: what the run widget looked like to a new user.

* ``run = %pi ...`` and ``await run`` in one cell showed the transcript twice (the live widget, then the report): the
  report is folded under one line there (whole inside it);
* a horizontal scrollbar under Send / Follow up: the box and its buttons fit the widget (a guard only: at this
  viewport the layout before 6a7e129 passed it too, so the reported scrollbar is not reproduced here);
* the cell tools' panels showed their arguments as JSON where the approval box shows the code or the diff: a panel
  shows the edit as removed and added lines and the cell a call runs.

Every wait is on the DOM. Screenshots: test-artifacts/lab-look-*.png."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lab_harness import JupyterLab
from playwright.sync_api import Locator, Page, expect

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("one_kernel_at_a_time")]

WAIT = 30_000  # ms; every wait is on the DOM, this is only the bound
REPLY = "A short answer, said once."
SETUP = (
    "%load_ext pi_notebook\n"
    "from pi_notebook.notebook import configure\n"
    "from pi_notebook.kernel import cell_tools\n"
    "from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call\n"
    "faux = FauxProvider(token_size=(4, 4))\n"
    "edit = faux_tool_call('cell_edit', {'cell_id': 'work', 'edits': [{'oldText': 'before', 'newText': 'after'}]})\n"
    "run_it, run_again = (faux_tool_call('cell_run', {'cell_id': 'work'}, id=f'run-{n}') for n in (1, 2))\n"
    "faux.set_responses([faux_assistant_message([run_it], 'toolUse'), faux_assistant_message(REPLY),\n"
    "                    faux_assistant_message([edit], 'toolUse'), faux_assistant_message([run_again], 'toolUse'),\n"
    "                    faux_assistant_message('done')])\n"
    "configure(model=faux.model, stream_fn=faux.stream, tools=cell_tools(), settings={'tools': {'approval': 'ask'}})\n"
).replace("REPLY", repr(REPLY))


def write(path: Path) -> Path:
    cells = [
        ("setup", SETUP),
        ("ask", "run = %pi say something short\nawait run"),
        ("change", "%pi settings tools.approval=auto\n%pi change my cell and run it"),
        ("work", "print('before')"),
    ]
    content = {
        "cells": [
            {"id": cell_id, "cell_type": "code", "metadata": {}, "source": source, "outputs": []}
            | {"execution_count": None}
            for cell_id, source in cells
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(content))
    return path


def cell(page: Page, index: int) -> Locator:
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def test_one_transcript_per_cell_no_scrollbar_and_cell_tool_panels_show_the_change(lab: JupyterLab) -> None:
    page = lab.open(write(lab.root / "look.ipynb"), workspace="look")
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    expect(page.locator(".jp-StatusBar-Widget .pi-StatusItem")).to_have_text("pi: idle", timeout=WAIT)
    lab.run_cell(page, 1)
    # the run asks first, in its widget: the page has drawn it before the run settles (a faux reply alone can
    # settle before any page draws the widget, and the report is then whole: nothing is shown above it)
    cell(page, 1).locator(".pi-approval button.pi-approve-run").click(timeout=WAIT)
    lab.wait_idle(page, 1)
    outputs = cell(page, 1).locator(".jp-OutputArea")
    folded = outputs.locator("details.pi-report-folded")
    expect(folded.locator("summary")).to_have_text(
        "Run 1 — settled: the transcript and event log, as in the widget above", timeout=WAIT
    )
    expect(cell(page, 1).locator(".pi-run-view")).to_contain_text(REPLY, timeout=WAIT)  # the widget drew it
    assert outputs.inner_text().count(REPLY) == 1  # the widget's; the report's is folded away
    folded.locator("summary").click()
    assert outputs.inner_text().count(REPLY) == 2  # one click away
    box = cell(page, 1).locator(".pi-run-queue-box")
    expect(box).to_be_visible()
    assert box.evaluate("b => b.scrollWidth <= b.clientWidth"), "the box under the transcript scrolls sideways"
    whole = cell(page, 1).locator(".pi-run-view")
    assert whole.evaluate("v => v.scrollWidth <= v.clientWidth"), "the run's view scrolls sideways"
    lab.screenshot(page, "lab-look-one-transcript.png")

    lab.run_cell(page, 2)
    view = cell(page, 2).locator(".pi-run-view")
    expect(view.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text("aborted=false", timeout=WAIT)
    previews = view.locator(".pi-tool .pi-tool-preview")
    expect(previews.nth(0)).to_have_text("cell work\n\n- before\n+ after")
    expect(previews.nth(1)).to_have_text("run cell work")
    expect(cell(page, 1).locator(".pi-run-view .pi-tool .pi-tool-preview").first).to_have_text("run cell work")
    assert '"cell_id"' not in view.locator(".pi-tool").first.inner_text()  # no JSON in sight
    lab.screenshot(page, "lab-look-cell-tool-panels.png")
