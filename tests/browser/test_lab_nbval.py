"""A user's ``%pi`` notebook executed and saved in real JupyterLab (Debian's Chromium), then checked as CI does: the
notebook of ``tests/notebook/test_nbval_user_notebook.py`` run cell by cell in JupyterLab against the loopback server
(the person clicks **Run** on the python call that asks; a 429 retried), saved with its widget state and with the
``%load_ext`` greeting about an earlier session (JupyterLab is a frontend a person uses); then ``pytest --nbval
--pi-replay`` twice, with the server gone and no key, in a folder with no configuration: both pass, and the replayed
answer ran the agent's code; a prompt changed in one cell fails, naming the request field that differs.
Screenshots: test-artifacts/lab-nbval-approval.png, lab-nbval-recorded.png."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from lab_harness import JupyterLab, lab_with_extension
from playwright.sync_api import Page, expect
from user_notebook import CANARY, CELLS, KEY_VARIABLE, PROMPT, pytest_nbval_replay, user_environment, write_notebook

from pi_notebook.ai import TextContent, UserMessage
from pi_notebook.session import SessionStore, session_folder
from pi_notebook.testing import Fault, FaultServer, Reply

pytestmark = pytest.mark.timeout(420)

WAIT = 60_000  # ms; every wait is on the DOM or the file, this is only the bound
SAVE_WIDGETS = "@jupyter-widgets/jupyterlab-manager/plugin"


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sessions")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, sessions: Path) -> Iterator[JupyterLab]:
    """JupyterLab with this checkout's extension, saving widget state (its setting "Save Widget State
    Automatically"), its kernels holding the key and saving sessions (as a user's do)."""
    env = {KEY_VARIABLE: CANARY, "PI_NOTEBOOK_SESSIONS__DIR": str(sessions)}
    yield from lab_with_extension(tmp_path_factory, env=env, settings={SAVE_WIDGETS: {"saveState": True}})


def run_cell(lab: JupyterLab, page: Page, index: int) -> None:
    lab.run_cell(page, index)
    lab.wait_idle(page, index)


def saved(path: Path) -> nbformat.NotebookNode | None:
    """The notebook on disk once JupyterLab has saved it executed, with widget state (else ``None``)."""
    notebook = nbformat.read(path, as_version=4)
    executed = all(cell.execution_count is not None for cell in notebook.cells if cell.source)  # (Shift+Enter on
    # the last cell adds an empty one)
    return notebook if executed and notebook.metadata.get("widgets") else None


def test_a_notebook_executed_and_saved_in_jupyterlab_passes_nbval_replayed_twice(
    lab: JupyterLab, sessions: Path, tmp_path: Path
) -> None:
    project = lab.root / "project"
    project.mkdir()
    path = project / "agent.ipynb"
    with SessionStore.new(session_folder(sessions, cwd=project)) as store:  # yesterday's, in the notebook's folder
        store.append_message(UserMessage(content=[TextContent(text="yesterday's question")]))
    with FaultServer() as server:
        server.script(
            [
                Reply.text("2 + 2 = 4."),
                Reply.tool_call("python", {"code": "print(6 * 7)"}, id="call_py_1"),
                Reply.text("It printed 42."),
                Fault.rate_limit(headers={"retry-after-ms": "200"}),
                Reply.text("Hello, team!"),
            ]
        )
        write_notebook(path, server.openai_base_url)
        notebook = execute_in_lab(lab, path)
        assert server.pending == 0 and len(server.requests) == 5
    greeting = notebook.cells[0].outputs
    assert [o.data["text/plain"][:17] for o in greeting] == ["pi: last session "]  # a person's frontend: greeted
    assert "42" in json.dumps(notebook.cells[5].outputs)  # the code ran: Run was clicked
    cassette = (project / "cassettes" / "agent.jsonl").read_text()
    assert '"value":{"action":"run","asked":true}' in cassette and CANARY not in cassette

    env = user_environment(tmp_path)
    for attempt in (1, 2):
        checked = pytest_nbval_replay(path, env)
        assert checked.returncode == 0, f"attempt {attempt}:\n{checked.stdout[-6000:]}"
        assert f"{len(CELLS) + 1} passed" in checked.stdout  # and the empty cell Shift+Enter added

    notebook.cells[6].source = notebook.cells[6].source.replace(PROMPT, "Say hi to the team.")
    nbformat.write(notebook, path)
    changed = pytest_nbval_replay(path, env)
    assert changed.returncode == 1, changed.stdout[-6000:]
    assert f'.content: "{PROMPT}" != "Say hi to the team." (recorded != sent)' in changed.stdout


def execute_in_lab(lab: JupyterLab, path: Path) -> nbformat.NotebookNode:
    """Run the notebook's cells one by one in JupyterLab, click Run on the python call's question, save it."""
    page = lab.open(path, workspace="nbval")
    for index in range(4):  # load_ext, model, cassette, the first run awaited in its cell
        run_cell(lab, page, index)
    run_cell(lab, page, 4)  # the run with the python call: its question shows in the widget
    box = page.locator(".pi-run-view").nth(1).locator(".pi-approval")
    expect(box).to_contain_text("print(6 * 7)", timeout=WAIT)
    lab.screenshot(page, "lab-nbval-approval.png")
    box.locator("button.pi-approve-run").click()
    for index in range(5, len(CELLS)):
        run_cell(lab, page, index)
    expect(page.locator(".jp-Notebook .jp-Cell").nth(5).locator(".jp-OutputArea")).to_contain_text("It printed 42")
    lab.screenshot(page, "lab-nbval-recorded.png", full_page=True)
    page.keyboard.press("Control+s")
    page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=WAIT)  # saved: not dirty
    notebook = saved(path)
    assert notebook is not None, "JupyterLab saved no widget state"
    lab.shutdown_kernels()
    return notebook
