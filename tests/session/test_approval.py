"""Approval before a tool runs (setting ``tools.approval``, ``AgentSession(approver=...)``): which tools ask,
what Run / Skip / Always / unavailable do to the call and the transcript, and that the wait ends on abort."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from agent_helpers import ToolLog, recording_tool
from session_helpers import make_session

from pi_notebook.agent import AgentTool, AgentToolResult, Hooks
from pi_notebook.ai import AbortSignal, AssistantMessage, ToolResultMessage
from pi_notebook.ai.messages import text_of
from pi_notebook.ai.providers.faux import faux_assistant_message, faux_tool_call
from pi_notebook.kernel import python_tool
from pi_notebook.session import (
    DECLINED,
    AgentSession,
    Approval,
    ApprovalRequest,
    Settings,
    SettingsError,
    approval_mode,
)
from pi_notebook.tools import coding_tools


async def run_ok(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> AgentToolResult:
    return AgentToolResult("ok")


TOOLS = {tool.name: tool for tool in [*coding_tools("/tmp"), python_tool(), AgentTool("mine", "", {}, run_ok)]}
"""The notebook's tools, and a tool of one's own (which runs without asking by default)."""


def mode(setting: Any, name: str) -> str:
    return approval_mode(setting, TOOLS[name])


def test_which_tools_ask_by_default_under_ask_auto_and_a_map() -> None:
    default = Settings().tools.approval
    assert [mode(default, n) for n in ("python", "bash", "write", "edit")] == ["ask"] * 4
    # read, ls, grep and find are "ask" too, but ask only for the calls they flag (see the tests below)
    assert [mode(default, n) for n in ("read", "ls", "grep", "find", "mine")] == [*["ask"] * 4, "auto"]
    assert mode("ask", "mine") == "ask"
    assert mode("ask", "read") == "ask"
    assert mode("auto", "bash") == "auto"
    assert mode({"bash": "auto"}, "bash") == "auto"
    assert mode({"bash": "auto"}, "python") == "ask"  # a tool the map leaves out keeps its default
    assert mode({"read": "auto"}, "read") == "auto"


def test_whether_a_tool_asks_is_a_fact_of_the_tool_not_of_its_name() -> None:
    renamed = replace(TOOLS["bash"], name="shell")
    assert mode(Settings().tools.approval, "bash") == approval_mode(Settings().tools.approval, renamed) == "ask"
    looks = replace(TOOLS["mine"], approval="never")
    assert approval_mode("ask", looks) == "auto"
    flagged = [tool.name for tool in TOOLS.values() if tool.needs_approval is not None]
    assert flagged == ["read", "grep", "find", "ls"]  # Pi's looking tools ask only for the calls they flag


def test_the_setting_merges_like_other_settings_and_rejects_bad_values() -> None:
    assert Settings().updated(tools={"approval": "auto"}).tools.approval == "auto"
    merged = Settings().updated(tools={"approval": {"bash": "auto"}}).tools.approval
    assert merged == {"bash": "auto"}
    assert [mode(merged, n) for n in ("bash", "python", "write", "edit", "mine")] == [
        "auto",
        "ask",
        "ask",
        "ask",
        "auto",
    ]
    # "auto" then one tool changed: the others stay auto (the plain value becomes the map's "*")
    changed = Settings().updated(tools={"approval": "auto"}).updated(tools={"approval": {"bash": "ask"}})
    assert changed.tools.approval == {"*": "auto", "bash": "ask"}
    assert [mode(changed.tools.approval, n) for n in ("bash", "python", "mine")] == ["ask", "auto", "auto"]
    with pytest.raises(SettingsError, match=r"settings\.tools\.approval"):
        Settings(tools={"approval": "sometimes"})


class Approver:
    """Answers each request with the next scripted answer (or waits on ``gate`` first); records requests."""

    def __init__(self, *answers: Approval, gate: asyncio.Event | None = None) -> None:
        self.answers = list(answers)
        self.gate = gate
        self.requests: list[ApprovalRequest] = []
        self.asked = asyncio.Event()
        self.returned = 0

    async def __call__(self, request: ApprovalRequest, signal: AbortSignal) -> Approval:
        self.requests.append(request)
        self.asked.set()
        try:
            if self.gate is not None:
                waiter = asyncio.ensure_future(signal.wait())
                gate = asyncio.ensure_future(self.gate.wait())
                await asyncio.wait([waiter, gate], return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                gate.cancel()
            return self.answers.pop(0) if self.answers else Approval("skip")
        finally:
            self.returned += 1


def bash_calls(count: int) -> list[Any]:
    calls = [faux_tool_call("bash", {"command": f"echo {i}"}, id=f"call-{i}") for i in range(count)]
    return [*(faux_assistant_message([call], "toolUse") for call in calls), faux_assistant_message("done")]


def session_with(approver: Any, log: ToolLog, calls: int = 1, **options: Any) -> AgentSession:
    session, _, _ = make_session(bash_calls(calls), approver=approver, **options)
    session.tools = [recording_tool("bash", log, approval="ask")]  # a tool that asks, as bash does
    return session


def results(session: AgentSession) -> list[tuple[str, bool]]:
    return [(text_of(m), m.is_error) for m in session.messages if isinstance(m, ToolResultMessage)]


async def test_without_an_approver_every_tool_runs() -> None:
    log = ToolLog()
    session = session_with(None, log)
    await session.prompt("go")
    assert log.started == ["call-0"]
    assert session.approval_mode("bash") == "ask"  # the setting says ask; nobody is there to ask


async def test_run_lets_the_call_run_and_the_approver_sees_the_call() -> None:
    log, approver = ToolLog(), Approver(Approval("run"))
    session = session_with(approver, log)
    await session.prompt("go")
    assert log.started == ["call-0"]
    assert [(r.tool_name, r.args) for r in approver.requests] == [("bash", {"command": "echo 0"})]
    assert results(session) == [("bash ok", False)]


async def test_skip_gives_the_model_an_error_result_saying_the_user_declined() -> None:
    log, approver = ToolLog(), Approver(Approval("skip"))
    session = session_with(approver, log)
    await session.prompt("go")
    assert log.started == []
    assert results(session) == [(DECLINED.format(name="bash"), True)]
    last = session.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "stop"  # the run went on to the next reply


async def test_always_runs_it_and_stops_asking_for_that_tool_in_this_session() -> None:
    log, approver = ToolLog(), Approver(Approval("always"))
    session = session_with(approver, log, calls=3)
    await session.prompt("go")
    assert log.started == ["call-0", "call-1", "call-2"]
    assert len(approver.requests) == 1
    assert session.approved_always == frozenset({"bash"})
    assert session.approval_mode("bash") == "auto"


async def test_unavailable_ends_the_call_at_once_with_the_approvers_reason() -> None:
    log, approver = ToolLog(), Approver(Approval("unavailable", "nobody can answer: allow it with X"))
    session = session_with(approver, log)
    await session.prompt("go")
    assert log.started == []
    assert results(session) == [("nobody can answer: allow it with X", True)]


async def test_auto_and_looking_tools_never_ask() -> None:
    log, approver = ToolLog(), Approver()
    session = session_with(approver, log, settings={"tools": {"approval": "auto"}})
    await session.prompt("go")
    assert log.started == ["call-0"] and approver.requests == []
    session2, _, _ = make_session(
        [faux_assistant_message([faux_tool_call("read", {}, id="r")], "toolUse"), faux_assistant_message("ok")],
        approver=approver,
        settings={"tools": {"approval": "ask"}},
    )
    session2.tools = [recording_tool("read", log, approval="never")]  # a tool that only looks
    await session2.prompt("go")
    assert log.started == ["call-0", "r"] and approver.requests == []


async def test_a_blocking_before_tool_call_hook_decides_first_and_nobody_is_asked() -> None:
    log, approver = ToolLog(), Approver(Approval("run"))
    hooks = Hooks(before_tool_call=lambda context: {"block": True, "reason": "policy says no"})
    session = session_with(approver, log, hooks=hooks)
    await session.prompt("go")
    assert approver.requests == [] and log.started == []
    assert results(session) == [("policy says no", True)]


async def test_a_call_its_tool_refuses_is_never_asked_about_and_a_failing_check_asks() -> None:
    log, approver = ToolLog(), Approver(Approval("run"), Approval("run"))
    session = session_with(approver, log, calls=3)
    verdicts = iter(["cell 0 is protected", None])

    async def refusal(args: Any, signal: AbortSignal) -> str | None:
        verdict = next(verdicts, "")
        if verdict == "":
            raise RuntimeError("the page went away")
        return verdict

    session.tools = [replace(session.tools[0], refusal=refusal)]
    await session.prompt("go")
    assert [request.args for request in approver.requests] == [{"command": "echo 1"}, {"command": "echo 2"}]
    assert log.started == ["call-1", "call-2"]
    assert results(session)[0] == ("cell 0 is protected", True)


async def test_abort_while_waiting_for_approval_ends_the_wait_and_settles_aborted() -> None:
    log, approver = ToolLog(), Approver(Approval("run"), gate=asyncio.Event())
    session = session_with(approver, log)
    settled: list[bool] = []
    session.subscribe(lambda event: settled.append(event.aborted) if event.type == "agent_settled" else None)
    task = asyncio.ensure_future(session.prompt("go"))
    await asyncio.wait_for(approver.asked.wait(), 5)
    await session.abort()
    await asyncio.wait_for(task, 5)
    assert approver.returned == 1  # the approver's wait ended on the run's signal
    assert log.started == []  # approved by nobody, run by nobody
    assert settled == [True]
    assert results(session) == [("Operation aborted", True)]
