"""A user's own ``%pi`` notebook, and the commands a user runs on it (README, "Check your agent notebooks in CI"):
``jupyter execute`` and ``pytest --nbval --pi-replay``, each a subprocess in the notebook's folder. Shared by
``tests/notebook/test_nbval_user_notebook.py`` (executed by nbclient) and ``tests/browser/test_lab_nbval.py``
(executed in JupyterLab)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat

from pi_notebook.testing import Fault, FaultServer, Reply

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


def pytest_nbval_replay(path: Path, env: dict[str, str], flag: str = "--pi-replay") -> subprocess.CompletedProcess[str]:
    """The README's CI line (or its ``--pi-record-missing`` line), in the notebook's folder."""
    (path.parent / "pytest.ini").write_text("[pytest]\n")  # the user's project, not this repository's options
    command = [sys.executable, "-m", "pytest", "--nbval", flag, "-p", "no:cacheprovider", path.name]
    return subprocess.run(command, cwd=path.parent, env=env, capture_output=True, text=True, timeout=200)
