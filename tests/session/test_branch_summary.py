"""``navigate_tree``: going to any entry with a branch summary written as Pi 0.83 writes it (its entry, its prompt,
how it enters the next context), stoppable by ``abort()`` and retried like a compaction summary."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from session_helpers import error, make_session, reply

from pi_notebook.ai import AssistantMessage, UserMessage
from pi_notebook.ai.messages import text_of
from pi_notebook.ai.providers.faux import faux_assistant_message, faux_tool_call
from pi_notebook.session import (
    AgentSession,
    BranchSummaryFailed,
    BranchSummaryMessage,
    SessionBusyError,
    SessionStore,
    TreeError,
    load_session,
)
from pi_notebook.session._branch_summary import (
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PREFIX,
    BRANCH_SUMMARY_PROMPT,
    BRANCH_SUMMARY_SUFFIX,
)
from pi_notebook.session._summary import SYSTEM_PROMPT


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()][1:]


def texts(messages: Any) -> list[str]:
    return [text_of(m) if isinstance(m, UserMessage | AssistantMessage) else m.role for m in messages]


class Requests:
    """Replies that keep the context and options of the request they answer."""

    def __init__(self) -> None:
        self.sent: list[tuple[Any, Any]] = []

    def __call__(self, response: Any) -> Any:
        def respond(context: Any, options: Any, *_: Any) -> Any:
            self.sent.append((context, options))
            return response

        return respond


def ids(session: AgentSession) -> dict[str, str]:
    """Entry id by text, for the message entries of the tree."""
    return {node.entry.text: node.entry.id for _, node in session.tree().walk() if node.entry.type == "message"}


async def test_going_back_to_a_prompt_writes_pis_branch_summary_and_gives_the_prompt_back(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    asked = Requests()
    read = faux_tool_call("read", {"path": "notes.md"})
    write = faux_tool_call("write", {"path": "out.py", "content": "x = 1"})
    responses = [reply("one"), faux_assistant_message([read, write], "toolUse"), reply("two"), asked(reply("gist"))]
    session, rec, _ = make_session(responses, store=SessionStore(path))
    await session.prompt("first")
    await session.prompt("second")
    at = ids(session)
    result = await session.navigate_tree(at["second"])
    assert (result.editor_text, result.cancelled, result.aborted) == ("second", False, False)
    assert session.leaf_id == result.summary_entry_id == entries(path)[-1]["id"]
    summary = entries(path)[-1]
    files = "\n\n<read-files>\nnotes.md\n</read-files>\n\n<modified-files>\nout.py\n</modified-files>"
    assert summary == {
        "type": "branch_summary",
        "id": result.summary_entry_id,
        "parentId": at["one"],
        "timestamp": summary["timestamp"],
        "fromId": at["one"],
        "summary": BRANCH_SUMMARY_PREAMBLE + "gist" + files,
        "details": {"readFiles": ["notes.md"], "modifiedFiles": ["out.py"]},
        "usage": summary["usage"],
        "fromHook": False,
    }
    assert summary["usage"]["output"] > 0
    (context, options) = asked.sent[-1]
    assert context.system_prompt == SYSTEM_PROMPT and options.max_tokens == 2048
    # Pi summarises from the old leaf back to the deepest entry on both paths: the prompt gone back to is on both,
    # so it is not in the summary (it comes back as editor_text); tool results are left out.
    conversation = (
        '[Assistant tool calls]: read(path="notes.md"); write(path="out.py", content="x = 1")\n\n[Assistant]: two'
    )
    assert text_of(context.messages[0]) == f"<conversation>\n{conversation}\n</conversation>\n\n{BRANCH_SUMMARY_PROMPT}"
    assert texts(session.messages) == ["first", "one", "branchSummary"]
    last = session.messages[-1]
    assert isinstance(last, BranchSummaryMessage)
    assert text_of(last.to_llm()) == BRANCH_SUMMARY_PREFIX + summary["summary"] + BRANCH_SUMMARY_SUFFIX
    assert [e.type for e in rec.events if "branch" in e.type or e.type == "session_tree"] == [
        "branch_summary_start",
        "branch_summary_end",
        "session_tree",
    ]
    session.dispose()
    loaded = load_session(path)
    assert texts(loaded.messages) == ["first", "one", "branchSummary"]
    assert isinstance(loaded.messages[-1], BranchSummaryMessage) and loaded.messages[-1].modified_files == ["out.py"]


async def test_the_next_prompt_continues_after_the_summary_and_the_model_sees_it() -> None:
    asked = Requests()
    session, _, _ = make_session([reply("one"), reply("two"), reply("gist"), asked(reply("three"))])
    await session.prompt("first")
    await session.prompt("second")
    await session.navigate_tree(ids(session)["second"])
    await session.prompt("third")
    sent = [text_of(m) for m in asked.sent[-1][0].messages]
    assert sent[:2] == ["first", "one"]
    assert sent[2].startswith(BRANCH_SUMMARY_PREFIX + BRANCH_SUMMARY_PREAMBLE + "gist")
    assert sent[3:] == ["third"]


async def test_going_to_a_reply_makes_it_the_leaf_and_gives_no_text_back() -> None:
    session, _, _ = make_session([reply("one"), reply("two"), reply("gist")])
    await session.prompt("first")
    await session.prompt("second")
    result = await session.navigate_tree(ids(session)["one"])
    assert result.editor_text is None
    summary_entry = session.tree().find(session.leaf_id or "")
    assert summary_entry is not None and summary_entry.entry.type == "branch_summary"
    assert texts(session.messages) == ["first", "one", "branchSummary"]


async def test_without_summarize_the_leaf_moves_and_no_request_is_made(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session, rec, faux = make_session([reply("one"), reply("two")], store=SessionStore(path))
    await session.prompt("first")
    await session.prompt("second")
    result = await session.navigate_tree(ids(session)["second"], summarize=False)
    assert (result.summary_entry_id, result.editor_text) == (None, "second")
    assert faux.state.call_count == 2 and not [e for e in rec.events if e.type == "branch_summary_start"]
    assert session.leaf_id == ids(session)["one"] and texts(session.messages) == ["first", "one"]
    session.dispose()
    assert texts(load_session(path).messages) == ["first", "one"]


async def test_going_to_the_leaf_is_nothing_and_an_unknown_entry_is_refused() -> None:
    session, _, faux = make_session([reply("one")])
    await session.prompt("first")
    leaf = session.leaf_id
    assert leaf is not None
    result = await session.navigate_tree(leaf)
    assert (result.cancelled, result.new_leaf_id, result.summary_entry_id) == (False, leaf, None)
    with pytest.raises(TreeError, match="no entry 'zz' in this session"):
        await session.navigate_tree("zz")
    assert session.leaf_id == leaf and faux.state.call_count == 1 and session.is_idle


async def test_abort_stops_the_summary_and_nothing_moves(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    long_summary = faux_assistant_message("summary " * 3000)
    session, rec, _ = make_session([reply("one"), reply("two"), long_summary], tps=2000, store=SessionStore(path))
    await session.prompt("first")
    await session.prompt("second")
    before, leaf, messages = path.read_bytes(), session.leaf_id, list(session.messages)
    navigation = asyncio.create_task(session.navigate_tree(ids(session)["second"]))
    await rec.wait_for("branch_summary_start")
    assert not session.is_idle
    with pytest.raises(SessionBusyError, match="branch summary is being written"):
        await session.prompt("meanwhile")
    await asyncio.wait_for(session.abort(), timeout=5)
    result = await navigation
    assert (result.cancelled, result.aborted) == (True, True)
    assert (path.read_bytes(), session.leaf_id, session.messages) == (before, leaf, messages)
    end = [e for e in rec.events if e.type == "branch_summary_end"]
    assert [(e.aborted, e.result) for e in end] == [(True, None)]
    assert session.is_idle
    session.dispose()


async def test_the_summary_request_is_retried_like_a_compaction_summary() -> None:
    session, rec, faux = make_session([reply("one"), reply("two"), error("terminated"), reply("gist")])
    await session.prompt("first")
    await session.prompt("second")
    result = await session.navigate_tree(ids(session)["second"])
    assert result.summary_entry_id is not None and faux.state.call_count == 4
    retries = [e for e in rec.events if e.type.startswith("summarization_retry")]
    assert [e.type for e in retries] == [
        "summarization_retry_scheduled",
        "summarization_retry_attempt_start",
        "summarization_retry_finished",
    ]
    assert (retries[1].source, retries[1].reason) == ("branchSummary", None)


async def test_abort_in_the_summarys_retry_backoff_stops_it_at_once() -> None:
    slow = {"retry": {"enabled": True, "max_retries": 3, "base_delay_ms": 60_000}}
    session, rec, faux = make_session([reply("one"), reply("two"), error("terminated")], settings=slow)
    await session.prompt("first")
    await session.prompt("second")
    leaf = session.leaf_id
    navigation = asyncio.create_task(session.navigate_tree(ids(session)["second"]))
    await rec.wait_for("summarization_retry_scheduled")
    await asyncio.wait_for(session.abort(), timeout=5)
    assert (await navigation).aborted and session.leaf_id == leaf and faux.state.call_count == 3


async def test_a_failed_summary_raises_and_nothing_moves() -> None:
    session, rec, _ = make_session([reply("one"), reply("two"), error("401 invalid_api_key")])
    await session.prompt("first")
    await session.prompt("second")
    leaf, messages = session.leaf_id, list(session.messages)
    with pytest.raises(BranchSummaryFailed, match="Branch summary failed: 401 invalid_api_key"):
        await session.navigate_tree(ids(session)["second"])
    assert (session.leaf_id, session.messages, session.is_idle) == (leaf, messages, True)
    assert [e.error_message for e in rec.events if e.type == "branch_summary_end"] == [
        "Branch summary failed: 401 invalid_api_key"
    ]


async def test_navigating_while_a_run_is_active_is_refused() -> None:
    session, rec, _ = make_session([reply("one"), reply("two " * 300)], tps=300)
    await session.prompt("first")
    target = ids(session)["first"]
    updates = rec.types().count("message_update")
    run = asyncio.create_task(session.prompt("second"))
    await rec.wait_for("message_update", count=updates + 1)
    with pytest.raises(SessionBusyError, match="Wait for the current response to finish"):
        await session.navigate_tree(target)
    await session.abort()
    await run


async def test_abort_stops_retry_then_compaction_then_branch_summary_then_the_run() -> None:
    session, _, _ = make_session([])
    calls: list[str] = []
    parts: dict[str, Any] = {
        "retry": session._retry,
        "compaction": session._compactor,
        "branch summary": session._navigator,
    }
    for name, part in parts.items():
        part.abort = lambda name=name: calls.append(name)
    session.agent.abort = lambda *_: calls.append("run")  # type: ignore[method-assign]
    await session.abort()
    assert calls == ["retry", "compaction", "branch summary", "run"]  # seed 002's order
