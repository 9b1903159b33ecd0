"""A run's **Undo run** in real JupyterLab with Debian's Chromium: a scripted faux model inserts, edits, deletes and
runs cells; a click on the settled run's Undo run puts every cell back (sources, the deleted cell in its place, the
outputs and counts the run replaced, the variables its cell bound), as one step of the notebook's undo (``z`` in
command mode takes the whole rewind back, ``Shift+Z`` does it again). A cell the user edited since raises the
Overwrite / Keep mine box, and Keep mine keeps it. A run stopped mid-cell is undone too. Every wait is on the DOM.
Screenshots: test-artifacts/lab-rewind-*.png."""

from __future__ import annotations

from pathlib import Path

import pytest
from lab_cells import BUSY, call, cell, cells, open_and_start, output_of, settled, source_of, write_notebook
from lab_harness import JupyterLab
from playwright.sync_api import Locator, Page, expect

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("one_kernel_at_a_time")]

WAIT = 30_000

SETUP = (
    "%load_ext pi_notebook\n"
    "from pi_notebook.notebook import configure\n"
    "from pi_notebook.kernel import cell_tools\n"
    "from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call\n"
    "calls = [{calls}]\n"
    "faux = FauxProvider(token_size=(1, 1))\n"
    "faux.set_responses([*(faux_assistant_message(c if isinstance(c, list) else [c], 'toolUse') for c in calls),\n"
    "                    faux_assistant_message('done')])\n"
    "configure(model=faux.model, stream_fn=faux.stream, tools=cell_tools(),\n"
    "          settings={{'tools': {{'approval': 'auto'}}, 'retry': {{'enabled': False}}}})\n"
    "prices = 'before the run'\n"
)

CALLS = [
    call("cell_insert", {"source": "print('inserted by the agent')", "after": "load"}),
    call("cell_edit", {"cell_id": "show", "edits": [{"oldText": "sum(prices)", "newText": "max(prices)"}]}),
    call("cell_delete", {"cell_id": "intro"}),
    call("cell_run", {"cell_id": "load"}),
]


def notebook(lab: JupyterLab, name: str, calls: list[str], *extra: dict[str, object]) -> Path:
    return write_notebook(
        [
            cell("setup", SETUP.format(calls=", ".join(calls))),
            cell("start", "%pi work on the prices"),
            cell("intro", "# Prices", "markdown"),
            cell("load", "prices = [3, 1, 2]; print('loaded', len(prices))"),
            cell("show", "print(sum(prices))"),
            *extra,
        ],
        lab.root / name,
    )


def undo_button(page: Page) -> Locator:
    return page.locator(".pi-run-view").first.locator(".pi-run-undo")


def rewind_log(page: Page) -> Locator:
    return page.locator(".pi-run-view").first.locator(".pi-log-rewind .pi-log-detail")


LOAD = "prices = [3, 1, 2]; print('loaded', len(prices))"
BEFORE = ["# Prices", LOAD, "print(sum(prices))"]
AGENT = [LOAD, "print('inserted by the agent')", "print(max(prices))"]


def expect_sources(page: Page, texts: list[str], start: int = 2) -> None:
    """Cells ``start``... hold ``texts`` (each waited for: the notebook draws a change a moment after its model)."""
    for offset, text in enumerate(texts):
        expect(source_of(page, start + offset)).to_have_text(text, timeout=WAIT)


def the_kernel_says(lab: JupyterLab, page: Page, code: str, index: int) -> Locator:
    """Put ``code`` in cell ``index``, run it, and return its output area."""
    source_of(page, index).click()
    page.keyboard.press("Control+a")
    page.keyboard.type(code)
    lab.run_cell(page, index)
    lab.wait_idle(page, index)
    return output_of(page, index)


def test_undo_run_puts_every_cell_back_as_one_step_of_the_notebooks_undo(lab: JupyterLab) -> None:
    path = notebook(lab, "undo.ipynb", CALLS, cell("check", ""))
    page = open_and_start(lab, path)
    settled(lab, page)
    expect(cells(page)).to_have_count(6)
    expect(output_of(page, 2)).to_have_text("loaded 3")
    expect_sources(page, AGENT)
    expect(undo_button(page)).to_be_visible()
    lab.screenshot(page, "lab-rewind-before.png")

    undo_button(page).click()
    expect(undo_button(page)).to_have_text("Undone", timeout=WAIT)
    expect(cells(page)).to_have_count(6)
    expect_sources(page, BEFORE)
    expect(output_of(page, 3)).to_have_text("")  # the outputs the run gave it are gone, as before the run
    expect(cells(page).nth(3).locator(".jp-InputPrompt")).to_have_text("[ ]:")
    expect(rewind_log(page).first).to_have_text("rewound run 1")
    expect(rewind_log(page)).to_contain_text(["cells restored: `load`, `show`"])
    expect(rewind_log(page)).to_contain_text(["variables given their objects back: `prices`"])
    lab.screenshot(page, "lab-rewind-undone.png")

    # the whole rewind is one step of the notebook's undo: Z (command mode) takes it back, Shift+Z does it again
    cells(page).nth(2).locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")
    page.keyboard.press("z")
    expect_sources(page, AGENT)
    expect(cells(page)).to_have_count(6)
    page.keyboard.press("Shift+z")
    expect_sources(page, BEFORE)
    expect(the_kernel_says(lab, page, "print(prices)", 5)).to_have_text("before the run")


def test_a_cell_the_user_edited_since_raises_the_box_and_keep_mine_keeps_it(lab: JupyterLab) -> None:
    path = notebook(lab, "conflict.ipynb", CALLS[:2])
    page = open_and_start(lab, path)
    settled(lab, page)
    editor = source_of(page, 5)
    expect(editor).to_have_text("print(max(prices))")
    editor.click()
    page.keyboard.press("End")
    page.keyboard.type("  # mine")
    page.keyboard.press("Escape")
    undo_button(page).click()
    box = page.locator(".jp-Dialog .pi-rewind-confirm")
    expect(box).to_be_visible(timeout=WAIT)
    expect(box.locator("li")).to_have_text(["cell `show`: edited since"])
    lab.screenshot(page, "lab-rewind-conflict.png")
    page.locator(".jp-Dialog button", has_text="Keep mine").click()
    expect(undo_button(page)).to_have_text("Undone", timeout=WAIT)
    expect(cells(page)).to_have_count(5)  # the inserted cell is gone
    expect(source_of(page, 4)).to_have_text("print(max(prices))  # mine")
    expect(rewind_log(page)).to_contain_text(["kept yours, changed since the run: cell `show`"])


def test_a_run_stopped_mid_cell_is_undone(lab: JupyterLab) -> None:
    calls = [CALLS[0], call("cell_run", {"cell_id": "busy"})]
    busy = cell("busy", "prices = 'bound by the busy cell'\n" + BUSY)
    path = notebook(lab, "stopped.ipynb", calls, busy)
    page = open_and_start(lab, path)
    expect(output_of(page, 6)).to_have_text("second", timeout=WAIT)
    page.locator(".jp-NotebookPanel-toolbar .pi-StopAgentRun").click()
    settled(lab, page, "aborted=true")
    expect(output_of(page, 6)).to_contain_text("KeyboardInterrupt")
    undo_button(page).click()
    expect(undo_button(page)).to_have_text("Undone", timeout=WAIT)
    expect(cells(page)).to_have_count(6)
    expect(output_of(page, 5)).to_have_text("")  # the interrupted cell's outputs: as before the run
    lab.screenshot(page, "lab-rewind-stopped.png")
    expect(the_kernel_says(lab, page, "print(prices)", 4)).to_have_text("before the run")
