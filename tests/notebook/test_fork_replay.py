"""A fork with a branch summary in a user's notebook, recorded once against a live server (the loopback fault server)
with ``jupyter execute``, then checked with ``pytest --nbval --pi-replay`` twice with the server gone and no key: the
summary request replays from the cassette, and the fork run's report, the next prompt's answer and ``%pi tree``
compare equal (the tree's entry ids, random on each execution, read as ``ID``; prompts are named by number)."""

from __future__ import annotations

from pathlib import Path

import pytest
from user_notebook import CANARY, KEY_VARIABLE, jupyter_execute, pytest_nbval_replay, user_environment, write_notebook

from pi_notebook.testing import FaultServer, Reply

pytestmark = pytest.mark.timeout(420)

CELLS = [
    "%load_ext pi_notebook",
    "%pi model openai-compatible:{base_url}:gpt-test --key-env " + KEY_VARIABLE,
    "%pi cassette cassettes/fork.jsonl",
    "run = %pi What is 2 + 2?\nawait run",
    "run = %pi And 3 + 3?\nawait run",
    "run = %pi fork 2\nawait run",
    "run = %pi And 4 + 4?\nawait run",
    "%pi tree",
]


def test_a_fork_with_its_summary_replays_the_same_under_nbval(tmp_path: Path) -> None:
    path = tmp_path / "fork.ipynb"
    with FaultServer() as server:
        server.script(
            [
                Reply.text("2 + 2 = 4."),
                Reply.text("3 + 3 = 6."),
                Reply.text("## Goal\nThe user asked for 3 + 3; it is 6."),  # the branch summary
                Reply.text("4 + 4 = 8."),
            ]
        )
        write_notebook(path, server.openai_base_url, CELLS)
        jupyter_execute(path, user_environment(tmp_path, **{KEY_VARIABLE: CANARY}))
        assert server.pending == 0 and len(server.requests) == 4
        summary_request = server.requests[2].body.decode()
    assert "Create a structured summary of this conversation branch" in summary_request
    saved = path.read_text()
    assert "The user asked for 3 + 3; it is 6." in saved and "4 + 4 = 8." in saved
    assert "Session tree: 3 prompts, 2 branches" in saved and "[branch summary] ## Goal" in saved
    recorded = (tmp_path / "cassettes" / "fork.jsonl").read_text()
    for attempt in (1, 2):
        checked = pytest_nbval_replay(path, user_environment(tmp_path))
        assert checked.returncode == 0, f"attempt {attempt}:\n{checked.stdout[-6000:]}"
        assert f"{len(CELLS)} passed" in checked.stdout
    assert (tmp_path / "cassettes" / "fork.jsonl").read_text() == recorded  # replay wrote nothing
