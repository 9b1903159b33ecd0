"""A user's notebook that uses an MCP server passes ``pytest --nbval --pi-replay`` without the server: executed once
with ``jupyter execute`` (the model a loopback fault server, the MCP server the SDK-written test server, copied into
the notebook's folder), then checked with the server's file deleted and no key. The cassette holds the server's tool
list and the call's result as notes; under ``--pi-replay`` no server is started at all."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from mcp_helpers import SERVER
from user_notebook import CANARY, KEY_VARIABLE, jupyter_execute, pytest_nbval_replay, user_environment, write_notebook

from pi_notebook.testing import FaultServer, Reply

pytestmark = pytest.mark.timeout(420)

CELLS = [
    "%load_ext pi_notebook",
    "%pi model openai-compatible:{base_url}:gpt-test --key-env " + KEY_VARIABLE,
    "%pi cassette cassettes/agent.jsonl",
    f"%pi mcp add notes -- {sys.executable} mcp_server.py",
    "%pi settings tools.approval=auto",
    "run = %pi Echo a greeting with the notes server, then add a note.\nawait run",
]


def test_a_notebook_that_used_an_mcp_server_replays_in_ci_without_it(tmp_path: Path) -> None:
    path = tmp_path / "agent.ipynb"
    server_file = tmp_path / "mcp_server.py"
    shutil.copy(SERVER, server_file)
    with FaultServer() as model:
        model.script(
            [
                Reply.tool_call("mcp__notes__echo", {"text": "hello from MCP"}, id="call_echo"),
                Reply.tool_call("mcp__notes__note", {"text": "remember the milk"}, id="call_note"),
                Reply.text("The server echoed and noted."),
            ]
        )
        write_notebook(path, model.openai_base_url, CELLS)
        env = user_environment(tmp_path, **{KEY_VARIABLE: CANARY, "MCP_TEST_NOTES": str(tmp_path / "notes.txt")})
        jupyter_execute(path, env)
        assert model.pending == 0
        sent = json.loads(model.requests[0].body)
    assert {tool["function"]["name"] for tool in sent["tools"]} >= {"mcp__notes__echo", "mcp__notes__note"}
    saved = path.read_text()
    assert "hello from MCP" in saved and "noted (1 notes)" in saved
    assert (tmp_path / "notes.txt").read_text() == "remember the milk\n"
    lines = (tmp_path / "cassettes" / "agent.jsonl").read_text().splitlines()
    notes = [record["note"] for record in map(json.loads, lines) if "note" in record]
    kinds = [(note["kind"], note["key"]) for note in notes]
    assert ("mcp_tools", {"server": "notes"}) in kinds
    assert ("mcp_call", {"tool": "mcp__notes__echo", "call": "call_echo"}) in kinds

    server_file.unlink()  # CI has no server
    (tmp_path / "notes.txt").unlink()
    for attempt in (1, 2):
        checked = pytest_nbval_replay(path, user_environment(tmp_path))
        assert checked.returncode == 0, f"attempt {attempt}:\n{checked.stdout[-6000:]}"
        assert f"{len(CELLS)} passed" in checked.stdout
    assert not (tmp_path / "notes.txt").exists()  # nothing was called for real
