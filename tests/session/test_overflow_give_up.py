"""Issue 31 item 4 over real loopback HTTP: when the overflow recovery fails, the run settles as what this operation
did (not as the transcript's last reply, which may be an earlier run's stopped one), and only the prompt that did not
fit leaves the context (earlier prompts that were never answered, e.g. after a 429, stay)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pi_notebook.ai import AssistantMessage, UserMessage, close_connections
from pi_notebook.ai.messages import text_of
from pi_notebook.ai.models import model_from_spec
from pi_notebook.session import AgentSession, CompactionEndEvent, MessageUpdateEvent, SessionStore, Settings
from pi_notebook.testing import EventRecorder, Fault, FaultServer, Reply

LLAMA_OVERFLOW = "request (2407 tokens) exceeds the available context size (2048 tokens), try increasing it"


@pytest.fixture
async def server(server: FaultServer) -> AsyncIterator[FaultServer]:
    """conftest's ``server``, and the shared HTTP client's connections to it closed after the test."""
    yield server
    await close_connections()


def session_for(server: FaultServer, tmp_path: Path) -> tuple[AgentSession, EventRecorder]:
    settings = Settings(
        retry={"enabled": False},  # a 429 fails the prompt at once: it stays in the transcript, never answered
        compaction={"enabled": True, "keep_recent_tokens": 20_000, "reserve_tokens": 16},
    )
    model = model_from_spec(f"openai-compatible:{server.openai_base_url}:local", context_window=2048)
    session = AgentSession(model=model, settings=settings, store=SessionStore(tmp_path / "s.jsonl"))
    recorder = EventRecorder("session")
    session.subscribe(recorder)
    return session, recorder


async def stopped_mid_reply(session: AgentSession) -> None:
    """A prompt whose streaming reply the user stops (the run settles aborted)."""
    streaming = asyncio.Event()
    unsubscribe = session.subscribe(lambda event: streaming.set() if isinstance(event, MessageUpdateEvent) else None)
    task = asyncio.ensure_future(session.prompt("tell me a long story"))
    await streaming.wait()
    await session.abort()
    await task
    unsubscribe()


async def test_a_failed_overflow_recovery_settles_as_this_operation_and_removes_only_what_did_not_fit(
    server: FaultServer, tmp_path: Path
) -> None:
    server.script(
        [
            Reply.text("Once upon a time " * 40, chunk_chars=4, delay_s=0.01),  # stopped by the user
            Fault.rate_limit(),  # a prompt never answered
            Fault.status(400, message=LLAMA_OVERFLOW),  # the prompt does not fit (the system prompt is large)
            Reply.text("fine"),
        ]
    )
    session, recorder = session_for(server, tmp_path)
    await stopped_mid_reply(session)
    await session.prompt("a question the rate limit ate")
    before = len(recorder.labels)
    await session.prompt("and now summarise it all")  # the transcript is too small to compact: recovery fails

    settled = [label for label in recorder.labels[before:] if label.startswith("agent_settled")]
    assert settled == ["agent_settled:aborted=false"]  # this operation was not stopped: it failed to fit
    (end,) = [e for e in recorder.events[before:] if isinstance(e, CompactionEndEvent)]
    assert end.error_message is not None
    assert end.error_message.startswith("Context overflow recovery failed: nothing to compact. The prompt that")
    users = [text_of(m) for m in session.messages if isinstance(m, UserMessage)]
    assert users == ["tell me a long story", "a question the rate limit ate"]  # only the huge prompt left
    replies = [m.stop_reason for m in session.messages if isinstance(m, AssistantMessage)]
    assert replies == ["aborted", "error"]

    await session.prompt("something small")
    assert "a question the rate limit ate" in str(server.requests[-1].json["messages"])
    assert recorder.labels[-1] == "agent_settled:aborted=false"
