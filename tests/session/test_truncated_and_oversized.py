"""Issue 17 items 2 and 5 over real loopback HTTP: a reply cut short (``length``) stays in the transcript unless
its turn really runs again, and a prompt too large for the model's window leaves the context once the recovery
failed, so the next prompt works. Both say what happened in ``compaction_end``'s ``error_message``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from wire_apis import APIS, model_for, output_limit, sent_text

from pi_notebook.ai import AssistantMessage, TextContent, UserMessage, close_connections
from pi_notebook.ai.messages import text_of
from pi_notebook.session import AgentSession, CompactionEndEvent, SessionStore, Settings, load_session
from pi_notebook.session._summary import fit_conversation
from pi_notebook.testing import EventRecorder, Fault, FaultServer, Reply, TokenUsage

PARTIAL = "The first half of a long answer"
LLAMA_OVERFLOW = "request (2407 tokens) exceeds the available context size (2048 tokens), try increasing it"


def session_for(
    api: str, server: FaultServer, tmp_path: Path, *, window: int = 128_000, messages: Any = (), keep: int = 20_000
) -> tuple[AgentSession, EventRecorder]:
    settings = Settings(
        retry={"base_delay_ms": 5}, compaction={"enabled": True, "keep_recent_tokens": keep, "reserve_tokens": 16}
    )
    store = SessionStore(tmp_path / f"{api}.jsonl")
    model = model_for(api, server, keyless=True, context_window=window)
    session = AgentSession(model=model, settings=settings, store=store, messages=messages)
    recorder = EventRecorder("session")
    session.subscribe(recorder)
    return session, recorder


async def settle(session: AgentSession, recorder: EventRecorder, server: FaultServer) -> list[Any]:
    """One agent_settled, no connection left; the messages of the session file."""
    assert [label for label in recorder.labels if label.startswith("agent_settled")] == ["agent_settled:aborted=false"]
    assert session.store is not None
    session.store.close()
    await close_connections()
    await server.wait_until_async(lambda s: s.open_connections == 0)
    return load_session(session.store.path).messages


def compaction_ends(recorder: EventRecorder) -> list[CompactionEndEvent]:
    return [event for event in recorder.events if isinstance(event, CompactionEndEvent)]


def truncated(text: str = PARTIAL) -> Reply:
    return Reply.text(text, stop_reason="length", usage=TokenUsage(input_tokens=40, output_tokens=7))


def history(turns: int) -> list[Any]:
    out: list[Any] = []
    for i in range(turns):
        out.append(UserMessage(content=[TextContent(text=f"question {i} " + "x" * 400)]))
        out.append(AssistantMessage(content=[TextContent(text=f"answer {i} " + "y" * 400)], stop_reason="stop"))
    return out


def sent_texts(server: FaultServer, index: int) -> str:
    """Everything the request ``index`` gave the model as text (any wire format)."""
    return sent_text(server.requests[index])


# -- item 2: a truncated reply ------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
async def test_a_truncated_reply_with_nothing_to_compact_is_kept_and_said_so(
    api: str, server: FaultServer, tmp_path: Path
) -> None:
    server.script([truncated()])
    session, recorder = session_for(api, server, tmp_path)
    await session.prompt("tell me everything")
    last = session.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "length" and text_of(last) == PARTIAL
    assert [e.error_message for e in compaction_ends(recorder)] == [
        "Truncated response recovery failed: nothing to compact. The truncated reply is kept."
    ]
    assert len(server.requests) == 1
    await settle(session, recorder, server)


@pytest.mark.parametrize("api", APIS)
async def test_a_kept_truncated_reply_reaches_the_model_with_the_next_prompt(
    api: str, server: FaultServer, tmp_path: Path
) -> None:
    server.script([truncated(), Reply.text("the rest")])
    session, recorder = session_for(api, server, tmp_path)
    await session.prompt("tell me everything")
    await session.prompt("go on")
    assert PARTIAL in sent_texts(server, 1)
    assert len(compaction_ends(recorder)) == 1  # the kept reply is not recovered again before the prompt
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant"]
    assert recorder.labels.count("agent_settled:aborted=false") == 2


@pytest.mark.parametrize("api", APIS)
async def test_a_truncated_reply_is_kept_when_the_summary_fails(api: str, server: FaultServer, tmp_path: Path) -> None:
    server.script([truncated(), Fault.unauthorized()])
    session, recorder = session_for(api, server, tmp_path, messages=history(4), keep=200)
    await session.prompt("tell me everything")
    last = session.messages[-1]
    assert isinstance(last, AssistantMessage) and text_of(last) == PARTIAL
    (end,) = compaction_ends(recorder)
    assert end.error_message is not None and end.error_message.startswith("Context overflow recovery failed:")
    await settle(session, recorder, server)


@pytest.mark.parametrize("api", APIS)
async def test_a_truncated_reply_leaves_only_when_its_turn_runs_again(
    api: str, server: FaultServer, tmp_path: Path
) -> None:
    server.script([truncated(), Reply.text("## Goal\nsummary"), truncated("cut short again")])
    session, recorder = session_for(api, server, tmp_path, messages=history(4), keep=200)
    await session.prompt("tell me everything")
    ends = compaction_ends(recorder)
    assert [(e.will_retry, e.error_message) for e in ends] == [
        (True, None),
        (False, "Truncated response recovery failed after one compact-and-retry attempt. The truncated reply is kept."),
    ]
    texts = [text_of(m) for m in session.messages if isinstance(m, AssistantMessage)]
    assert PARTIAL not in texts  # really retried: the first cut reply made way for the second
    assert texts[-1] == "cut short again"
    await settle(session, recorder, server)
    assert session.store is not None and PARTIAL in session.store.path.read_text()  # the file keeps every reply


# -- item 5: a prompt that does not fit ---------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
async def test_a_prompt_too_large_to_compact_leaves_the_context_and_the_next_prompt_works(
    api: str, server: FaultServer, tmp_path: Path
) -> None:
    huge = "word " * 2000
    server.script([Fault.status(400, message=LLAMA_OVERFLOW), Reply.text("fine")])
    session, recorder = session_for(api, server, tmp_path, window=2048)
    await session.prompt(huge)
    (end,) = compaction_ends(recorder)
    assert end.error_message == (
        "Context overflow recovery failed: nothing to compact. "
        "The prompt that did not fit (about 2500 tokens) left the context; the session file keeps it."
    )
    assert session.messages == []
    await session.prompt("something small")
    assert "word word" not in sent_texts(server, 1)
    assert text_of(session.messages[-1]) == "fine"  # type: ignore[arg-type]
    session.store.close()  # type: ignore[union-attr]
    on_file = load_session(session.store.path).messages  # type: ignore[union-attr]
    assert any(isinstance(m, UserMessage) and text_of(m) == huge for m in on_file)


# -- item 5: the summary request fits the model's window ------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
async def test_the_summary_request_fits_a_small_window(api: str, server: FaultServer, tmp_path: Path) -> None:
    big = [
        m
        for i in range(30)
        for m in (
            UserMessage(content=[TextContent(text=f"question {i} " + "x" * 1500)]),
            AssistantMessage(content=[TextContent(text=f"answer {i} " + "y" * 1500)], stop_reason="stop"),
        )
    ]  # about 22,500 tokens: more than the default keep_recent_tokens, so Pi's settings compact it too
    server.script([Reply.text("## Goal\nsummary"), Reply.text("the turn's start"), Reply.text("ok")])
    session, recorder = session_for(api, server, tmp_path, window=2048, messages=big)
    session.settings = Settings(retry={"base_delay_ms": 5})  # Pi's compaction defaults: reserve 16,384, keep 20,000
    await session.prompt("go")  # the transcript is over the threshold: compacted before the prompt
    assert [(e.reason, e.error_message) for e in compaction_ends(recorder)] == [("threshold", None)]
    summary, turn_prefix, prompt = server.requests
    assert "characters left out to fit the model's context window" in sent_text(summary)
    for request in (summary, turn_prefix):
        limit = output_limit(request)
        assert limit is not None and 0 < limit <= 2048 // 4
        assert len(sent_text(request)) / 3 + limit <= 2048  # even at 3 characters a token
    assert len(sent_text(prompt)) / 4 < 2048
    assert text_of(session.messages[-1]) == "ok"  # type: ignore[arg-type]
    await settle(session, recorder, server)


@pytest.mark.parametrize(
    ("window", "expected"),
    [(0, (16_384, 20_000)), (2048, (512, 768)), (32_768, (16_384, 8192)), (128_000, (16_384, 20_000))],
)
def test_compaction_limits_fit_the_window(window: int, expected: tuple[int, int]) -> None:
    assert Settings().compaction.for_window(window) == expected


def test_a_conversation_is_shortened_in_its_middle() -> None:
    text = "start " + "m" * 5000 + " end"
    short = fit_conversation(text, 500)
    assert len(short) <= 1500
    assert short.startswith("start ") and short.endswith(" end")
    note = re.search(r"\n\n\[\.\.\. (\d+) characters left out to fit the model's context window \.\.\.\]\n\n", short)
    assert note is not None
    assert int(note[1]) == len(text) - (len(short) - len(note[0]))  # the note counts what it stands for
    assert fit_conversation("small", 500) == "small"


@pytest.mark.parametrize("api", APIS)
async def test_a_resumed_transcript_ending_in_a_prompt_that_did_not_fit_recovers_too(
    api: str, server: FaultServer, tmp_path: Path
) -> None:
    huge = "word " * 2000
    failed = AssistantMessage(content=[], stop_reason="error", error_message=LLAMA_OVERFLOW)
    earlier = [UserMessage(content=[TextContent(text="hi")]), AssistantMessage(content=[TextContent(text="hello")])]
    resumed = [*earlier, UserMessage(content=[TextContent(text=huge)]), failed]  # as load_session gives it back
    server.script([Reply.text("## Goal\nsay hi"), Fault.status(400, message=LLAMA_OVERFLOW), Reply.text("fine")])
    session, recorder = session_for(api, server, tmp_path, window=2048, messages=resumed)
    await session.prompt("small")  # over the threshold: compacted first (the huge prompt is kept), then overflows
    ends = compaction_ends(recorder)
    assert [(e.reason, e.error_message is None) for e in ends] == [("threshold", True), ("overflow", False)]
    assert "The 2 user messages that did not fit (about 2502 tokens)" in str(ends[-1].error_message)
    assert [m.role for m in session.messages] == ["compactionSummary"]
    await session.prompt("small again")
    assert "word word" not in sent_texts(server, 2)
    assert text_of(session.messages[-1]) == "fine"  # type: ignore[arg-type]
