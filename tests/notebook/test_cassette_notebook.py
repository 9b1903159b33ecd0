"""Cassettes in notebooks: ``%pi cassette`` and ``configure(cassette=...)`` in a real kernel, and a notebook
recorded against the fault server that then passes ``pytest --nbval`` with the server stopped and no key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from kernel_harness import Kernel
from nbclient import NotebookClient

from pi_notebook.testing import FaultServer, Reply

pytestmark = pytest.mark.timeout(120)

CANARY = "sk-canary-notebook-5c8d2e"
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


SETUP = """
import os
os.environ["OPENAI_API_KEY"] = "{key}"
os.environ.pop("PI_NOTEBOOK_CASSETTE_MODE", None)
from pi_notebook.ai.models import model_from_spec
from pi_notebook.notebook import configure
from pi_notebook.testing import FaultServer, Reply
server = FaultServer()
server.script([Reply.text("a recorded answer", delay_s=0.005)])
model = model_from_spec("openai:gpt-4o-mini", base_url=server.openai_base_url)
configure(model=model, settings={{"retry": {{"base_delay_ms": 5}}}}, cassette=None)
"""


def test_percent_pi_cassette_records_then_replays_with_the_server_stopped_and_no_key(
    kernel: Kernel, tmp_path: Path
) -> None:
    path = tmp_path / "runs.jsonl"
    kernel.run(SETUP.format(key=CANARY))
    turned_on = kernel.run(f"%pi cassette {path}")
    assert "mode once, recording, timing fast; 0 replayed, 0 recorded" in turned_on.text
    [line] = turned_on.of_type("display_data")  # recording now, replaying when checked: a check leaves it out
    assert line["metadata"] == {"pi_notebook": {"compare": []}}
    live = kernel.run("run = %pi hello there\nawait run")
    assert "a recorded answer" in live.text
    kernel.run("live_labels = run.labels\nserver.close()\ndel os.environ['OPENAI_API_KEY']")
    kernel.run("configure(model=model, settings={'retry': {'base_delay_ms': 5}})")  # keeps the cassette
    assert "1 recorded" in kernel.run("%pi cassette").text
    status = kernel.run(f"%pi cassette '{path}' --mode none").text
    assert "mode none, replaying, timing fast; 0 replayed, 0 recorded, 1 not replayed yet" in status
    replayed = kernel.run("run = %pi hello there\nreport = await run\nprint(run.labels == live_labels, report)")
    assert "a recorded answer" in replayed.text
    assert replayed.stdout.startswith("True")  # (the run's display comes before what the cell printed)
    unmatched = kernel.run("run = %pi a question never recorded\nawait run").shown
    assert f"CassetteError: cassette {path} (mode none) has no recorded response for POST http://127.0.0.1" in unmatched
    assert "pi: cassette off (runs call out)" in kernel.run("%pi cassette off").text
    assert "pi: no cassette (runs call out)" in kernel.run("%pi cassette").text
    assert CANARY not in path.read_text()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("%pi cassette a.jsonl b.jsonl", "pi: cassette: unrecognized arguments: b.jsonl"),
        ("%pi cassette a.jsonl --mode sometimes", "pi: cassette: argument --mode: invalid choice: 'sometimes'"),
        ("%pi cassette a.jsonl --timing", "pi: cassette: argument --timing: expected one argument"),
        ("%pi cassette --mode none", "pi: cassette: --mode and --timing need a PATH"),
        ("%pi cassette gone.jsonl --mode none", "pi: cassette gone.jsonl does not exist (mode none only replays)"),
    ],
)
def test_bad_cassette_arguments_print_a_message_never_a_traceback(kernel: Kernel, line: str, expected: str) -> None:
    kernel.run("from pi_notebook.notebook import configure; configure(cassette=None)")
    outcome = kernel.run(line, allow_error=True)
    assert outcome.error is None
    assert expected in outcome.text
    assert "pi: no cassette" in kernel.run("%pi cassette").text


# ------------------------------------------------------------------------------------------------- nbval

NOTEBOOK_CELLS = [
    """\
%load_ext pi_notebook
from pi_notebook.ai import Model
from pi_notebook.notebook import configure
model = Model(id="gpt-test", api="openai-completions", provider="openai", base_url="{base_url}")
configure(model=model, cassette="cassettes/demo.jsonl", settings={{"retry": {{"base_delay_ms": 5}}}})""",
    """\
run = %pi What is a cassette?
await run""",
    """\
run = %pi And why replay it?
report = await run
print(run.labels)
report""",
]


def build_notebook(path: Path, base_url: str) -> None:
    cells = [nbformat.v4.new_code_cell(NOTEBOOK_CELLS[0].format(base_url=base_url))]
    cells += [nbformat.v4.new_code_cell(source) for source in NOTEBOOK_CELLS[1:]]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, path)


def nbval(notebook: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``pytest --nbval --pi-replay`` on ``notebook`` (the package's plugin), stopping at the first failing cell."""
    (notebook.parent / "pytest.ini").write_text("[pytest]\n")  # this folder is the rootdir: not the repo's options
    command = [sys.executable, "-m", "pytest", "-x", "-p", "no:cacheprovider", "--nbval", "--pi-replay", notebook.name]
    return subprocess.run(command, cwd=notebook.parent, env=env, capture_output=True, text=True, timeout=110)


def test_a_notebook_recorded_against_the_server_passes_nbval_with_it_stopped_and_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "demo.ipynb"
    cassette = tmp_path / "cassettes" / "demo.jsonl"
    monkeypatch.delenv("PI_NOTEBOOK_CASSETTE_MODE", raising=False)
    for variable in KEY_VARIABLES:
        monkeypatch.setenv(variable, CANARY)
    with FaultServer() as server:
        server.script([Reply.text("A recording of HTTP exchanges.", delay_s=0.005), Reply.text("To run in CI.")])
        build_notebook(path, server.openai_base_url)
        notebook = nbformat.read(path, as_version=4)
        NotebookClient(notebook, timeout=60, resources={"metadata": {"path": str(tmp_path)}}).execute()
        nbformat.write(notebook, path)  # the recording run's outputs are what nbval compares against
        assert len(server.requests) == 2
    assert "To run in CI\\\\." in path.read_text()  # (escaped in the report: shown as written)
    recorded = cassette.read_text()
    assert CANARY not in recorded

    env = {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES}
    result = nbval(path, env)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "3 passed" in result.stdout
    assert cassette.read_text() == recorded  # replay wrote nothing
