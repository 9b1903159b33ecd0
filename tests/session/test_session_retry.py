"""Turn-level auto-retry (PI-SPEC §4.3, §7.3-7.4): the meaning of Pi's agent-session retry tests (§9.8)."""

from __future__ import annotations

import asyncio
from typing import Any

from session_helpers import error, make_session, reply

from pi_notebook.ai.providers.faux import faux_assistant_message, faux_tool_call


def retry_events(labels: list[str]) -> list[str]:
    return [label.removeprefix("auto_retry_") for label in labels if label.startswith("auto_retry_")]


def will_retry(labels: list[str]) -> list[bool]:
    return [label.endswith("true") for label in labels if label.startswith("agent_end")]


async def test_retries_after_a_transient_error_and_succeeds() -> None:
    session, rec, faux = make_session([error("overloaded_error"), reply()])
    await session.prompt("go")
    assert retry_events(rec.labels) == ["start:attempt=1/2", "end:success=true"]
    assert will_retry(rec.labels) == [True, False]
    assert faux.state.call_count == 2
    assert not session.is_retrying
    assert session.retry_attempt == 0


async def test_retries_multiple_failures_and_succeeds_on_the_last_attempt() -> None:
    session, rec, faux = make_session([error("503"), error("503"), reply()])
    await session.prompt("go")
    assert retry_events(rec.labels) == ["start:attempt=1/2", "start:attempt=2/2", "end:success=true"]
    assert faux.state.call_count == 3


async def test_exhausting_the_retries_emits_a_failure() -> None:
    session, rec, faux = make_session([error("503 a"), error("503 b"), error("503 c")])
    await session.prompt("go")
    assert retry_events(rec.labels) == ["start:attempt=1/2", "start:attempt=2/2", "end:success=false"]
    assert will_retry(rec.labels) == [True, True, False]
    end = next(e for e in rec.events if e.type == "auto_retry_end")
    assert (end.attempt, end.final_error) == (2, "503 c")
    assert faux.state.call_count == 3
    assert rec.labels[-1] == "agent_settled:aborted=false"


async def test_backoff_doubles_from_the_base_delay() -> None:
    session, rec, _ = make_session(
        [error("503"), error("503"), reply()], settings={"retry": {"max_retries": 3, "base_delay_ms": 3}}
    )
    await session.prompt("go")
    assert [e.delay_ms for e in rec.events if e.type == "auto_retry_start"] == [3, 6]


async def test_prompt_returns_only_after_the_retry_completes() -> None:
    session, _rec, _ = make_session([error("503"), reply("second")])
    await session.prompt("go")
    assert session.is_idle
    assert session.messages[-1].content[0].text == "second"  # type: ignore[union-attr]


async def test_no_retry_when_retry_is_disabled() -> None:
    session, rec, faux = make_session([error("503"), reply()], settings={"retry": {"enabled": False}})
    await session.prompt("go")
    assert retry_events(rec.labels) == []
    assert will_retry(rec.labels) == [False]
    assert faux.state.call_count == 1


async def test_non_retryable_errors_are_not_retried() -> None:
    session, rec, faux = make_session([error("401 invalid_api_key"), reply()])
    await session.prompt("go")
    assert retry_events(rec.labels) == []
    assert faux.state.call_count == 1


async def test_abort_retry_cancels_the_backoff() -> None:
    session, rec, faux = make_session(
        [error("503"), reply()], settings={"retry": {"max_retries": 3, "base_delay_ms": 60_000}}
    )
    run = asyncio.create_task(session.prompt("go"))
    await rec.wait_for("auto_retry_start")
    session.abort_retry()
    await asyncio.wait_for(run, timeout=5)
    end = next(e for e in rec.events if e.type == "auto_retry_end")
    assert (end.success, end.final_error) == (False, "Retry cancelled")
    assert faux.state.call_count == 1
    # the failed reply is not restored to what the model would see next
    assert [m.role for m in session.messages] == ["user"]


async def test_session_abort_also_cancels_the_backoff_and_settles_aborted() -> None:
    session, rec, faux = make_session([error("503"), reply()], settings={"retry": {"base_delay_ms": 60_000}})
    run = asyncio.create_task(session.prompt("go"))
    await rec.wait_for("auto_retry_start")
    await asyncio.wait_for(session.abort(), timeout=5)
    await run
    assert rec.labels[-2:] == ["auto_retry_end:success=false", "agent_settled:aborted=true"]
    assert faux.state.call_count == 1


async def test_agent_abort_does_not_cancel_the_session_retry() -> None:
    """Seed 002: only session.abort() stops the retry; agent.abort() with no active run does nothing."""
    session, rec, faux = make_session([error("503"), reply("recovered")], settings={"retry": {"base_delay_ms": 5}})
    run = asyncio.create_task(session.prompt("go"))
    await rec.wait_for("auto_retry_start")
    session.agent.abort()  # the low-level run is already over; the retry keeps going
    await run
    assert faux.state.call_count == 2
    assert retry_events(rec.labels)[-1] == "end:success=true"


async def test_the_full_loop_runs_when_the_retry_produces_tool_calls() -> None:
    from pi_notebook.agent import AgentTool, AgentToolResult

    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult(content="tool ran")

    tool = AgentTool(name="t", description="t", parameters={"type": "object", "properties": {}}, execute=execute)
    session, rec, faux = make_session(
        [error("503"), faux_assistant_message([faux_tool_call("t", {}, id="c")], "toolUse"), reply("final")],
        tools=[tool],
    )
    await session.prompt("go")
    assert faux.state.call_count == 3
    assert session.messages[-1].content[0].text == "final"  # type: ignore[union-attr]
    assert rec.labels.count("agent_settled:aborted=false") == 1


async def test_an_aborted_retried_reply_ends_the_retry_unsuccessfully() -> None:
    """Differs from Pi on purpose: Pi reports success=True for an aborted retried reply."""
    session, rec, _faux = make_session([error("503"), faux_assistant_message("word " * 300)], tps=1000)
    run = asyncio.create_task(session.prompt("go"))
    await rec.wait_for("auto_retry_start")
    await rec.wait_for("message_update")
    await session.abort()
    await run
    end = next(e for e in rec.events if e.type == "auto_retry_end")
    assert (end.success, end.final_error) == (False, "Request was aborted")


async def test_provider_network_errors_are_retried() -> None:
    session, rec, _faux = make_session([error("Network connection lost."), reply()])
    await session.prompt("go")
    assert retry_events(rec.labels) == ["start:attempt=1/2", "end:success=true"]


async def test_the_failed_reply_stays_in_the_session_file(tmp_path: Any) -> None:
    from pi_notebook.session import SessionStore, load_session

    store = SessionStore(tmp_path / "s.jsonl")
    session, _, _ = make_session([error("503 service unavailable"), reply("ok")], store=store)
    await session.prompt("go")
    store.close()
    stops = [getattr(m, "stop_reason", None) for m in load_session(tmp_path / "s.jsonl").messages]
    assert stops == [None, "error", "stop"]
    assert [getattr(m, "stop_reason", None) for m in session.messages] == [None, "stop"]
