"""The agent's cell tools in real JupyterLab with Debian's Chromium: a scripted faux model reads a notebook with known
cell ids, inserts a cell after one, edits one with oldText/newText, runs cells and reads their output, and is refused
a ``pi-protected`` cell; the live notebook shows each change without a reload, undo reverts the edit, and the file
the user saves has the changes. Stop during the second of three ``cell_run`` calls: that cell shows
``KeyboardInterrupt``, the third never runs, the run settles aborted and its receipt lists all three. ``cell_run``
works while the ``%pi`` cell awaits the run, and after a page reload; approval Run / Skip shows the cell's diff and
code. Every wait is on the DOM (the agent's own waits are on files the test makes once the page shows what it
must). Screenshots: test-artifacts/lab-cells-*.png.

As in test_lab_extension.py, the server gets the working tree's bundle first on JUPYTER_PATH."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from lab_cells import BUSY, call, cell, cells, open_and_start, output_of, settled, source_of, status, write_notebook
from lab_harness import JupyterLab
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("one_kernel_at_a_time")]

WAIT = 30_000  # ms; every wait is on the DOM, this is only the bound


def setup(calls: list[str], approval: str = "auto", tools: str = "cell_tools()") -> str:
    """A cell that makes the faux model make each call in turn (one per reply), then say "done"."""
    return (
        "%load_ext pi_notebook\n"
        "from pi_notebook.notebook import configure\n"
        "from pi_notebook.kernel import cell_tools\n"
        "from pi_notebook.tools import bash_tool\n"
        "from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call\n"
        f"calls = [{', '.join(calls)}]\n"
        "faux = FauxProvider(token_size=(1, 1))\n"
        "faux.set_responses([*(faux_assistant_message(c if isinstance(c, list) else [c], 'toolUse') for c in calls),\n"
        "                    faux_assistant_message('done')])\n"
        f"configure(model=faux.model, stream_fn=faux.stream, tools={tools},\n"
        f"          settings={{'tools': {{'approval': {approval!r}}}, 'retry': {{'enabled': False}}}})\n"
    )


def saved(lab: JupyterLab, page: Page, path: Path) -> dict[str, Any]:
    """Save with Ctrl+S as a user does, and read the file once JupyterLab says it is saved."""
    dirty = page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty")
    expect(dirty).to_have_count(1)  # the agent's changes are unsaved, as any change
    cells(page).first.locator(".jp-InputPrompt").click()
    page.keyboard.press("Control+s")
    expect(dirty).to_have_count(0, timeout=WAIT)
    notebook: dict[str, Any] = json.loads(path.read_text())
    return notebook


def test_the_agent_reads_inserts_edits_runs_and_is_refused_a_protected_cell_live_with_undo_and_save(
    lab: JupyterLab,
) -> None:
    calls = [
        call("notebook_read", {}),
        call("cell_insert", {"source": "print('inserted by the agent')", "after": "load"}),
        call("cell_edit", {"cell_id": "show", "edits": [{"oldText": "sum(prices)", "newText": "max(prices)"}]}),
        call("cell_run", {"cell_id": "load"}, id="run-load"),
        call("cell_run", {"cell_id": "show"}, id="run-show"),
        call("cell_edit", {"cell_id": "keep", "source": "SECRET = 2"}, id="edit-keep"),
    ]
    path = write_notebook(
        [
            cell("setup", setup(calls)),
            cell("start", "%pi work on the prices"),
            cell("intro", "# Prices", "markdown"),
            cell("load", "prices = [3, 1, 2]\nprint('loaded', len(prices))"),
            cell("show", "print(sum(prices))"),
            cell("keep", "SECRET = 1", tags=("pi-protected",)),
        ],
        lab.root / "cells.ipynb",
    )
    page = open_and_start(lab, path)
    settled(lab, page)
    view = page.locator(".pi-run-view").first
    results = view.locator(".pi-tool .pi-tool-output")
    mark = r"<cell-[0-9a-f]{6} "  # this read's boundary
    expect(results.nth(0)).to_contain_text(re.compile(mark + 'index="3" id="load" type="code" execution_count="">'))
    protected = 'index="5" id="keep" type="code" execution_count="" tags="pi-protected">'
    expect(results.nth(0)).to_contain_text(re.compile(mark + protected))
    # the live notebook, without a reload: the new cell after "load", the edit, the outputs and counts
    expect(cells(page)).to_have_count(7)
    expect(source_of(page, 4)).to_have_text("print('inserted by the agent')")
    expect(source_of(page, 5)).to_have_text("print(max(prices))")
    expect(output_of(page, 3)).to_have_text("loaded 3")
    expect(output_of(page, 5)).to_have_text("3")
    expect(cells(page).nth(3).locator(".jp-InputPrompt")).to_have_text("[3]:")
    expect(cells(page).nth(5).locator(".jp-InputPrompt")).to_have_text("[4]:")
    expect(results.nth(4)).to_contain_text("Cell show ran as In [4].\n\n3")
    refused = view.locator(".pi-tool.pi-tool-error .pi-tool-output")
    expect(refused).to_contain_text("Cell keep is tagged pi-protected: the agent may not edit, delete or run it.")
    expect(source_of(page, 6)).to_have_text("SECRET = 1")
    marked = page.locator(".jp-Notebook .jp-Cell.pi-AgentCell")  # the visible mark of the agent's cells
    expect(marked).to_have_count(2)
    expect(marked.first.locator(".jp-InputArea")).to_have_attribute("data-pi-agent", "pi · run 1")
    lab.screenshot(page, "lab-cells-live.png")

    notebook = saved(lab, page, path)
    by_id = {entry["id"]: entry for entry in notebook["cells"]}
    new = notebook["cells"][4]
    assert "".join(new["source"]) == "print('inserted by the agent')"
    assert len(new["id"]) == 8 and int(new["id"], 16) >= 0  # a short id, as nbformat makes them
    assert new["metadata"] == {"tags": ["pi-agent"], "pi_notebook": {"run": 1, "change": "inserted"}}
    assert "".join(by_id["show"]["source"]) == "print(max(prices))"
    assert by_id["show"]["metadata"]["tags"] == ["pi-agent"]
    assert by_id["show"]["execution_count"] == 4
    assert by_id["show"]["outputs"] == [{"output_type": "stream", "name": "stdout", "text": ["3\n"]}]
    assert "".join(by_id["keep"]["source"]) == "SECRET = 1"

    # undo reverts the agent's edit: in the cell's editor, as a user undoes a change
    source_of(page, 5).click()
    page.keyboard.press("Control+z")
    expect(source_of(page, 5)).to_have_text("print(sum(prices))")
    expect(marked).to_have_count(1)  # the undone edit took its tag, and so its mark, with it
    lab.screenshot(page, "lab-cells-undone.png")
    page.keyboard.press("Control+Shift+z")  # and redo puts both back
    expect(source_of(page, 5)).to_have_text("print(max(prices))")
    expect(marked).to_have_count(2)
    # the insert is one step of the notebook's undo (Z in command mode), and Shift+Z brings the cell back
    page.keyboard.press("Escape")
    page.keyboard.press("z")
    expect(cells(page)).to_have_count(6)
    expect(source_of(page, 4)).to_have_text("print(max(prices))")
    page.keyboard.press("Shift+z")
    expect(cells(page)).to_have_count(7)
    expect(source_of(page, 4)).to_have_text("print('inserted by the agent')")


def test_stop_during_the_second_of_three_cell_runs_interrupts_it_the_third_never_runs_and_the_receipt_says_so(
    lab: JupyterLab,
) -> None:
    batch = "[" + ", ".join(call("cell_run", {"cell_id": name}, id=f"run-{name}") for name in "abc") + "]"
    path = write_notebook(
        [
            cell("setup", setup([batch])),
            cell("start", "%pi run the three cells"),
            cell("a", "print('first')"),
            cell("b", BUSY),
            cell("c", "print('third')"),
        ],
        lab.root / "stop.ipynb",
    )
    page = open_and_start(lab, path)
    expect(output_of(page, 3)).to_have_text("second", timeout=WAIT)  # b runs its busy loop: its print is live
    expect(cells(page).nth(3).locator(".jp-InputPrompt")).to_have_text("[*]:")
    expect(status(page)).to_have_text("pi: running tool")
    stop = page.locator(".jp-NotebookPanel-toolbar .pi-StopAgentRun")
    stop.click()
    settled(lab, page, "aborted=true")
    expect(status(page)).to_have_text("pi: settled (aborted)", timeout=WAIT)
    expect(output_of(page, 2)).to_have_text("first")
    expect(output_of(page, 3)).to_contain_text("KeyboardInterrupt")
    expect(cells(page).nth(3).locator(".jp-InputPrompt")).to_have_text("[4]:")
    expect(output_of(page, 4)).to_have_text("")  # c never ran
    expect(cells(page).nth(4).locator(".jp-InputPrompt")).to_have_text("[ ]:")
    log = page.locator(".pi-run-view").first.locator(".pi-log-receipt .pi-log-detail")
    expect(log.nth(0)).to_have_text("cells ran `a`")
    expect(log.nth(1)).to_have_text("stopped: cells interrupted `b` (Stopped by the user); never ran `c`")
    expect(log.nth(2)).to_contain_text("spent in ")
    lab.screenshot(page, "lab-cells-stopped.png")
    lab.run_cell(page, 4)  # the kernel is free: the user's own run of c works
    lab.wait_idle(page, 4)
    expect(output_of(page, 4)).to_have_text("third")


def test_cell_run_works_while_the_cell_that_started_the_run_awaits_it(lab: JupyterLab) -> None:
    """The status bar says Busy meanwhile, though the page's answers are handled beside the cell (issue 37 item 6)."""
    flag = lab.root / "seen-busy"
    work = (
        f"import pathlib, time\nprint('ran while awaited', flush=True)\nwhile not pathlib.Path({str(flag)!r}).exists():"
    )
    path = write_notebook(
        [
            cell("setup", setup([call("cell_run", {"cell_id": "work"})])),
            cell("start", "run = %pi run my cell\nreport = await run\nprint('awaited', report.aborted)"),
            cell("work", work + "\n    time.sleep(0.02)\n6 * 7"),
        ],
        lab.root / "awaited.ipynb",
    )
    page = open_and_start(lab, path)
    expect(output_of(page, 2)).to_have_text("ran while awaited", timeout=WAIT)  # after the page's run_begin answer
    expect(page.get_by_text("Python 3 (ipykernel) | Busy")).to_be_visible(timeout=WAIT)
    lab.screenshot(page, "lab-cells-awaited-busy.png")
    flag.touch()
    lab.wait_idle(page, 1)
    expect(output_of(page, 1)).to_contain_text("awaited False")
    expect(output_of(page, 2)).to_have_text("ran while awaited\n[2]:42", timeout=WAIT)  # the value, as Out[2]
    expect(cells(page).nth(2).locator(".jp-InputPrompt")).to_have_text("[2]:")
    expect(cells(page).nth(1).locator(".jp-InputPrompt")).to_have_text("[3]:")


def test_a_run_goes_on_acting_on_the_notebook_after_the_page_is_reloaded(lab: JupyterLab) -> None:
    flag = lab.root / "reloaded"
    calls = [
        call("bash", {"command": f"while [ ! -f {flag} ]; do sleep 0.05; done; echo go on"}),
        call("cell_run", {"cell_id": "work"}),
    ]
    path = write_notebook(
        [
            cell("setup", setup(calls, tools="[bash_tool(), *cell_tools()]")),
            cell("start", "%pi wait, then run my cell"),
            cell("work", "print('ran after the reload')"),
        ],
        lab.root / "reload.ipynb",
    )
    page = open_and_start(lab, path)
    expect(status(page)).to_have_text("pi: running tool", timeout=WAIT)  # bash waits for the flag
    saved(lab, page, path)
    page.reload()
    page.wait_for_selector(".jp-NotebookPanel", timeout=60_000)
    expect(status(page)).to_have_text("pi: running tool", timeout=WAIT)  # the new page's control comm is open
    flag.touch()
    expect(output_of(page, 2)).to_have_text("ran after the reload", timeout=WAIT)
    expect(status(page)).to_have_text("pi: settled", timeout=WAIT)
    lab.screenshot(page, "lab-cells-reloaded.png")


def test_approval_shows_the_cells_diff_and_code_and_skip_and_run_do_what_they_say(lab: JupyterLab) -> None:
    """A change the page would refuse (the protected cell, a markdown cell to run) is refused before any question:
    the first question is about the edit that can run."""
    calls = [
        call("cell_edit", {"cell_id": "keep", "source": "SECRET = 2"}, id="edit-keep"),
        call("cell_run", {"cell_id": "note"}, id="run-note"),
        call("cell_edit", {"cell_id": "work", "edits": [{"oldText": "'before'", "newText": "'after'"}]}),
        call("cell_run", {"cell_id": "work"}),
    ]
    path = write_notebook(
        [
            cell("setup", setup(calls, approval="ask")),
            cell("start", "%pi change and run my cell"),
            cell("work", "print('before')"),
            cell("keep", "SECRET = 1", tags=("pi-protected",)),
            cell("note", "a note", "markdown"),
        ],
        lab.root / "approve.ipynb",
    )
    page = open_and_start(lab, path)
    view = page.locator(".pi-run-view").first
    box = view.locator(".pi-approval")
    expect(box).to_be_visible(timeout=WAIT)
    expect(box).to_contain_text("Allow cell_edit?")
    expect(box).to_contain_text("-1 print('before')")
    expect(box).to_contain_text("+1 print('after')")
    lab.screenshot(page, "lab-cells-approval.png")
    box.locator("button.pi-approve-skip").click()
    expect(box).to_contain_text("Allow cell_run?", timeout=WAIT)
    expect(box).to_contain_text("run code cell work (index 2)")
    expect(box).to_contain_text("print('before')")  # the edit was skipped: the cell is as it was
    box.locator("button.pi-approve-run").click()
    settled(lab, page)
    expect(source_of(page, 2)).to_have_text("print('before')")
    expect(output_of(page, 2)).to_have_text("before")
    errors = view.locator(".pi-tool.pi-tool-error .pi-tool-output")
    expect(errors.nth(0)).to_contain_text("Cell keep is tagged pi-protected: the agent may not edit, delete or run it.")
    expect(errors.nth(1)).to_contain_text("Cell note is not a code cell")
    expect(errors.nth(2)).to_contain_text("The user declined")
    expect(source_of(page, 3)).to_have_text("SECRET = 1")
