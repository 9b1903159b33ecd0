"""What the browser tests of the cell tools share (tests/browser/test_lab_cells.py, test_lab_rewind.py): a notebook
file with known cell ids, the faux model's calls, and the notebook's cells, outputs, status bar and run widget."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lab_harness import JupyterLab
from playwright.sync_api import Locator, Page, expect

WAIT = 30_000  # ms; every wait is on the DOM, this is only the bound
BUSY = "print('second', flush=True)\nn = 0\nwhile True:\n    n += 1"


def call(name: str, arguments: dict[str, Any], id: str | None = None) -> str:
    return f"faux_tool_call({name!r}, {arguments!r}, id={(id or name)!r})"


def cell(cell_id: str, source: str, kind: str = "code", tags: tuple[str, ...] = ()) -> dict[str, Any]:
    made: dict[str, Any] = {"id": cell_id, "cell_type": kind, "metadata": {"tags": list(tags)} if tags else {}}
    made["source"] = source
    if kind == "code":
        made.update(outputs=[], execution_count=None)
    return made


def write_notebook(cells: list[dict[str, Any]], path: Path) -> Path:
    content = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(content))
    return path


def cells(page: Page) -> Locator:
    return page.locator(".jp-Notebook .jp-Cell")


def source_of(page: Page, index: int) -> Locator:
    return cells(page).nth(index).locator(".jp-InputArea-editor .cm-content")


def output_of(page: Page, index: int) -> Locator:
    return cells(page).nth(index).locator(".jp-OutputArea")


def status(page: Page) -> Locator:
    return page.locator(".jp-StatusBar-Widget .pi-StatusItem")


def open_and_start(lab: JupyterLab, path: Path, start: int = 1) -> Page:
    """Open the notebook, run its setup cell (0), wait for the control comm, then run the ``%pi`` cell."""
    page = lab.open(path, workspace=path.stem)
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    expect(status(page)).to_have_text("pi: idle", timeout=WAIT)  # the control comm is open
    lab.run_cell(page, start)
    return page


def settled(lab: JupyterLab, page: Page, detail: str = "aborted=false") -> None:
    """Wait until the run's event log says it settled (a screenshot of the page if it does not)."""
    view = page.locator(".pi-run-view").first
    try:
        expect(view.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text(detail, timeout=WAIT)
    except AssertionError:
        lab.screenshot(page, "lab-cells-not-settled.png", full_page=True)
        raise
