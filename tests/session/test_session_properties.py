"""Random interleavings of prompt / steer / follow_up / abort / continue_ / clear_queue keep the invariants of
DESIGN.md §2: one agent_start/agent_end per run, one agent_settled per operation (emitted when idle), and no
queued message lost or delivered twice."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_notebook.agent import AgentTool, AgentToolResult
from pi_notebook.ai.messages import text_of
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_notebook.session import AgentSession, SessionBusyError, Settings

ACTIONS = st.lists(
    st.one_of(
        st.tuples(st.just("prompt")),
        st.tuples(st.just("continue")),
        st.tuples(st.just("steer")),
        st.tuples(st.just("follow")),
        st.tuples(st.just("abort")),
        st.tuples(st.just("clear")),
        st.tuples(st.just("tick"), st.integers(1, 30)),
    ),
    max_size=25,
)
REPLIES = st.lists(st.sampled_from(["text", "tool", "error", "long"]), min_size=1, max_size=12)


def script(kind: str, index: int) -> Any:
    if kind == "tool":
        return faux_assistant_message([faux_tool_call("echo", {}, id=f"call{index}")], "toolUse")
    if kind == "error":
        return faux_assistant_message([], "error", "503 service unavailable")
    if kind == "long":
        return faux_assistant_message("word " * 40)
    return faux_assistant_message(f"reply {index}")


async def echo(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    await asyncio.sleep(0)
    return AgentToolResult(content="echo")


async def scenario(actions: list[tuple[Any, ...]], replies: list[str]) -> None:
    faux = FauxProvider(tokens_per_second=50_000, token_size=(1, 1))
    faux.set_responses([script(kind, i) for i, kind in enumerate(replies * 4)])
    tool = AgentTool(name="echo", description="", parameters={"type": "object"}, execute=echo)
    session = AgentSession(
        model=faux.model,
        stream_fn=faux.stream,
        tools=[tool],
        settings=Settings(retry={"max_retries": 2, "base_delay_ms": 0}, compaction={"enabled": False}),
    )
    events: list[Any] = []
    idle_at_settle: list[bool] = []

    def listen(event: Any) -> None:
        events.append(event)
        if event.type == "agent_settled":
            idle_at_settle.append(session.is_idle)

    session.subscribe(listen)
    operations: list[asyncio.Task[None]] = []
    queued: list[str] = []
    handed_back: list[str] = []
    counter = 0

    async def start(coroutine: Any) -> None:
        async def run() -> None:
            try:
                await coroutine
            except RuntimeError as exc:  # continue_ from an assistant tail with nothing queued
                assert "Cannot continue" in str(exc) or "No messages" in str(exc)  # noqa: PT017

        operations.append(asyncio.create_task(run()))
        await asyncio.sleep(0)

    for action in actions:
        kind = action[0]
        if kind in ("prompt", "continue"):
            if session.is_idle:
                coroutine = session.prompt(f"prompt {counter}") if kind == "prompt" else session.continue_()
                counter += 1
                await start(coroutine)
            elif kind == "prompt":
                try:
                    await session.prompt("rejected")
                except SessionBusyError:
                    pass
                else:
                    raise AssertionError("prompt while busy must raise")
        elif kind in ("steer", "follow"):
            text = f"{kind} {counter}"
            counter += 1
            queued.append(text)
            await (session.steer(text) if kind == "steer" else session.follow_up(text))
        elif kind == "abort":
            await asyncio.wait_for(session.abort(), timeout=10)
        elif kind == "clear":
            snapshot = session.clear_queue()
            handed_back += snapshot.steering + snapshot.follow_up
        else:
            for _ in range(action[1]):
                await asyncio.sleep(0)
    await asyncio.wait_for(asyncio.gather(*operations), timeout=20)
    await session.wait_for_idle()
    remaining = session.clear_queue()
    handed_back += remaining.steering + remaining.follow_up

    # one agent_start / agent_end per run, never nested
    depth = 0
    for event in events:
        if event.type == "agent_start":
            assert depth == 0
            depth = 1
        elif event.type == "agent_end":
            assert depth == 1
            depth = 0
    assert depth == 0
    # one agent_settled per operation, each emitted once the session is idle
    assert sum(1 for e in events if e.type == "agent_settled") == len(operations)
    assert all(idle_at_settle)
    # every queued message delivered exactly once or handed back, never both, never lost
    delivered = Counter(text_of(m) for m in session.messages if m.role == "user")  # type: ignore[arg-type]
    for text in queued:
        assert delivered[text] + handed_back.count(text) == 1, (text, delivered[text], handed_back)
    assert not session.agent.has_queued_messages()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=ACTIONS, replies=REPLIES)
def test_interleavings_keep_the_run_and_queue_invariants(actions: list[tuple[Any, ...]], replies: list[str]) -> None:
    asyncio.run(scenario(actions, replies))
