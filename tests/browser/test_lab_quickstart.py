"""The quickstart as the README opens it: JupyterLab (Debian's Chromium) on a copy of ``notebooks/``, Kernel → Restart
Kernel and Run All Cells. Every cell runs, none fails (the cell tools are offered there, unlike under nbval), the
agent's file went to a scratch folder that is gone afterwards (nothing is left beside the notebook) and approval is
back to ``ask``. Screenshot: test-artifacts/lab-quickstart.png."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from lab_harness import JupyterLab, lab_with_extension

pytestmark = pytest.mark.timeout(600)

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
WAIT = 240_000  # ms; the quickstart's runs take seconds each on a loaded machine: a bound, every wait is on the DOM
NOTEBOOK_SETTINGS = "@jupyterlab/notebook-extension/tracker"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    """No paid examples even if a key is set; sessions saved in a folder of the test's; every cell rendered (no
    windowing), so the test reads each cell's prompt."""
    sessions = tmp_path_factory.mktemp("sessions")
    env = {"PI_PAID_EXAMPLES": "0", "PI_NOTEBOOK_SESSIONS__DIR": str(sessions)}
    yield from lab_with_extension(tmp_path_factory, env=env, settings={NOTEBOOK_SETTINGS: {"windowingMode": "none"}})


PROMPTS = "[...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')].map(p => p.textContent)"


def test_restart_and_run_all_runs_the_quickstart_in_jupyterlab_and_leaves_nothing_behind(lab: JupyterLab) -> None:
    folder = lab.root / "checkout" / "notebooks"
    folder.mkdir(parents=True)
    for name in ("00-quickstart.ipynb", "teaching.py"):
        shutil.copy(NOTEBOOKS / name, folder / name)
    before = sorted(path.name for path in folder.iterdir())
    path = folder / "00-quickstart.ipynb"
    page = lab.open(path, workspace="quickstart")
    page.get_by_text("Kernel", exact=True).first.click()  # the menu bar's Kernel menu
    page.get_by_text("Restart Kernel and Run All Cells…").click()
    page.locator(".jp-Dialog .jp-mod-accept").click()  # "Restart"
    page.wait_for_function(f"() => {PROMPTS}.some(p => p.includes('*'))", timeout=WAIT)  # queued
    page.wait_for_function(f"() => !{PROMPTS}.some(p => p.includes('*'))", timeout=WAIT)  # all ran, or one failed
    lab.screenshot(page, "lab-quickstart.png", full_page=True)
    page.keyboard.press("Control+s")
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=WAIT)
    notebook = nbformat.read(path, as_version=4)
    lab.shutdown_kernels()

    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    failed = [(cell.id, output) for cell in code for output in cell.outputs if output.output_type == "error"]
    assert failed == []
    assert [cell.id for cell in code if cell.execution_count is None] == []  # Run All did not stop early
    receipt = next(cell for cell in code if "report.receipt" in cell.source)
    text = "".join(output.get("text", "") for output in receipt.outputs)
    assert "The cell tools were offered" in text  # the page can act on the notebook: the model was offered them
    assert "files written: ['mean-price.txt']" in text and "mean price: 3.92" in text
    assert sorted(path.name for path in folder.iterdir() if not path.name.startswith(".")) == before
