"""A user's own ``%pi`` notebook in CI, following the README's "Check your agent notebooks in CI": written fresh,
executed once with ``jupyter execute`` against a live server (the loopback fault server: a tool call that asks for
approval, a 429 answered after its ``retry-after``), then checked with ``pytest --nbval --pi-replay`` twice with the
server gone and no key; a prompt changed in one cell fails, naming the request field that differs. Every step is a
subprocess, as a user runs it: the inner pytest loads the package's plugin through its entry point, in a folder of its
own (no configuration but an empty ``pytest.ini``, no sanitize file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from pi_notebook.testing import Fault, FaultServer, Reply

README = Path(__file__).resolve().parents[2] / "README.md"

pytestmark = pytest.mark.timeout(420)

KEY_VARIABLE = "AGENT_PROXY_KEY"
CANARY = "sk-canary-ci-notebook-91c4e7"
PROMPT = "Say hello to the team."

CELLS = [
    "%load_ext pi_notebook",
    "%pi model openai-compatible:{base_url}:gpt-test --key-env " + KEY_VARIABLE,
    "%pi cassette cassettes/agent.jsonl",
    "run = %pi What is 2 + 2?\nawait run",
    "run = %pi Compute 6 * 7 with python.",
    "await run",
    f"run = %pi {PROMPT}\nr = await run\nprint(r.aborted)",
]


def script(server: FaultServer) -> None:
    """The live model's answers, in order: the three runs' requests (the second run asks for a python call, which
    nobody can approve under jupyter execute; the third gets a 429 first)."""
    server.script(
        [
            Reply.text("2 + 2 = 4."),
            Reply.tool_call("python", {"code": "print(6 * 7)"}, id="call_py_1"),
            Reply.text("I was not allowed to run it; 6 * 7 is 42."),
            Fault.rate_limit(headers={"retry-after-ms": "200"}),
            Reply.text("Hello, team!"),
        ]
    )


def write_notebook(path: Path, base_url: str, cells: list[str] = CELLS) -> None:
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source.format(base_url=base_url)) for source in cells]
    )
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, path)


def user_environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """What a user's shell has: no provider key, no cassette mode; sessions saved (to a folder of the test's)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "PI_NOTEBOOK_CASSETTE_MODE"}
    env.pop(KEY_VARIABLE, None)
    env["PI_NOTEBOOK_SESSIONS__DIR"] = str(tmp_path / "sessions")
    return env | extra


def jupyter_execute(path: Path, env: dict[str, str]) -> None:
    command = [sys.executable, "-m", "jupyter", "execute", "--inplace", path.name]
    done = subprocess.run(command, cwd=path.parent, env=env, capture_output=True, text=True, timeout=200)
    assert done.returncode == 0, done.stderr[-3000:]


def pytest_nbval_replay(path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The README's CI line, in the notebook's folder."""
    (path.parent / "pytest.ini").write_text("[pytest]\n")  # the user's project, not this repository's options
    command = [sys.executable, "-m", "pytest", "--nbval", "--pi-replay", "-p", "no:cacheprovider", path.name]
    return subprocess.run(command, cwd=path.parent, env=env, capture_output=True, text=True, timeout=200)


def outputs_of(path: Path) -> list[list[dict[str, object]]]:
    return [cell.outputs for cell in nbformat.read(path, as_version=4).cells]


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
