"""Whole sessions recorded against the fault server, then replayed with the server stopped and no key: the same
event labels (Pi's trace notation) and the same messages, for a 429 then success, a tool call, an overflow
(compaction and retry) and a stream stopped mid-way. The canary key is in no cassette."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from wire_apis import APIS, model_for

from pi_notebook.agent import AgentTool, AgentToolResult, MessageUpdateEvent
from pi_notebook.ai import Cassette, Model, TextContent, UserMessage, close_connections
from pi_notebook.ai.providers.faux import faux_assistant_message
from pi_notebook.session import AgentSession, CompactionSummaryMessage, Settings
from pi_notebook.testing import EventRecorder, Fault, FaultServer, Reply, ScriptEntry

CANARY = "sk-canary-session-0b7e41"
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")
Outcome = tuple[list[str], list[dict[str, Any]]]
Play = Callable[[AgentSession, EventRecorder], Awaitable[None]]
PACE = 0.005
"""Seconds between the server's events, as a model streams. Labels read the live partial message when an event is
delivered (``message_start:assistant:pending``); a server that writes a whole reply in a burst makes them depend
on how the client's reads happened to fall, live as well as in replay."""


async def echo(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    return AgentToolResult(content=f"echo: {args.get('text')}")


ECHO = AgentTool(name="echo", description="echo", parameters={"type": "object"}, execute=echo)


async def outcome(model: Model, play: Play, **session: Any) -> Outcome:
    settings = {"retry": {"base_delay_ms": 5}, "compaction": {"enabled": False}, **session.pop("settings", {})}
    agent_session = AgentSession(model=model, settings=Settings(**settings), **session)
    recorder = EventRecorder("session")
    agent_session.subscribe(recorder)
    await play(agent_session, recorder)
    assert agent_session.is_idle
    return stable(recorder.labels), [message.model_dump(exclude={"timestamp"}) for message in agent_session.messages]


def stable(labels: list[str]) -> list[str]:
    """Labels without the stop reason ``message_start`` reads off the live partial message: whether the reply had
    already ended when its start event was delivered depends on scheduling (a loaded machine), live and in replay
    alike; every other label, ``message_end``'s stop reason included, must match."""
    return ["message_start:assistant" if label.startswith("message_start:assistant") else label for label in labels]


async def record_then_replay(
    api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: list[ScriptEntry], play: Play, **session: Any
) -> tuple[Outcome, Outcome]:
    path = tmp_path / f"{api}.jsonl"
    for variable in KEY_VARIABLES:
        monkeypatch.setenv(variable, CANARY)
    with FaultServer() as server:
        server.script(script)
        model = model_for(api, server.base_url)
        with Cassette(path) as cassette:
            live = await outcome(model, play, **session)
        assert server.pending == 0 and cassette.recorded == len(script)
        await close_connections()
    for variable in KEY_VARIABLES:
        monkeypatch.delenv(variable)
    with Cassette(path, mode="none") as cassette:
        replayed = await outcome(model, play, **session)
    assert (cassette.replayed, cassette.unplayed) == (len(script), 0)
    assert CANARY not in path.read_text()
    return live, replayed


async def prompt(session: AgentSession, recorder: EventRecorder) -> None:
    await session.prompt("hello")


@pytest.mark.parametrize("api", APIS)
async def test_a_429_then_success(api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script: list[ScriptEntry] = [
        Fault.rate_limit(headers={"retry-after-ms": "30"}),
        Fault.status(503),
        Reply.text("ok", delay_s=PACE),
    ]
    settings = {"retry": {"base_delay_ms": 5, "provider": {"max_retries": 1}}}
    live, replayed = await record_then_replay(api, tmp_path, monkeypatch, script, prompt, settings=settings)
    assert "auto_retry_end:success=true" in live[0]  # the 503 after the layer-1 retry reached the session
    assert replayed == live


@pytest.mark.parametrize("api", APIS)
async def test_a_tool_call(api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script: list[ScriptEntry] = [
        Reply.tool_call("echo", {"text": "hi"}, id="call_1", delay_s=PACE),
        Reply.text("done", delay_s=PACE),
    ]
    live, replayed = await record_then_replay(api, tmp_path, monkeypatch, script, prompt, tools=[ECHO])
    assert "tool_execution_end:echo:ok" in live[0]
    assert replayed == live


@pytest.mark.parametrize("api", APIS)
async def test_an_overflow_compacted_and_retried(api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = model_for(api, "")  # the replies are this model's, as if it had written them
    history: list[Any] = []
    for i in range(6):
        history.append(UserMessage(content=[TextContent(text=f"question {i} " + "x" * 400)]))
        reply = faux_assistant_message(f"answer {i} " + "y" * 400)
        reply.provider, reply.model = model.provider, model.id
        history.append(reply)
    script: list[ScriptEntry] = [
        Fault.overflow(),
        Reply.text("## Goal\nsummary", delay_s=PACE),
        Reply.text("after compaction", delay_s=PACE),
    ]
    settings = {"compaction": {"enabled": True, "keep_recent_tokens": 200}}
    live, replayed = await record_then_replay(
        api, tmp_path, monkeypatch, script, prompt, settings=settings, messages=history
    )
    assert "compaction_end:reason=overflow:aborted=false:willRetry=true" in live[0]
    assert live[1][0]["role"] == CompactionSummaryMessage(summary="", tokens_before=0).role
    assert replayed == live


@pytest.mark.parametrize("api", APIS)
async def test_a_stream_stopped_after_its_first_delta(
    api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def stop_after_first_delta(session: AgentSession, recorder: EventRecorder) -> None:
        running = session.prompt("tell me a long story")

        def first_delta(event: object) -> bool:
            return isinstance(event, MessageUpdateEvent) and event.assistant_message_event.type == "text_delta"

        task = asyncio.ensure_future(running)
        await recorder.wait_for(first_delta)
        await session.abort()
        await task

    script: list[ScriptEntry] = [Reply.text("once upon a time " * 30, chunk_chars=6, delay_s=0.02)]
    live, replayed = await record_then_replay(api, tmp_path, monkeypatch, script, stop_after_first_delta)
    assert live[0][-1] == "agent_settled:aborted=true"
    assert live[1][-1]["stop_reason"] == "aborted"
    assert replayed == live
