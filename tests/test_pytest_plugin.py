"""The package's pytest plugin (``pi_notebook/pytest_plugin.py``): registered through its entry point, cheap to load,
what it compares, the kernels' environment under ``--pi-replay`` (and pytest's own left alone), bad flags. The whole
path, a user's notebook recorded and replayed, is ``tests/notebook/test_nbval_user_notebook.py``."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbval.plugin import IPyNbCell, IPyNbFile

from pi_notebook.pytest_plugin import METADATA_KEY, comparable

pytestmark = pytest.mark.timeout(120)

REPORT = """<div class="tex2jax_ignore mathjax_ignore">

**Run 1** — aborted

| t (s) | event | detail |
|---:|---|---|
| {t1} | `agent_start` |  |
| {t2} | `budget_exceeded` | Turn timed out\\: {used} ms used, limit 300 ms |

</div>"""


def display(data: dict[str, Any], compare: list[str] | None = None) -> Any:
    metadata = {} if compare is None else {METADATA_KEY: {"compare": compare}}
    return nbformat.v4.new_output("display_data", data=data, metadata=metadata)


def test_the_entry_point_registers_the_plugin_and_loading_it_imports_no_floor() -> None:
    [entry] = [entry for entry in entry_points(group="pytest11") if entry.name == "pi_notebook"]
    assert entry.value == "pi_notebook.pytest_plugin"
    code = "import pi_notebook.pytest_plugin, sys; print(sorted(m for m in sys.modules if m.startswith('pi_notebook')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "['pi_notebook', 'pi_notebook.pytest_plugin']"  # every pytest run loads it


def test_marked_outputs_are_compared_on_their_listed_mimetypes_and_event_times_read_t() -> None:
    saved = [
        display({"text/plain": "pi: cassette c.jsonl: mode once, recording"}, compare=[]),
        display({"text/markdown": "the run so far", "text/plain": "Run 1: hi"}, compare=["text/plain"]),
        nbformat.v4.new_output(
            "execute_result", data={"text/markdown": REPORT.format(t1="0.015", t2="0.316", used=301)}
        ),
        nbformat.v4.new_output("stream", text="| 0.316 | `auto_retry_end` | success=true |\n"),
        display({"text/markdown": "| 1.234 | a table of yours |"}),
    ]
    fresh = [
        display({"text/markdown": "the settled run", "text/plain": "Run 1: hi"}, compare=["text/plain"]),
        nbformat.v4.new_output(
            "execute_result", data={"text/markdown": REPORT.format(t1="0.020", t2="0.304", used=304)}
        ),
        nbformat.v4.new_output("stream", text="| 0.301 | `auto_retry_end` | success=true |\n"),
        display({"text/markdown": "| 1.234 | a table of yours |"}),
    ]
    assert comparable(saved) == comparable(fresh)
    [run, report, printed, yours] = comparable(fresh)
    assert run.data == {"text/plain": "Run 1: hi"} and run.output_type == "display_data"
    assert (
        "| T | `agent_start` |" in report.data["text/markdown"]
        and "N ms used, limit 300 ms" in report.data["text/markdown"]
    )
    assert printed.text == "| T | `auto_retry_end` | success=true |\n"
    assert yours.data["text/markdown"] == "| 1.234 | a table of yours |"  # not an event log row: compared as it is
    other = [*fresh[:3], display({"text/markdown": "| 1.235 | a table of yours |"})]
    assert comparable(saved) != comparable(other)


def test_a_report_folded_in_jupyterlab_compares_as_the_whole_report_a_check_shows() -> None:
    """A notebook executed in JupyterLab saves an awaited run's report folded (the page drew its widget above it);
    nbval re-executes it with no page, so the report is whole: the same report either way, another one not."""
    html = '<div class="tex2jax_ignore mathjax_ignore">\n<p><strong>Run 1</strong> — settled</p>\n<p>4.</p>\n</div>'
    folded = (
        '<details class="pi-report-folded"><summary>Run 1 — settled: the transcript and event log, as in the widget'
        f" above</summary>\n{html}\n</details>"
    )

    def report(text: str) -> Any:
        return nbformat.v4.new_output("execute_result", data={"text/html": text})

    assert comparable([report(folded)]) == comparable([report(html)])
    assert comparable([report(folded)]) != comparable([report(html.replace("4.", "5."))])
    assert comparable([report(f"<p>mine</p>{folded}")]) != comparable([report(f"<p>mine</p>{html}")])  # whole only


def test_entry_ids_read_id_only_in_outputs_marked_as_holding_them() -> None:
    def tree(text: str, marked: bool = True) -> Any:
        metadata = {METADATA_KEY: {"entry_ids": True}} if marked else {}
        return nbformat.v4.new_output("display_data", data={"text/plain": text}, metadata=metadata)

    saved = tree("* #1  3f2a9c01  first question\n  ├─ #2  a0b1c2d3  second")
    fresh = tree("* #1  77e0aa12  first question\n  ├─ #2  0123abcd  second")
    assert comparable([saved]) == comparable([fresh])
    assert comparable([fresh])[0].data["text/plain"] == "* #1  ID  first question\n  ├─ #2  ID  second"
    assert comparable([saved]) != comparable([tree("* #1  77e0aa12  another question\n  ├─ #2  0123abcd  second")])
    yours = [tree("commit 3f2a9c01", marked=False)]
    assert comparable(yours)[0].data["text/plain"] == "commit 3f2a9c01"  # not marked: compared as it is


def test_nbval_has_what_the_plugin_uses() -> None:
    """nbval's cell items as the plugin reads them (a new nbval that renames them fails here, not in users' CI)."""
    assert IPyNbCell.__name__ == "IPyNbCell"
    for name in ("compare_outputs", "raise_cell_error", "runtest"):
        assert callable(getattr(IPyNbCell, name))
    assert list(IPyNbCell.compare_outputs.__code__.co_varnames[:3]) == ["self", "test", "ref"]
    assert callable(IPyNbFile.setup)  # starts the kernel, in the first cell's setup (the environment is set there)


def printed(text: str) -> Any:
    return nbformat.v4.new_output("stream", text=text)


PROBE = """import os
print(os.environ.get("PI_NOTEBOOK_CASSETTE_MODE"), os.environ.get("PI_NOTEBOOK_SESSIONS__DIR"))"""


def inner_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (folder / "pytest.ini").write_text("[pytest]\n")
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=100)


def test_replay_sets_the_kernels_environment_not_pytests_and_other_outputs_are_still_compared(
    tmp_path: Path,
) -> None:
    cells = [
        nbformat.v4.new_code_cell(PROBE, execution_count=1, outputs=[printed("none none\n")]),
        nbformat.v4.new_code_cell("print('changed')", execution_count=2, outputs=[printed("saved\n")]),
    ]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "a.ipynb")
    (tmp_path / "test_z.py").write_text(
        "import os\ndef test_pytests_own_environment_is_left_alone():\n"
        "    assert 'PI_NOTEBOOK_CASSETTE_MODE' not in os.environ\n"
    )
    done = inner_pytest(tmp_path, "--nbval", "--pi-replay", "-v", "--color=no")
    assert "a::ipynb::Cell 0 PASSED" in done.stdout, done.stdout[-3000:]  # (nbval names its items so)
    assert "a::ipynb::Cell 1 FAILED" in done.stdout  # an output of the user's still counts
    assert "test_z.py::test_pytests_own_environment_is_left_alone PASSED" in done.stdout


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--pi-replay"], "--pi-replay acts on notebooks checked by nbval: add --nbval"),
        (["--nbval", "--pi-replay", "--pi-record-missing"], "--pi-replay and --pi-record-missing exclude each other"),
    ],
)
def test_bad_flags_are_usage_errors(tmp_path: Path, flags: list[str], message: str) -> None:
    done = inner_pytest(tmp_path, *flags)
    assert done.returncode == 4
    assert message in done.stderr


def result(text: str) -> Any:
    return nbformat.v4.new_output("execute_result", data={"text/plain": text}, execution_count=1)


def test_a_cell_ending_in_a_semicolon_shows_no_result_under_nbval_as_in_jupyter(tmp_path: Path) -> None:
    """Jupyter executes with history stored, and IPython then shows no result for a cell ending in ``;``. nbval
    executes with ``store_history=False``, and IPython 8 then reads the ``;`` of the last *stored* cell instead
    (ipython/ipython#14162): the result shows, and the cell fails against its saved outputs. The plugin leaves a
    result out of the comparison of such a cell, on both sides; what it prints is still compared."""
    sources_and_saved = [
        ("1 + 1;", []),
        ("async def two():\n    return 2\n\nawait two();", []),  # `await run;`, as a notebook writes it
        ("4 + 4;  # a comment after it", []),
        ("3 + 3", [result("6")]),  # no semicolon: compared as before
        ("print('seen');", [printed("seen\n")]),
        ("5 + 5;", [result("10")]),  # saved by a client that showed it: left out on both sides
        ("print('changed');", [printed("saved\n")]),  # what it prints still counts
        ("7 + 7", [result("15")]),  # a wrong result is still found
    ]
    cells = [nbformat.v4.new_code_cell(source, execution_count=i + 1, outputs=outputs)
             for i, (source, outputs) in enumerate(sources_and_saved)]  # fmt: skip
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "semi.ipynb")
    done = inner_pytest(tmp_path, "--nbval", "-v", "--color=no", "semi.ipynb")
    verdicts = [line.split()[2] for line in done.stdout.splitlines() if line.startswith("semi::ipynb::Cell ")]
    assert verdicts == ["PASSED"] * 6 + ["FAILED", "FAILED"], done.stdout[-4000:]
