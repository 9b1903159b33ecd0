"""How a run shows in a real kernel: the live widget exactly once per ``%pi`` cell however the cell is written,
another live view from ``display(run)`` in a later cell, and a static copy (transcript + event log) beside the
widget that executed and saved notebooks keep (checked through ``nbconvert --to html``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from kernel_harness import Kernel, Outcome
from nbclient import NotebookClient
from nbconvert import HTMLExporter

from pi_notebook.notebook.widget._display import STATIC_MARKER, WIDGET_MIMETYPE

pytestmark = pytest.mark.timeout(180)

SETUP = """
from pi_notebook.notebook import configure, get_notebook_session
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
faux = FauxProvider(token_size=(4, 4))
faux.set_responses([faux_assistant_message(f"Reply {i}: the **transcript** of run {i}.") for i in range(1, 13)])
configure(model=faux.model, stream_fn=faux.stream)
"""


@pytest.fixture(scope="module")
def kernel(kernel: Kernel) -> Kernel:
    """The shared loaded kernel (tests/conftest.py), with this module's set-up run once."""
    kernel.run(SETUP)
    return kernel


def widget_models(outcome: Outcome) -> list[str]:
    """The widget model ids the cell displayed (display_data or execute_result holding a widget view)."""
    shown = outcome.of_type("display_data", WIDGET_MIMETYPE) + outcome.of_type("execute_result", WIDGET_MIMETYPE)
    return [content["data"][WIDGET_MIMETYPE]["model_id"] for content in shown]


def settle(kernel: Kernel, name: str = "run") -> Outcome:
    return kernel.run(f"_ = await {name};")


@pytest.mark.parametrize(
    "cell",
    [
        "run = %pi hello",  # assigned: IPython displays nothing itself
        "%pi hello",  # bare: its value is the cell's result
        "run = %pi hello\nrun",  # assigned, then displayed again in the same cell
        "run = %pi hello\ndisplay(run)\nrun",
        "%%pi\nhello from a cell magic",
    ],
)
def test_a_pi_cell_shows_the_live_widget_exactly_once(kernel: Kernel, cell: str) -> None:
    outcome = kernel.run(cell)
    assert len(widget_models(outcome)) == 1, outcome.outputs
    assert not outcome.of_type("execute_result"), outcome.outputs  # the result shows nothing more
    kernel.run("run = get_notebook_session().current_run")
    settle(kernel)


def test_display_in_another_cell_shows_a_second_live_view_of_the_same_run(kernel: Kernel) -> None:
    first = widget_models(kernel.run("run = %pi hello"))
    again = widget_models(kernel.run("display(run)"))
    bare = widget_models(kernel.run("run"))
    assert len(first) == 1
    assert again == first and bare == first  # the same widget model: live views of one run
    settle(kernel)
    assert widget_models(kernel.run("run")) == first  # a settled run still shows its widget


def test_the_static_copy_is_updated_with_the_transcript_when_the_run_settles(kernel: Kernel) -> None:
    shown = kernel.run("run = %pi hello")
    (display,) = shown.of_type("display_data", WIDGET_MIMETYPE)
    display_id = display["transient"]["display_id"]
    assert display["data"]["text/markdown"].startswith(STATIC_MARKER)
    assert "— running" in display["data"]["text/markdown"]
    assert re.fullmatch(r"Run \d+: hello", display["data"]["text/plain"])  # stable while the run goes on
    compare_plain_only = {"pi_notebook": {"compare": ["text/plain"]}}  # how a notebook check compares it
    assert display["metadata"] == compare_plain_only
    awaited = settle(kernel)
    updates = [
        content
        for content in awaited.of_type("update_display_data")
        if content["transient"]["display_id"] == display_id
    ]
    assert updates, awaited.outputs  # sent from the awaiting cell, which an executing client listens to
    markdown = updates[-1]["data"]["text/markdown"]
    assert "— settled" in markdown and "the \\*\\*transcript\\*\\* of run" in markdown  # the reply, shown as written
    assert "`agent_settled` | aborted=false" in markdown
    assert updates[-1]["data"][WIDGET_MIMETYPE] == display["data"][WIDGET_MIMETYPE]  # still the live widget
    assert updates[-1]["metadata"] == compare_plain_only  # (nbclient and JupyterLab save the update's metadata)


def cell_html(html: str, marker: str) -> str:
    """The HTML of the one cell whose input holds ``marker`` (the next cell's start bounds it)."""
    start = html.index(marker)
    end = html.find('class="jp-Cell ', start)
    return html[start : end if end != -1 else len(html)]


def executed(cells: list[str]) -> Any:
    """A notebook of ``cells``, executed as the teaching notebooks are produced: by nbclient in a fresh kernel,
    without widget state in the saved file."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(notebook, timeout=120, kernel_name="python3", store_widget_state=False).execute()
    return notebook


def test_a_saved_notebook_read_as_html_shows_each_runs_transcript_and_event_log(tmp_path: Path) -> None:
    cells = [
        "%load_ext pi_notebook" + SETUP,
        "first = %pi What is a widget?",
        "_ = await first\nsecond = %pi And a static copy?",  # (a prompt sent while a run is active would be queued)
        "_ = await second",
    ]
    notebook = executed(cells)
    path = tmp_path / "saved.ipynb"
    nbformat.write(notebook, path)
    saved: Any = nbformat.read(path, as_version=4)
    assert "widgets" not in saved.metadata
    html, _ = HTMLExporter().from_notebook_node(saved)  # type: ignore[no-untyped-call]
    for marker, number, reply in [
        ("What is a widget?", 1, "Reply 1: the"),
        ("And a static copy?", 2, "Reply 2: the"),
    ]:
        cell = cell_html(html, marker)
        assert f"<strong>Run {number}</strong> — settled" in cell, cell
        assert reply in cell and "<strong>transcript</strong>" in cell  # the reply, as rendered markdown (text/html)
        assert "agent_settled" in cell and "aborted=false" in cell  # the event log
        assert "(running)" not in cell and "— running" not in cell


def test_a_saved_run_awaited_in_its_own_cell_shows_its_transcript_once(tmp_path: Path) -> None:
    # The cell that shows a run and awaits it: when the report is the cell's result, the display's static copy
    # points to it instead of repeating the transcript; when it is not shown, the static copy holds the transcript.
    cells = [
        "%load_ext pi_notebook" + SETUP,
        "run = %pi Shown with its report\nawait run",
        "run = %pi Awaited, report not shown\nawait run\nprint('after')",
        "run = %pi Awaited into a name\n_ = await run",
    ]
    notebook = executed(cells)
    shown = notebook.cells[1].outputs
    assert [output.output_type for output in shown] == ["display_data", "execute_result"]
    assert shown[0].data["text/markdown"] == (
        f"{STATIC_MARKER}\n**Run 1** — settled: its transcript and event log are in the report below."
    )
    html, _ = HTMLExporter().from_notebook_node(notebook)  # type: ignore[no-untyped-call]
    assert "pi-report-folded" not in html  # no page drew a widget here: the report is whole (issue 37 item 18)
    for marker, reply in [
        ("Shown with its report", "Reply 1: the"),
        ("Awaited, report not shown", "Reply 2: the"),
        ("Awaited into a name", "Reply 3: the"),
    ]:
        cell = cell_html(html, marker)
        assert cell.count(reply) == 1, cell  # the transcript once
        assert cell.count("agent_settled") == 1, cell  # the event log once
        assert "— running" not in cell


def test_a_cell_whose_execution_count_moves_while_it_awaits_its_run_still_shows_the_transcript_once() -> None:
    # A cell the agent runs with cell_run takes an execution count while the cell that shows and awaits the run
    # is still running (issue 37 item 18): the run was then taken as shown in another cell, and its static copy
    # repeated the transcript above the report. Here the count moves as cell_run moves it.
    cells = [
        "%load_ext pi_notebook" + SETUP,
        "run = %pi Shown, the count moves\nget_ipython().execution_count += 1\nawait run",
    ]
    notebook = executed(cells)
    shown = notebook.cells[1].outputs
    assert [output.output_type for output in shown] == ["display_data", "execute_result"]
    assert shown[0].data["text/markdown"] == (
        f"{STATIC_MARKER}\n**Run 1** — settled: its transcript and event log are in the report below."
    )
