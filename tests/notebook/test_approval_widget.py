"""The notebook's tool set, prompt and approval, in process with a dummy comm: what ``configure()`` keeps, what
the system prompt says, ``%pi tools``, and the widget's Run / Skip / Always with a rendered view, without one
(ends after the bounded wait, with the text saying how to allow it) and without a widget at all (at once)."""

from __future__ import annotations

import asyncio
import re
import sys
import time
from typing import Any

import pytest
from agent_helpers import ToolLog, recording_tool

from pi_notebook.ai import ToolResultMessage
from pi_notebook.ai.messages import text_of
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_notebook.kernel import CELL_TOOL_NAMES
from pi_notebook.notebook import _approval, default_tools
from pi_notebook.notebook._approval import NO_FRONTEND, NotebookApprover, describe_tools, preview_call
from pi_notebook.notebook._defaults import MAX_VARIABLES, variables_summary
from pi_notebook.notebook._registry import NotebookSession, SessionRegistry
from pi_notebook.session import DECLINED, ApprovalRequest

pytestmark = pytest.mark.usefixtures("dummy_comm")  # every widget here talks to a dummy comm (conftest)


def test_a_notebook_session_starts_with_the_whole_tool_set_and_configure_keeps_or_replaces_it() -> None:
    registry = SessionRegistry()
    entry = registry.get()
    names = [tool.name for tool in entry.session.tools]
    assert names == ["read", "bash", "edit", "write", "grep", "find", "ls", "python", *CELL_TOOL_NAMES]
    mine = recording_tool("mine")
    assert [t.name for t in registry.configure(tools=[mine]).session.tools] == ["mine"]
    assert [t.name for t in registry.configure().session.tools] == ["mine"]  # kept
    assert registry.configure(tools=[]).session.tools == []
    assert [t.name for t in registry.configure(tools=default_tools()).session.tools] == names


def test_the_system_prompt_says_kernel_cwd_python_and_the_users_variables(tmp_path: Any) -> None:
    registry = SessionRegistry()
    entry = registry.get()
    prompt = entry.session.agent.state.system_prompt
    assert "Jupyter" in prompt and "- python: Run Python code in the user's Jupyter kernel" in prompt
    assert "- bash: Execute bash commands" in prompt and "Be concise in your responses" in prompt
    assert f"Python: {sys.version_info.major}.{sys.version_info.minor}" in prompt
    assert prompt.endswith("Current working directory: " + entry.cwd)  # type: ignore[operator]
    own = registry.configure(system_prompt="You are terse.")
    own.refresh_prompt()
    assert own.session.agent.state.system_prompt == "You are terse."  # a prompt of one's own is left alone
    assert registry.configure().session.agent.state.system_prompt == "You are terse."  # and kept by configure()


def test_with_a_cassette_the_prompt_leaves_out_what_differs_between_machines(tmp_path: Any) -> None:
    from pi_notebook.ai import Cassette

    entry = SessionRegistry().configure(cassette=Cassette(tmp_path / "c.jsonl"))
    entry.refresh_prompt()
    prompt = entry.session.agent.state.system_prompt
    assert "- python:" in prompt and "Jupyter" in prompt
    assert "Current working directory" not in prompt and "Python:" not in prompt and "variables:" not in prompt


def test_the_variables_summary_is_bounded_and_skips_private_module_and_ipython_names() -> None:
    class Frame:
        shape = (100, 3)
        columns = ("price", "qty", "date")

    namespace: dict[str, Any] = {"df": Frame(), "_hidden": 1, "sys": sys, "In": [], "Out": {}, "n": 3, "s": "x" * 500}
    namespace.update({f"v{i}": list(range(i)) for i in range(100)})
    text = variables_summary(namespace)
    lines = text.splitlines()
    assert lines[0] == "df: Frame shape=(100, 3) columns=[price, qty, date]"
    assert "n: int = 3" in lines and "s: str len=500" in lines
    assert not any(line.startswith(("_hidden", "sys", "In:", "Out:")) for line in lines)
    assert len(lines) == MAX_VARIABLES + 1 and lines[-1] == f"... and {103 - MAX_VARIABLES} more"
    assert all(len(line) <= 160 for line in lines)

    class Broken:
        @property
        def shape(self) -> Any:
            raise RuntimeError("no")

    assert variables_summary({"b": Broken()}) == "b: Broken"


def test_percent_pi_tools_lists_each_tool_with_its_approval_mode() -> None:
    registry = SessionRegistry()
    session = registry.get().session
    text = describe_tools(session)
    rows = {line.split()[0]: line.split()[1] for line in text.splitlines() if line and not line.startswith("approval")}
    assert rows == {"read": "ask", "bash": "ask", "edit": "ask", "write": "ask", "grep": "ask", "find": "ask",
                    "ls": "ask", "python": "ask", "notebook_read": "auto", "cell_insert": "ask", "cell_edit": "ask",
                    "cell_delete": "ask", "cell_run": "ask"}  # fmt: skip
    assert re.search(r"^read +ask \(outside cwd, secrets\)", text, re.M)  # the looking tools ask only for those
    session.settings = session.settings.updated(tools={"approval": "auto"})
    assert "ask" not in describe_tools(session).split("approval:")[0]


async def test_the_question_shows_the_code_the_command_and_the_edits_diff(tmp_path: Any) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    call = faux_tool_call("edit", {"path": "a.txt", "edits": [{"oldText": "two", "newText": "TWO"}]}, id="e")
    tools = {tool.name: tool for tool in default_tools(tmp_path)}
    shown = await preview_call(ApprovalRequest(call, call.arguments, tools["edit"]))
    assert "-2 two" in shown and "+2 TWO" in shown
    missing = faux_tool_call("edit", {"path": "a.txt", "edits": [{"oldText": "nope", "newText": "x"}]}, id="m")
    failing = await preview_call(ApprovalRequest(missing, missing.arguments, tools["edit"]))
    assert "this edit would fail: Could not find" in failing
    bash = faux_tool_call("bash", {"command": "rm -rf build"}, id="b")
    assert await preview_call(ApprovalRequest(bash, bash.arguments, tools["bash"])) == "$ rm -rf build"
    code = faux_tool_call("python", {"code": "print(1)"}, id="p")
    assert await preview_call(ApprovalRequest(code, code.arguments, tools["python"])) == "print(1)"
    odd = faux_tool_call("bash", {"command": 3}, id="o")  # a preview that does not fit the arguments: JSON
    assert await preview_call(ApprovalRequest(odd, odd.arguments, tools["bash"])) == '{\n "command": 3\n}'


def entry_calling_bash(log: ToolLog, calls: int = 1) -> NotebookSession:
    faux = FauxProvider(token_size=(1, 1))
    replies = [faux_assistant_message([faux_tool_call("bash", {"command": f"echo {i}"}, id=f"c{i}")], "toolUse")
               for i in range(calls)]  # fmt: skip
    faux.set_responses([*replies, faux_assistant_message("done")])
    settings = {"retry": {"enabled": False}, "compaction": {"enabled": False}}
    return SessionRegistry().configure(faux.model, faux.stream, [recording_tool("bash", log, approval="ask")], settings)


def tool_results(entry: NotebookSession) -> list[tuple[str, bool]]:
    return [(text_of(m), m.is_error) for m in entry.session.messages if isinstance(m, ToolResultMessage)]


class Questions:
    """Counts the times a run's state becomes ``awaiting approval`` (a question appears)."""

    def __init__(self, run: Any) -> None:
        self.count = 0
        self.changed = asyncio.Event()
        run.on_state(self._on_state)

    def _on_state(self, state: Any) -> None:
        if state["state"] == "awaiting approval":
            self.count += 1
            self.changed.set()

    async def wait(self, count: int) -> None:
        while self.count < count:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 10)


async def answered(entry: NotebookSession, *answers: str) -> Any:
    """Start a run, render its view (the browser's hello), click ``answers`` in turn as questions appear."""
    run = entry.start("go", lambda: entry.session.prompt("go"))
    assert run.view is not None
    run.view.transcript._on_frontend_message(None, {"type": "hello"}, [])
    box = run.view.approval
    buttons = {"run": box.run_button, "skip": box.skip_button, "always": box.always_button}
    questions = Questions(run)
    for number, answer in enumerate(answers, 1):
        await questions.wait(number)
        assert box.waiting and run.state()["state"] == "awaiting approval"
        buttons[answer].click()
    await run
    return run


async def test_run_in_the_widget_runs_the_call_and_logs_question_and_answer() -> None:
    log = ToolLog()
    entry = entry_calling_bash(log)
    run = await answered(entry, "run")
    assert log.started == ["c0"]
    assert [d for _, label, d in run.log if label == "approval"] == [
        "bash: waiting for Run / Skip / Always",
        "bash: run",
    ]
    assert not run.view.approval.waiting and run.view.approval.layout.display == "none"


async def test_skip_in_the_widget_tells_the_model_the_user_declined() -> None:
    log = ToolLog()
    entry = entry_calling_bash(log)
    await answered(entry, "skip")
    assert log.started == []
    assert tool_results(entry) == [(DECLINED.format(name="bash"), True)]


async def test_always_in_the_widget_stops_asking_for_the_rest_of_the_session() -> None:
    log = ToolLog()
    entry = entry_calling_bash(log, calls=3)
    await answered(entry, "always")
    assert log.started == ["c0", "c1", "c2"]
    assert "auto (always, this session)" in describe_tools(entry.session)


async def test_stop_while_the_question_waits_settles_the_run_aborted() -> None:
    log = ToolLog()
    entry = entry_calling_bash(log)
    run = entry.start("go", lambda: entry.session.prompt("go"))
    assert run.view is not None
    run.view.transcript._on_frontend_message(None, {"type": "hello"}, [])
    await Questions(run).wait(1)
    run.view.stop_button.click()
    report = await asyncio.wait_for(run, 5)
    assert report.aborted and log.started == []
    assert run.state()["state"] == "aborted" and not run.view.approval.waiting


async def test_without_a_rendered_view_ask_ends_after_the_bounded_wait_with_how_to_allow_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_approval, "FRONTEND_WAIT_S", 0.2)
    log = ToolLog()
    entry = entry_calling_bash(log, calls=2)
    started = time.monotonic()
    run = entry.start("go", lambda: entry.session.prompt("go"))
    await run
    assert time.monotonic() - started < 5
    expected = NO_FRONTEND.format(name="bash")
    assert "%pi settings tools.approval=auto" in expected
    assert tool_results(entry) == [(expected, True), (expected, True)] and log.started == []


async def test_a_run_without_a_widget_plain_ipython_refuses_at_once() -> None:
    log = ToolLog()
    entry = entry_calling_bash(log)
    started = time.monotonic()
    run = entry.start("go", lambda: entry.session.prompt("go"), with_view=False)
    await run
    assert time.monotonic() - started < 1.5  # no wait for a frontend that cannot exist
    assert tool_results(entry) == [(NO_FRONTEND.format(name="bash"), True)]


@pytest.mark.parametrize("page", [True, False])
async def test_while_a_lab_page_is_connected_the_question_waits_longer_for_the_widget_to_render(
    monkeypatch: pytest.MonkeyPatch, page: bool
) -> None:
    """A page with the extension (the control comm open) may still be loading the widget's code: the call waits up
    to PAGE_WAIT_S for its ``hello``, where without one it is refused after FRONTEND_WAIT_S (0 here: at once)."""
    monkeypatch.setattr(_approval, "FRONTEND_WAIT_S", 0)
    monkeypatch.setattr(_approval, "PAGE_WAIT_S", 60)
    log = ToolLog()
    entry = entry_calling_bash(log)
    gate_reached = asyncio.Event()

    def page_connected() -> bool:  # asked once, when the call needs its answer
        gate_reached.set()
        return page

    entry.session.approver = NotebookApprover(entry, page_connected)
    run = entry.start("go", lambda: entry.session.prompt("go"))
    assert run.view is not None
    questions = Questions(run)
    await gate_reached.wait()  # past FRONTEND_WAIT_S, and no view rendered yet
    run.view.transcript._on_frontend_message(None, {"type": "hello"}, [])  # the page's widget renders now
    if page:
        await asyncio.wait_for(questions.wait(1), 10)
        run.view.approval.run_button.click()
    report = await asyncio.wait_for(run, 5)
    assert not report.aborted
    if page:
        assert log.started == ["c0"] and tool_results(entry)[0][1] is False
    else:
        assert questions.count == 0 and log.started == []
        assert tool_results(entry) == [(NO_FRONTEND.format(name="bash"), True)]
