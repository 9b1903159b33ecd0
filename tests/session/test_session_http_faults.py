"""The fault matrix through a session over real loopback HTTP: retry, exhaustion, quota, overflow -> compaction.
Each case ends with exactly one agent_settled, a session file that matches, and no open connection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from wire_apis import APIS, model_for

from pi_notebook.ai import TextContent, UserMessage, close_connections
from pi_notebook.ai.providers.faux import faux_assistant_message
from pi_notebook.session import (
    AgentSession,
    AutoRetryStartEvent,
    CompactionSummaryMessage,
    SessionStore,
    Settings,
    load_session,
)
from pi_notebook.testing import EventRecorder, Fault, FaultServer, Reply


def session_for(
    api: str, server: FaultServer, tmp_path: Path, messages: Any = (), **settings: Any
) -> tuple[AgentSession, EventRecorder]:
    settings = {"retry": {"base_delay_ms": 5}, "compaction": {"enabled": False}, **settings}
    store = SessionStore(tmp_path / f"{api}.jsonl")
    session = AgentSession(
        model=model_for(api, server, keyless=True), settings=Settings(**settings), store=store, messages=messages
    )
    recorder = EventRecorder("session")
    session.subscribe(recorder)
    return session, recorder


async def finish(session: AgentSession, recorder: EventRecorder, server: FaultServer) -> list[Any]:
    assert (
        recorder.labels.count("agent_settled:aborted=false") + recorder.labels.count("agent_settled:aborted=true") == 1
    )
    assert session.is_idle
    assert session.store is not None
    session.store.close()
    await close_connections()  # idle keep-alive connections go; anything left open would be a leak
    await server.wait_until_async(lambda s: s.open_connections == 0)
    return load_session(session.store.path).messages


def retry_labels(recorder: EventRecorder) -> list[str]:
    return [label for label in recorder.labels if label.startswith(("auto_retry", "compaction"))]


@pytest.mark.parametrize("api", APIS)
async def test_a_transient_failure_is_retried_and_the_file_keeps_the_failure(
    api: str, server: FaultServer, tmp_path: Path
) -> None:
    server.script([Fault.status(503), Fault.overloaded(), Reply.text("finally")])
    session, recorder = session_for(api, server, tmp_path)
    await session.prompt("hello")
    assert retry_labels(recorder) == [
        "auto_retry_start:attempt=1/3",
        "auto_retry_start:attempt=2/3",
        "auto_retry_end:success=true",
    ]
    assert len(server.requests) == 3
    stored = await finish(session, recorder, server)
    assert [getattr(m, "stop_reason", "user") for m in stored] == ["user", "error", "error", "stop"]
    assert [getattr(m, "stop_reason", "user") for m in session.messages] == ["user", "stop"]


@pytest.mark.parametrize("api", APIS)
async def test_exhausted_retries_end_with_the_last_error(api: str, server: FaultServer, tmp_path: Path) -> None:
    server.script([Fault.status(502)] * 4)
    session, recorder = session_for(api, server, tmp_path, retry={"max_retries": 3, "base_delay_ms": 2})
    await session.prompt("hello")
    assert retry_labels(recorder)[-1] == "auto_retry_end:success=false"
    assert len(server.requests) == 4
    stored = await finish(session, recorder, server)
    assert [getattr(m, "stop_reason", "user") for m in stored].count("error") == 4


@pytest.mark.parametrize("api", APIS)
async def test_quota_errors_are_not_retried(api: str, server: FaultServer, tmp_path: Path) -> None:
    server.script([Fault.quota(), Reply.text("never")])
    session, recorder = session_for(api, server, tmp_path)
    await session.prompt("hello")
    assert retry_labels(recorder) == []
    assert len(server.requests) == 1
    await finish(session, recorder, server)


@pytest.mark.parametrize("api", APIS)
async def test_layer_one_retries_are_invisible_to_the_session(api: str, server: FaultServer, tmp_path: Path) -> None:
    server.script([Fault.rate_limit(headers={"retry-after-ms": "20"}), Reply.text("ok")])
    session, recorder = session_for(api, server, tmp_path, retry={"provider": {"max_retries": 2}})
    await session.prompt("hello")
    assert retry_labels(recorder) == []
    assert len(server.requests) == 2
    stored = await finish(session, recorder, server)
    assert [getattr(m, "stop_reason", "user") for m in stored] == ["user", "stop"]


@pytest.mark.parametrize("api", APIS)
async def test_overflow_is_compacted_then_retried_once(api: str, server: FaultServer, tmp_path: Path) -> None:
    model = model_for(api, server, keyless=True)
    history: list[Any] = []
    for i in range(6):
        history.append(UserMessage(content=[TextContent(text=f"question {i} " + "x" * 400)]))
        reply = faux_assistant_message(f"answer {i} " + "y" * 400)
        reply.provider, reply.model = model.provider, model.id
        history.append(reply)
    server.script([Fault.overflow(), Reply.text("## Goal\nsummary"), Reply.text("after compaction")])
    session, recorder = session_for(
        api, server, tmp_path, messages=history, compaction={"enabled": True, "keep_recent_tokens": 200}
    )
    await session.prompt("one more")
    assert retry_labels(recorder) == [
        "compaction_start:reason=overflow",
        "compaction_end:reason=overflow:aborted=false:willRetry=true",
    ]
    assert len(server.requests) == 3
    assert "<conversation>" in server.requests[1].body.decode()
    assert isinstance(session.messages[0], CompactionSummaryMessage)
    stored = await finish(session, recorder, server)
    assert isinstance(stored[0], CompactionSummaryMessage)
    assert stored[-1].content[0].text == "after compaction"


@pytest.mark.parametrize("api", APIS)
async def test_a_reset_mid_stream_is_retried_by_the_session_not_replayed_by_the_provider(
    api: str, server: FaultServer, tmp_path: Path
) -> None:
    server.script([Reply.text("partial " * 20, fault=Fault.reset(after_events=3)), Reply.text("complete")])
    session, recorder = session_for(api, server, tmp_path, retry={"base_delay_ms": 5, "provider": {"max_retries": 3}})
    await session.prompt("hello")
    assert retry_labels(recorder) == ["auto_retry_start:attempt=1/3", "auto_retry_end:success=true"]
    stored = await finish(session, recorder, server)
    assert stored[1].stop_reason == "error"
    assert stored[1].content  # the partial reply is on disk


@pytest.mark.parametrize("api", APIS)
async def test_the_session_retry_waits_the_servers_retry_after(api: str, server: FaultServer, tmp_path: Path) -> None:
    server.script([Fault.rate_limit(headers={"retry-after": "0.3"}), Reply.text("ok")])
    session, recorder = session_for(api, server, tmp_path, retry={"base_delay_ms": 5})
    await session.prompt("hello")
    [start] = [e for e in recorder.events if isinstance(e, AutoRetryStartEvent)]
    assert start.delay_ms == 300  # not the 5 ms backoff
    first, second = server.requests
    assert second.received_at - first.received_at >= 0.3
    stored = await finish(session, recorder, server)
    assert [getattr(m, "stop_reason", "user") for m in stored] == ["user", "error", "stop"]


@pytest.mark.parametrize("api", APIS)
async def test_the_session_caps_a_long_retry_after_at_max_retry_delay(
    api: str, server: FaultServer, tmp_path: Path
) -> None:
    server.script([Fault.status(503, headers={"retry-after": "3600"}), Reply.text("ok")])
    session, recorder = session_for(
        api, server, tmp_path, retry={"base_delay_ms": 5, "provider": {"max_retry_delay_ms": 50}}
    )
    await session.prompt("hello")
    [start] = [e for e in recorder.events if isinstance(e, AutoRetryStartEvent)]
    assert start.delay_ms == 50
    assert len(server.requests) == 2
    await finish(session, recorder, server)


@pytest.mark.parametrize("api", APIS)
async def test_the_session_does_not_retry_what_the_server_says_not_to(
    api: str, server: FaultServer, tmp_path: Path
) -> None:
    server.script([Fault.status(503, headers={"x-should-retry": "false"}), Reply.text("never")])
    session, recorder = session_for(api, server, tmp_path)
    await session.prompt("hello")
    assert retry_labels(recorder) == []
    assert len(server.requests) == 1
    await finish(session, recorder, server)


@pytest.mark.parametrize("api", APIS)
async def test_a_dripping_stream_ends_at_the_total_time_limit_and_is_not_retried(
    api: str, server: FaultServer, tmp_path: Path
) -> None:
    # Two bytes every 20 ms keep a 5 s idle timeout from ever firing; only the total limit ends the request.
    drip = Reply.text("hello there", fault=Fault.drip(after_events=3, interval_s=0.02))
    server.script([Reply.text("warm"), drip, Reply.text("never")])
    timeouts = {"http_idle_ms": 5_000, "http_total_ms": 1_000}
    session, recorder = session_for(api, server, tmp_path, retry={"max_retries": 3}, timeouts=timeouts)
    await session.prompt("warm up")  # the first request pays for lazy imports, which may take long on a busy machine
    recorder.events.clear()
    recorder.labels.clear()
    await session.prompt("hello")
    final = session.messages[-1]
    assert getattr(final, "stop_reason", None) == "error"
    assert "total time limit of 1 s (timeouts.http_total_ms)" in str(getattr(final, "error_message", ""))
    assert retry_labels(recorder) == []
    stored = await finish(session, recorder, server)  # the server records a request once its connection ends
    assert len(server.requests) == 2  # the drip was not retried, at any layer
    assert [m.role for m in stored] == ["user", "assistant", "user", "assistant"]


@pytest.mark.parametrize("api", APIS)
async def test_stop_mid_stream_settles_aborted_and_closes_the_connection(
    api: str, server: FaultServer, tmp_path: Path
) -> None:
    server.script([Reply.text("word " * 2000, delay_s=0.005)])
    session, recorder = session_for(api, server, tmp_path)
    deltas = 0

    def stop_after_three(event: Any, signal: Any = None) -> None:
        nonlocal deltas
        if getattr(event, "type", "") == "message_update" and event.assistant_message_event.type == "text_delta":
            deltas += 1
            if deltas == 3:
                session.agent.abort()

    session.agent.subscribe(stop_after_three)
    await session.prompt("hello")
    assert "agent_settled:aborted=true" in recorder.labels
    stored = await finish(session, recorder, server)
    assert [getattr(m, "stop_reason", "user") for m in stored] == ["user", "aborted"]
    assert stored[-1].content[0].text.startswith("word word")
