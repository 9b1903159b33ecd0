"""MCP tools against a real stdio server written with the official SDK (``mcp_test_server.py``), through an
``AgentSession`` whose faux model calls them: approval from annotations, Stop and timeouts that end a call at once
(the server told with ``notifications/cancelled``, or ignoring it), progress, a server that exits mid-call, a 10 MB
result, images, errors, and what the server's environment holds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from mcp_helpers import ready, results, server_config, session_calling, tool_results, update_text

from pi_notebook.ai import ImageContent, TextContent
from pi_notebook.mcp import McpServers
from pi_notebook.session import Approval, ApprovalRequest, PolicyError, site_policy

pytestmark = pytest.mark.timeout(60)


def started(event: Any) -> bool:
    """The server reported that the call began (the hanging tools' first progress notification)."""
    return "started" in update_text(event)


class Approver:
    """Answers each question with the next answer, and remembers what was asked."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    async def __call__(self, request: ApprovalRequest, signal: Any) -> Approval:
        self.asked.append(request.tool_name)
        return Approval(self.answers.pop(0))  # type: ignore[arg-type]


async def test_a_read_only_tool_runs_without_asking_and_a_changing_one_asks(
    servers: McpServers, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    await ready(servers, server_config(env={"MCP_TEST_NOTES": str(notes)}))
    approver = Approver("run")
    calls = [("mcp__test__echo", {"text": "hello"}), ("mcp__test__note", {"text": "first"})]
    session, _, _ = await session_calling(servers, calls, approver=approver)
    await session.prompt("go")
    assert approver.asked == ["mcp__test__note"]
    assert results(session) == [("hello", False), ("noted (1 notes)", False)]
    assert notes.read_text() == "first\n"


async def test_skip_does_not_call_the_server_and_always_covers_every_tool_of_that_server(
    servers: McpServers, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    await ready(servers, server_config(env={"MCP_TEST_NOTES": str(notes)}))
    approver = Approver("skip", "always")
    calls = [
        ("mcp__test__note", {"text": "skipped"}),
        ("mcp__test__note", {"text": "a"}),
        ("mcp__test__note", {"text": "b"}),
    ]
    session, _, _ = await session_calling(servers, calls, approver=approver, settings={"tools": {"approval": "ask"}})
    await session.prompt("go")
    assert approver.asked == ["mcp__test__note", "mcp__test__note"]  # the third call did not ask
    assert "declined" in results(session)[0][0]
    assert notes.read_text() == "a\nb\n"
    assert session.approval_mode("mcp__test__echo") == "auto"  # Always was for the whole server
    assert "MCP server test" in session.approved_always


async def test_stop_during_a_hanging_call_ends_it_at_once_and_the_server_is_told(
    servers: McpServers, tmp_path: Path
) -> None:
    marker = tmp_path / "cancelled"
    await ready(servers, server_config())
    session, recorder, _ = await session_calling(servers, [("mcp__test__hang", {"marker": str(marker)})])
    run = asyncio.create_task(session.prompt("go"))
    await recorder.wait_for(started)  # the server has the call
    stopped = time.monotonic()
    await session.abort()
    settled_after = time.monotonic() - stopped
    await run
    assert recorder.labels[-1] == "agent_settled:aborted=true"
    assert settled_after < 1.5  # not the abort grace (2 s): the call does not wait for the server
    text, is_error = results(session)[0]
    assert is_error and text.startswith("Operation aborted: the call of hang was stopped")
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:  # noqa: ASYNC110 - the server's process writes it
        await asyncio.sleep(0.02)
    assert marker.read_text() == "cancelled"


async def test_a_server_that_ignores_the_cancellation_cannot_hold_the_run(servers: McpServers) -> None:
    connection = await ready(servers, server_config())
    session, recorder, _ = await session_calling(servers, [("mcp__test__hang_deaf", {})])
    run = asyncio.create_task(session.prompt("go"))
    await recorder.wait_for(started)
    stopped = time.monotonic()
    await session.abort()
    await run
    assert time.monotonic() - stopped < 1.5  # not the abort grace (2 s)
    assert recorder.labels[-1] == "agent_settled:aborted=true"
    assert connection.alive  # the connection stays usable for the next run


async def test_the_per_call_timeout_setting_ends_a_hanging_call_and_the_run_goes_on(servers: McpServers) -> None:
    await ready(servers, server_config())
    session, recorder, _ = await session_calling(
        servers, [("mcp__test__hang_deaf", {})], settings={"timeouts": {"mcp_call_ms": 300}}
    )
    await session.prompt("go")
    text, is_error = results(session)[0]
    assert is_error and "timed out after 0.3 seconds" in text
    assert recorder.labels[-1] == "agent_settled:aborted=false"  # the model got the error and answered "done"


async def test_the_servers_own_timeout_overrides_the_setting(servers: McpServers) -> None:
    await ready(servers, server_config(timeout_ms=200))
    session, _, _ = await session_calling(servers, [("mcp__test__hang", {})])
    assert session.tools[0].timeout_ms == 200
    await session.prompt("go")
    assert "timed out after 0.2 seconds" in results(session)[0][0]


async def test_progress_notifications_are_the_calls_live_output(servers: McpServers) -> None:
    await ready(servers, server_config())
    session, recorder, _ = await session_calling(servers, [("mcp__test__progress", {"steps": 3, "hold": True})])
    run = asyncio.create_task(session.prompt("go"))
    update = await recorder.wait_for(lambda e: "3/3" in update_text(e))
    assert update_text(update).splitlines() == [
        "[progress 1/3] step 1 of 3",
        "[progress 2/3] step 2 of 3",
        "[progress 3/3] step 3 of 3",
    ]
    await session.abort()
    await run


async def test_a_server_that_exits_mid_call_gives_a_clear_error_and_the_run_settles(servers: McpServers) -> None:
    connection = await ready(servers, server_config())
    session, recorder, _ = await session_calling(
        servers, [("mcp__test__exit_now", {}), ("mcp__test__echo", {"text": "x"})]
    )
    await session.prompt("go")
    (first, first_error), (second, second_error) = results(session)
    assert first_error and "MCP server 'test' closed the connection during the call" in first
    assert second_error and "MCP server 'test' is failed: it closed the connection during a call of exit_now" in second
    assert recorder.labels[-1] == "agent_settled:aborted=false"
    assert connection.state == "failed"


async def test_a_10_mb_result_is_truncated_as_read_truncates_with_the_whole_text_in_a_private_file(
    servers: McpServers,
) -> None:
    await ready(servers, server_config())
    session, _, _ = await session_calling(servers, [("mcp__test__big", {"megabytes": 10})])
    await session.prompt("go")
    text, is_error = results(session)[0]
    assert not is_error
    assert len(text.encode()) < 51 * 1024
    body, footer = text.rsplit("\n\n", 1)
    assert body.splitlines()[0].startswith("line 00000001 ")
    assert footer.startswith("[Showing lines 1-") and "(50.0KB limit). Full output: " in footer
    path = Path(footer.split("Full output: ", 1)[1].rstrip("]"))
    stat = path.stat()  # noqa: ASYNC240 - one stat of a local file
    assert stat.st_mode & 0o777 == 0o600
    assert stat.st_size >= 10 * 1024 * 1024
    assert tool_results(session)[0].details["truncation"]["truncatedBy"] == "bytes"


async def test_an_image_comes_back_as_an_image_block(servers: McpServers) -> None:
    await ready(servers, server_config())
    session, _, _ = await session_calling(servers, [("mcp__test__picture", {})])
    await session.prompt("go")
    (message,) = tool_results(session)
    assert not message.is_error
    text, image = message.content
    assert isinstance(text, TextContent) and text.text == "a one-pixel PNG"
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"


async def test_a_tool_error_is_an_error_result_with_the_servers_text(servers: McpServers) -> None:
    await ready(servers, server_config())
    session, _, _ = await session_calling(servers, [("mcp__test__fails", {"text": "the disk is on fire"})])
    await session.prompt("go")
    assert results(session)[0] == ("Error executing tool fails: the disk is on fire", True)  # the SDK server's words


async def test_the_server_gets_no_model_key_unless_named_and_a_named_one_is_redacted(
    servers: McpServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-kernel-openai-key-123456")
    monkeypatch.setenv("SERVICE_TOKEN", "tok-for-the-server-987654")
    monkeypatch.setenv("PLAIN_SETTING", "visible-value")
    await ready(
        servers, server_config(env={"SERVICE_TOKEN": "${SERVICE_TOKEN}", "LITERAL_API_KEY": "lit-key-55555555"})
    )
    calls = [("mcp__test__env", {"name": name}) for name in ("OPENAI_API_KEY", "SERVICE_TOKEN", "PLAIN_SETTING")]
    session, _, _ = await session_calling(servers, [*calls, ("mcp__test__env", {"name": "LITERAL_API_KEY"})])
    await session.prompt("go")
    assert [text for text, _ in results(session)] == ["<unset>", "***", "visible-value", "***"]


async def test_a_server_that_fails_to_start_says_why_in_one_line(servers: McpServers) -> None:
    connection = servers.add(server_config("bad", "--fail-start"))
    await connection.wait_settled(None)
    assert connection.state == "failed"
    state = connection.describe_state()
    # "(its process exited)" is said when the exit is seen before the closed connection is reported: either order
    assert state in (
        f"failed: it closed the connection before it was ready{exited}; its stderr ended: "
        "mcp_test_server: cannot start (asked to fail)"
        for exited in ("", " (its process exited)")
    )


async def test_a_missing_program_fails_with_its_name(servers: McpServers) -> None:
    connection = servers.add(server_config("gone").__class__("gone", command="no-such-mcp-server-program"))
    await connection.wait_settled(None)
    assert connection.error == "it could not be started (No such file or directory: no-such-mcp-server-program)"


async def test_a_server_that_hangs_in_initialize_fails_at_its_startup_timeout_and_is_killed(
    servers: McpServers,
) -> None:
    started = time.monotonic()
    connection = servers.add(server_config("hung", "--hang-initialize", startup_timeout_ms=500))
    assert connection.state == "starting"  # add returned at once
    await connection.wait_settled(None)
    assert 0.5 <= time.monotonic() - started < 3
    assert connection.error == "it did not answer initialize within 0.5 s"
    assert connection.pid is not None
    assert not _running(connection.pid)


async def test_remove_kills_the_servers_process_group(servers: McpServers) -> None:
    connection = await ready(servers, server_config())
    pid = connection.pid
    assert pid is not None and _running(pid)
    stopping = servers.remove("test")
    assert stopping is not None
    await stopping
    assert not _running(pid)
    assert servers.get("test") is None and connection.state == "stopped"


async def test_a_run_offers_only_the_ready_servers_tools_and_says_why_others_are_left_out(
    servers: McpServers,
) -> None:
    await ready(servers, server_config())
    failed = servers.add(server_config("bad", "--fail-start"))
    await failed.wait_settled(None)
    session, _, _ = await session_calling(servers, [])
    tools, notes = await servers.tools_for_run(cassette=None, timeout_ms=None, policy=session.policy)
    assert {tool.name.split("__")[1] for tool in tools} == {"test"}
    assert len(notes) == 1 and notes[0].startswith("MCP server bad: its tools are not offered (it is failed: ")


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


async def test_removing_the_server_during_a_call_ends_the_call_with_an_error_and_the_run_goes_on(
    servers: McpServers,
) -> None:
    await ready(servers, server_config())
    session, recorder, _ = await session_calling(servers, [("mcp__test__hang_deaf", {})])
    run = asyncio.create_task(session.prompt("go"))
    await recorder.wait_for(started)
    stopping = servers.remove("test")
    assert stopping is not None
    await stopping
    await run
    assert results(session)[0] == ("MCP server 'test' was stopped during the call", True)
    assert recorder.labels[-1] == "agent_settled:aborted=false"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Sets a site policy for this test (``PI_NOTEBOOK_POLICY``; the cached one is read again)."""
    path = tmp_path / "policy.toml"
    monkeypatch.setenv("PI_NOTEBOOK_POLICY", str(path))

    def write(text: str) -> None:
        path.write_text(text)
        site_policy.cache_clear()

    yield write
    site_policy.cache_clear()


async def test_the_site_policy_refuses_a_server_it_does_not_allow_before_it_starts(
    servers: McpServers, site: Callable[[str], None]
) -> None:
    site('[mcp]\nallow = ["mcp-server-time"]\n')
    with pytest.raises(PolicyError, match=r"MCP server 'test': its command .* is not allowed by policy"):
        servers.add(server_config())
    assert len(servers) == 0


async def test_the_site_policy_makes_read_only_mcp_tools_ask_and_switches_others_off(
    servers: McpServers, site: Callable[[str], None]
) -> None:
    site('[mcp]\nask = ["mcp__test__echo"]\ndisabled = ["mcp__test__note", "mcp__test__big"]\n')
    await ready(servers, server_config())
    approver = Approver("always", "run")
    calls = [("mcp__test__echo", {"text": "a"}), ("mcp__test__echo", {"text": "b"}), ("mcp__test__note", {"text": "c"})]
    session, _, _ = await session_calling(servers, calls, approver=approver)
    names = {tool.name for tool in session.tools}
    assert "mcp__test__echo" in names and not names & {"mcp__test__note", "mcp__test__big"}
    await session.prompt("go")
    assert approver.asked == ["mcp__test__echo", "mcp__test__echo"]  # read-only, yet asked; "always" did not stick
    (a, _), (b, _), (note, note_error) = results(session)
    assert (a, b) == ("a", "b")
    assert note_error and "Tool mcp__test__note not found" in note


async def test_a_server_is_found_by_its_marker_even_when_its_environment_shows_late() -> None:
    """Linux shows a new program's environment a moment after the spawn returns; a busy machine read it empty and
    the server's process went untracked (CI, under load). Here the child carries the marker only once its shell
    ``exec``s into ``sleep`` with it, 0.3 s after it started: the server's process is found all the same."""
    import sys

    from pi_notebook.mcp import _connection
    from pi_notebook.tools import MARKER_ENV

    token = "late-marker-token"
    later = f"{{**os.environ, {MARKER_ENV!r}: {token!r}}}"
    script = f"import os, time; time.sleep(0.3); os.execvpe('sleep', ['sleep', '30'], {later})"
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", script)
    try:
        assert await _connection._leader(token) == child.pid
        assert await _connection._leader("no-such-token") is None  # looked for LEADER_WAIT_S, then given up
    finally:
        child.kill()
        await child.wait()
