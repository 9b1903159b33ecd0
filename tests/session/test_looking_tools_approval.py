"""Issue 30 item 12: the tools that only look (the real ``read``, ``ls``, ``grep``, ``find``) run without asking
inside the working directory, and ask — with the reason in the request — for a path outside it (a symlink that
leads out included) or a sensitive file (``~/.ssh/id_rsa``, ``/proc/self/environ``, a ``.env`` even inside it);
``tools.approval=auto`` (or per tool) lets them run. The question shows the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from session_helpers import make_session

from pi_notebook.ai import AbortSignal, ToolResultMessage
from pi_notebook.ai.messages import text_of
from pi_notebook.ai.providers.faux import faux_assistant_message, faux_tool_call
from pi_notebook.notebook._approval import preview_call
from pi_notebook.session import Approval, ApprovalRequest
from pi_notebook.tools import find_tool, grep_tool, ls_tool, read_tool
from pi_notebook.tools._sensitive import path_approval


class Skipper:
    """Answers every question with Skip and records the requests."""

    def __init__(self) -> None:
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest, signal: AbortSignal) -> Approval:
        self.requests.append(request)
        return Approval("skip")


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with an ssh key, a project (the working directory) with a note, a .env and a symlink leading out,
    and a file beside the project."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    monkeypatch.setenv("HOME", str(home))
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("inside\n")
    (project / ".env").write_text("TOKEN=x\n")
    (tmp_path / "beside.txt").write_text("outside\n")
    (project / "link.txt").symlink_to(tmp_path / "beside.txt")
    return project


CALLS = [
    ("read", {"path": "notes.txt"}, None),
    ("ls", {}, None),
    ("grep", {"pattern": "inside"}, None),
    ("find", {"pattern": "*.txt"}, None),
    ("read", {"path": "../beside.txt"}, "outside the working directory"),
    ("read", {"path": "link.txt"}, "outside the working directory"),
    ("read", {"path": "~/.ssh/id_rsa"}, "a secret store"),
    ("read", {"path": "/proc/self/environ"}, "system or process secrets"),
    ("read", {"path": ".env"}, "a file that usually holds secrets"),
    ("ls", {"path": ".."}, "outside the working directory"),
    ("grep", {"pattern": "x", "path": "/etc"}, "outside the working directory"),
    ("find", {"pattern": "*", "path": "~/.ssh"}, "a secret store"),
]


def script() -> list[Any]:
    calls = [faux_tool_call(name, args, id=f"call-{n}") for n, (name, args, _) in enumerate(CALLS)]
    return [faux_assistant_message(calls, "toolUse"), faux_assistant_message("done")]


def looking_tools(cwd: Path) -> list[Any]:
    return [read_tool(cwd), ls_tool(cwd), grep_tool(cwd), find_tool(cwd)]


async def test_looking_tools_ask_for_paths_outside_the_working_directory_and_secrets_only(world: Path) -> None:
    approver = Skipper()
    session, _, _ = make_session(script(), approver=approver, settings={"tool_execution": "sequential"})
    session.tools = looking_tools(world)
    await session.prompt("look around")
    asked = {request.tool_call.id: request.reason for request in approver.requests}
    expected = {f"call-{n}": why for n, (_, _, why) in enumerate(CALLS) if why is not None}
    assert sorted(asked) == sorted(expected)
    for call_id, why in expected.items():
        assert why in (asked[call_id] or ""), (call_id, asked[call_id])
    results = {m.tool_call_id: (text_of(m), m.is_error) for m in session.messages if isinstance(m, ToolResultMessage)}
    assert results["call-0"] == ("inside\n", False)  # inside: ran without asking
    assert all(results[call_id][1] and "declined" in results[call_id][0] for call_id in expected)
    shown = await preview_call(approver.requests[0])
    assert shown.startswith("Asks because it looks outside the working directory")


@pytest.mark.parametrize("approval", ["auto", {"read": "auto", "ls": "auto", "grep": "auto", "find": "auto"}])
async def test_under_auto_the_looking_tools_never_ask(world: Path, approval: Any) -> None:
    approver = Skipper()
    session, _, _ = make_session(script(), approver=approver, settings={"tools": {"approval": approval}})
    session.tools = looking_tools(world)
    await session.prompt("look around")
    assert approver.requests == []
    read_key = next(m for m in session.messages if isinstance(m, ToolResultMessage) and m.tool_call_id == "call-6")
    assert "BEGIN OPENSSH PRIVATE KEY" in text_of(read_key)


def test_the_decision_follows_symlinks_and_home(world: Path) -> None:
    assert path_approval(str(world), "notes.txt") is None
    assert path_approval(str(world), str(world / "notes.txt")) is None
    assert "outside" in (path_approval(str(world), "link.txt") or "")
    assert "secret store" in (path_approval(str(world), "~/.ssh") or "")
    assert "process secrets" in (path_approval(str(world), "/proc/1/environ") or "")
    assert path_approval(str(world), 5) is None  # the tool refuses a bad argument itself
