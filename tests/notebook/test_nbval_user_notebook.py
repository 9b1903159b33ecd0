"""A user's own ``%pi`` notebook in CI, following the README's "Check your agent notebooks in CI": written fresh,
executed once with ``jupyter execute`` against a live server (the loopback fault server: a tool call that asks for
approval, a 429 answered after its ``retry-after``), then checked with ``pytest --nbval --pi-replay`` twice with the
server gone and no key; a prompt changed in one cell fails, naming the request field that differs. Every step is a
subprocess, as a user runs it: the inner pytest loads the package's plugin through its entry point, in a folder of its
own (no configuration but an empty ``pytest.ini``, no sanitize file). Then ``--pi-record-missing`` records the one
request the changed prompt makes, and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from user_notebook import (
    CANARY,
    CELLS,
    KEY_VARIABLE,
    PROMPT,
    jupyter_execute,
    pytest_nbval_replay,
    script,
    user_environment,
    write_notebook,
)

from pi_notebook.testing import FaultServer, Reply

README = Path(__file__).resolve().parents[2] / "README.md"

pytestmark = pytest.mark.timeout(420)


def test_the_readme_gives_the_commands_this_test_runs() -> None:
    section = README.read_text().split("## Check your agent notebooks in CI", 1)[1].split("\n## ", 1)[0]
    for line in (
        "%pi cassette cassettes/agent.jsonl",
        "jupyter execute --inplace agent.ipynb",
        'pip install "pi-notebook[ci]"',
        "pytest --nbval --pi-replay agent.ipynb",
    ):
        assert line in section


def test_a_fresh_user_notebook_executed_once_passes_nbval_replayed_twice_and_a_changed_prompt_fails(
    tmp_path: Path,
) -> None:
    path = tmp_path / "agent.ipynb"
    cassette = tmp_path / "cassettes" / "agent.jsonl"
    with FaultServer() as server:
        script(server)
        write_notebook(path, server.openai_base_url)
        jupyter_execute(path, user_environment(tmp_path, **{KEY_VARIABLE: CANARY}))
        assert server.pending == 0 and len(server.requests) == 5
        base_url = server.openai_base_url
    saved = path.read_text()
    assert "Hello, team" in saved and "`auto_retry_start`" in saved
    assert "python was not run: it needs the user's approval" in saved  # nobody could answer under jupyter execute
    recorded = cassette.read_text()
    assert CANARY not in recorded
    notes = [json.loads(line)["note"] for line in recorded.splitlines() if line.startswith('{"note"')]
    assert notes == [
        {
            "kind": "approval",
            "key": {"tool": "python", "call": "call_py_1"},
            "value": {"action": "unavailable", "asked": False, "reason": notes[0]["value"]["reason"]},
        }
    ]

    for attempt in (1, 2):  # the second run starts with the sessions the first one saved
        checked = pytest_nbval_replay(path, user_environment(tmp_path))
        assert checked.returncode == 0, f"attempt {attempt}:\n{checked.stdout[-6000:]}"
        assert f"{len(CELLS)} passed" in checked.stdout
    assert cassette.read_text() == recorded  # replay wrote nothing

    notebook = nbformat.read(path, as_version=4)
    notebook.cells[-1].source = notebook.cells[-1].source.replace(PROMPT, "Say hi to the team.")
    nbformat.write(notebook, path)
    changed = pytest_nbval_replay(path, user_environment(tmp_path))
    assert changed.returncode == 1, changed.stdout[-6000:]
    assert f"1 failed, {len(CELLS) - 1} passed" in changed.stdout
    assert "had no recorded response in the cassette (--pi-replay)" in changed.stdout
    assert f"has no recorded response for POST {base_url}/chat/completions" in changed.stdout
    assert f'.content: "{PROMPT}" != "Say hi to the team." (recorded != sent)' in changed.stdout

    port = int(base_url.rsplit(":", 1)[1].split("/")[0])
    with FaultServer(port=port) as server:  # the model at the notebook's address again, for the one new request
        server.script([Reply.text("Hi, team!")])
        missing = pytest_nbval_replay(path, user_environment(tmp_path, **{KEY_VARIABLE: CANARY}), "--pi-record-missing")
        assert len(server.requests) == 1, missing.stdout[-6000:]
    assert f"1 failed, {len(CELLS) - 1} passed" in missing.stdout  # the changed cell: its saved outputs are old
    grown = cassette.read_text()
    assert grown.startswith(recorded) and "Say hi to the team." in grown[len(recorded) :] and CANARY not in grown
