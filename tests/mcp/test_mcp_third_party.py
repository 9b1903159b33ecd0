"""Third-party MCP servers from PyPI, run as a user runs them (their console scripts, by name, found on PATH):
``mcp-server-time`` and ``mcp-server-git`` on a local repository, through a session whose faux model calls them.
Their read-only tools (as their annotations say) run without asking; git's commit asks, and commits."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import ready, results, session_calling

from pi_notebook.mcp import McpServers, ServerConfig
from pi_notebook.session import Approval, ApprovalRequest

pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(
        shutil.which("mcp-server-time") is None or shutil.which("mcp-server-git") is None,
        reason="mcp-server-time and mcp-server-git are in the test extra (pip install -e '.[test]')",
    ),
]


class Approver:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, request: ApprovalRequest, signal: Any) -> Approval:
        self.asked.append(request.tool_name)
        return Approval("run")


async def test_mcp_server_time_converts_a_time_without_asking(servers: McpServers) -> None:
    connection = await ready(servers, ServerConfig("time", command="mcp-server-time", args=("--local-timezone", "UTC")))
    assert connection.server_info.startswith("mcp-time")
    approver = Approver()
    call = {"source_timezone": "Europe/Berlin", "time": "12:00", "target_timezone": "Asia/Tokyo"}
    session, _, _ = await session_calling(servers, [("mcp__time__convert_time", call)], approver=approver)
    await session.prompt("What time is noon in Berlin in Tokyo?")
    text, is_error = results(session)[0]
    assert not is_error and approver.asked == []
    converted = json.loads(text)
    berlin = 2 if converted["source"]["is_dst"] else 1  # hours ahead of UTC on the day the test runs
    assert converted["source"]["datetime"].endswith(f"T12:00:00+0{berlin}:00")
    assert converted["target"]["datetime"].endswith(f"T{12 - berlin + 9}:00:00+09:00")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    for command in (
        ["git", "init", "-q"],
        ["git", "config", "user.name", "Notebook User"],
        ["git", "config", "user.email", "user@example.com"],
    ):
        subprocess.run(command, cwd=path, check=True)
    (path / "analysis.py").write_text("print('hello')\n")
    return path


async def test_mcp_server_git_on_a_local_repository_looks_without_asking_and_commits_after_asking(
    servers: McpServers, repo: Path
) -> None:
    await ready(servers, ServerConfig("git", command="mcp-server-git", args=("--repository", str(repo))))
    approver = Approver()
    where: dict[str, Any] = {"repo_path": str(repo)}
    calls = [
        ("mcp__git__git_status", where),
        ("mcp__git__git_add", {**where, "files": ["analysis.py"]}),
        ("mcp__git__git_commit", {**where, "message": "Add the analysis"}),
        ("mcp__git__git_log", {**where, "max_count": 1}),
    ]
    session, _, _ = await session_calling(servers, calls, approver=approver)
    await session.prompt("Commit the analysis")
    status, added, committed, log = results(session)
    assert "analysis.py" in status[0] and not status[1]
    assert approver.asked == ["mcp__git__git_add", "mcp__git__git_commit"]  # the read-only ones did not ask
    assert not added[1] and not committed[1]
    assert "Add the analysis" in log[0]
    assert last_commit_subject(repo) == "Add the analysis"


def last_commit_subject(repo: Path) -> str:
    shown = subprocess.run(["git", "log", "--format=%s"], cwd=repo, capture_output=True, text=True, check=True)
    return shown.stdout.strip()
