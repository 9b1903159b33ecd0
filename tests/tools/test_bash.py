"""The bash tool's contract (PI-SPEC §8): parameters, outcomes and their texts, errors before spawning,
completion around the shell's exit, and throttled progress. Real subprocesses throughout."""

from __future__ import annotations

import asyncio
import itertools
import math
import os
import stat
import time
from pathlib import Path

import anyio
import pytest
from bash_helpers import Watcher, is_gone, named_pids, real_path, reaping, run, run_error, survivors, text_of

from pi_notebook.ai import AbortController
from pi_notebook.tools import BashError, bash_tool


def test_the_tool_is_named_bash_and_takes_a_command_and_an_optional_timeout() -> None:
    tool = bash_tool()
    schema = tool.json_schema()
    assert tool.name == "bash"
    assert schema["required"] == ["command"]
    assert schema["properties"]["command"]["type"] == "string"
    assert schema["properties"]["timeout"]["type"] == "number"
    assert "last 2000 lines or 50KB" in tool.description
    assert "timeout in seconds" in tool.description


def test_a_default_timeout_is_advertised_in_the_description() -> None:
    tool = bash_tool(timeout_s=30)
    assert "time out after 30 seconds" in tool.description
    assert "default 30" in tool.json_schema()["properties"]["timeout"]["description"]


async def test_simple_command_returns_its_output() -> None:
    result = await run(bash_tool(), "echo hello")
    assert text_of(result) == "hello\n"
    assert result.details is None


async def test_empty_output_reads_no_output() -> None:
    assert text_of(await run(bash_tool(), "true")) == "(no output)"


async def test_stderr_is_merged_into_the_output_in_order() -> None:
    result = await run(bash_tool(), "echo out; echo err >&2; echo out2")
    assert text_of(result) == "out\nerr\nout2\n"


async def test_non_zero_exit_raises_with_the_output_and_the_code() -> None:
    error = await run_error(bash_tool(), "echo partial; exit 3")
    assert str(error) == "partial\n\n\nCommand exited with code 3"
    assert (error.reason, error.returncode) == ("exit", 3)


async def test_non_zero_exit_without_output_is_the_status_line_only() -> None:
    assert str(await run_error(bash_tool(), "exit 7")) == "Command exited with code 7"


async def test_a_shell_killed_by_a_signal_is_an_error_naming_the_signal() -> None:
    error = await run_error(bash_tool(), "kill -9 $$")
    assert str(error) == "Command terminated by signal SIGKILL"


async def test_timeout_kills_the_command_and_reports_the_seconds() -> None:
    started = time.monotonic()
    error = await run_error(bash_tool(), "echo before; sleep 30", timeout=1)
    assert time.monotonic() - started < 10  # at the timeout, not when the command ends
    assert str(error) == "before\n\n\nCommand timed out after 1 seconds"
    assert error.reason == "timeout"


async def test_the_tool_default_timeout_applies_and_a_call_timeout_overrides_it() -> None:
    tool = bash_tool(timeout_s=0.2)
    assert str(await run_error(tool, "sleep 5")) == "Command timed out after 0.2 seconds"
    assert text_of(await run(tool, "sleep 0.3; echo slow but allowed", timeout=5)) == "slow but allowed\n"


async def test_abort_mid_run_raises_command_aborted_with_the_output_so_far() -> None:
    controller = AbortController()
    watcher = Watcher()
    task = asyncio.create_task(run(bash_tool(), "echo working; sleep 100", signal=controller.signal, on_update=watcher))
    await watcher.until(lambda text: "working" in text)
    controller.abort()
    with pytest.raises(BashError) as caught:
        await task
    assert str(caught.value) == "working\n\n\nCommand aborted"
    assert caught.value.reason == "aborted"


async def test_an_already_aborted_signal_fails_without_spawning(tmp_path: Path) -> None:
    controller = AbortController()
    controller.abort()
    marker = tmp_path / "spawned"
    error = await run_error(bash_tool(), f"touch {marker}", signal=controller.signal)
    assert str(error) == "Command aborted"
    assert not marker.exists()


async def test_missing_working_directory_is_reported_before_spawning(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    error = await run_error(bash_tool(cwd=missing), "echo hi")
    assert str(error) == f"Working directory does not exist: {missing}\nCannot execute bash commands."


async def test_commands_run_in_the_given_working_directory(tmp_path: Path) -> None:
    assert text_of(await run(bash_tool(cwd=tmp_path), "pwd")).strip() == real_path(tmp_path)


@pytest.mark.parametrize("shell", ["no-such-shell-xyz", "/nonexistent/bin/bash"])
async def test_a_missing_shell_is_named_in_the_error(shell: str) -> None:
    error = await run_error(bash_tool(shell=shell), "echo hi")
    assert str(error) == f"Shell not found: {shell}\nCannot execute bash commands."


async def test_a_shell_that_cannot_be_executed_reports_the_spawn_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken-shell"
    broken.write_bytes(b"\x00\x01\x02 not a program")
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    error = await run_error(bash_tool(shell=str(broken)), "echo hi")
    assert str(error).startswith(f"Failed to start {broken}: ")


async def test_sh_can_be_chosen_as_the_shell() -> None:
    assert text_of(await run(bash_tool(shell="sh"), "echo from sh")) == "from sh\n"


@pytest.mark.parametrize("value", [0, -1, math.nan, math.inf, -math.inf, "5", True])
async def test_invalid_timeouts_are_rejected_with_pis_text(value: object) -> None:
    error = await run_error(bash_tool(), "echo hi", timeout=value)
    assert str(error) == "Invalid timeout: must be a finite number of seconds"


async def test_a_timeout_above_the_maximum_is_rejected_with_pis_text() -> None:
    error = await run_error(bash_tool(), "echo hi", timeout=2_147_484)
    assert str(error) == "Invalid timeout: maximum is 2147483.647 seconds"


def test_invalid_tool_settings_raise_value_error() -> None:
    with pytest.raises(ValueError, match="must be a finite number"):
        bash_tool(timeout_s=math.nan)
    with pytest.raises(ValueError, match="kill_grace_ms"):
        bash_tool(kill_grace_ms=-1)
    with pytest.raises(ValueError, match="max_bytes"):
        bash_tool(max_bytes=0)


async def test_the_environment_is_inherited_plus_the_extra_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_TEST_INHERITED", "from-os")
    result = await run(bash_tool(env={"PI_TEST_EXTRA": "from-tool"}), "echo $PI_TEST_INHERITED $PI_TEST_EXTRA")
    assert text_of(result) == "from-os from-tool\n"


async def test_stdin_is_empty() -> None:
    assert text_of(await run(bash_tool(), "cat; echo end")) == "end\n"


async def test_output_written_after_the_shell_exits_is_captured() -> None:
    # The writer waits until the shell has exited (and been reaped), then writes three lines 30 ms apart:
    # each chunk re-arms the 100 ms quiet wait, and EOF ends it (Pi #5303).
    command = (
        "shell=$$; ( while kill -0 $shell 2>/dev/null; do sleep 0.01; done;"
        " echo late1; sleep 0.03; echo late2; sleep 0.03; echo late3 ) & echo early"
    )
    assert text_of(await run(bash_tool(), command)) == "early\nlate1\nlate2\nlate3\n"


async def test_a_quiet_descendant_holding_the_pipe_does_not_hang_and_is_kept_by_default() -> None:
    with reaping() as seen, anyio.fail_after(5):
        result = await run(bash_tool(), "sleep 1000 & echo background $!")
        seen.extend(named_pids(text_of(result), ("background",)).values())
        assert not is_gone(seen[0])  # Pi keeps what the command left running


async def test_kill_background_kills_what_the_command_left_running() -> None:
    with reaping() as seen, anyio.fail_after(5):
        command = "sleep 1000 & echo background $!; (trap '' TERM; sleep 1000) & echo stubborn $!"
        result = await run(bash_tool(kill_background=True), command)
        seen.extend(named_pids(text_of(result), ("background", "stubborn")).values())
        assert await survivors(seen) == []


async def test_progress_starts_empty_and_ends_with_the_final_output() -> None:
    watcher = Watcher()
    result = await run(bash_tool(), "echo one; echo two", on_update=watcher)
    assert watcher.updates[0].content == []
    assert watcher.text == text_of(result)


async def test_chatty_output_is_coalesced_into_throttled_updates() -> None:
    watcher = Watcher()
    started = time.monotonic()
    await run(bash_tool(), "for i in $(seq 1 100); do echo line $i; sleep 0.01; done", on_update=watcher)
    elapsed = time.monotonic() - started
    snapshots = watcher.times[1:]  # after the initial empty update
    assert 2 <= len(snapshots) <= elapsed / 0.1 + 2
    throttled = snapshots[:-1]  # the final flush comes as soon as the command is done
    assert all(b - a >= 0.099 for a, b in itertools.pairwise(throttled))
    assert watcher.text.endswith("line 100\n")


async def test_no_update_arrives_after_execute_returns() -> None:
    watcher = Watcher()
    with reaping() as seen:
        # The writer outlives the call: it is still writing after the 100 ms quiet wait released the tool.
        command = "( echo writer $BASHPID; sleep 0.3; echo late ) & echo early"
        result = await run(bash_tool(), command, on_update=watcher)
        count = len(watcher.updates)
        seen.extend(named_pids(text_of(result), ("writer",)).values())
        assert await survivors(seen) == []  # the writer has written "late" (or died trying) and exited
        await asyncio.sleep(0)
        assert len(watcher.updates) == count
        assert "late" not in watcher.text


async def test_a_raising_on_update_is_reported_and_the_command_still_completes() -> None:
    reported: list[object] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: reported.append(context.get("exception")))
    try:

        def broken(_result: object) -> None:
            raise RuntimeError("renderer broke")

        result = await run(bash_tool(), "echo still fine", on_update=broken)
    finally:
        loop.set_exception_handler(None)
    assert text_of(result) == "still fine\n"
    assert [str(e) for e in reported] == ["renderer broke"]


async def test_parallel_commands_are_independent() -> None:
    tool = bash_tool()
    first, second = await asyncio.gather(run(tool, "echo a; sleep 0.1; echo b"), run(tool, "echo c"))
    assert (text_of(first), text_of(second)) == ("a\nb\n", "c\n")


def test_cwd_defaults_to_the_process_working_directory_at_call_time(tmp_path: Path) -> None:
    async def main() -> str:
        return text_of(await run(bash_tool(), "pwd"))

    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert anyio.run(main).strip() == str(tmp_path.resolve())
    finally:
        os.chdir(old)
