"""The session tree: ``leaf_id`` and ``branch_to`` (the contract ``%pi rewind`` builds on), with a file and without."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from session_helpers import make_session, reply

from pi_notebook.ai import AssistantMessage, UserMessage
from pi_notebook.ai.messages import text_of
from pi_notebook.session import (
    AgentSession,
    SessionBusyError,
    SessionStore,
    SessionTreeEvent,
    TreeError,
    load_session,
)


def texts(messages: Any) -> list[str]:
    return [text_of(m) for m in messages if isinstance(m, UserMessage | AssistantMessage)]


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()][1:]


def by_text(path: Path, text: str) -> dict[str, Any]:
    """The message entry whose message's text is ``text``."""
    for entry in entries(path):
        message = entry.get("message")
        if message and text_of(AssistantMessage.model_validate(message) if message["role"] == "assistant"
                               else UserMessage.model_validate(message)) == text:  # fmt: skip
            return entry
    raise AssertionError(f"no entry {text!r}")


async def two_prompts(session: AgentSession) -> None:
    await session.prompt("first")
    await session.prompt("second")


async def test_leaf_id_is_the_last_entry_and_branch_to_continues_from_an_earlier_one(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore(path)
    session, rec, _ = make_session([reply("one"), reply("two"), reply("three")], store=store)
    assert session.leaf_id is None
    await two_prompts(session)
    assert session.leaf_id == store.entry_id(session.messages[-1]) == entries(path)[-1]["id"]
    one = by_text(path, "one")["id"]
    session.branch_to(one)
    assert session.leaf_id == one
    assert texts(session.messages) == ["first", "one"]
    assert [e for e in rec.events if isinstance(e, SessionTreeEvent)] == [
        SessionTreeEvent(one, by_text(path, "two")["id"])
    ]
    await session.prompt("third")
    assert by_text(path, "third")["parentId"] == one
    assert texts(session.messages) == ["first", "one", "third", "three"]
    session.dispose()
    assert texts(load_session(path).messages) == ["first", "one", "third", "three"]
    assert by_text(path, "second")["parentId"] == one  # the branch left behind stays in the file


async def test_a_branch_to_with_nothing_after_it_is_where_the_file_continues(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session, _, _ = make_session([reply("one"), reply("two"), reply("three")], store=SessionStore(path))
    await two_prompts(session)
    one = by_text(path, "one")["id"]
    session.branch_to(one)
    session.dispose()
    loaded = load_session(path)
    assert (texts(loaded.messages), loaded.leaf_id) == (["first", "one"], one)
    resumed, _, _ = make_session([reply("three")], store=SessionStore(path))
    assert resumed.leaf_id == one and texts(resumed.messages) == ["first", "one"]
    await resumed.prompt("third")
    assert by_text(path, "third")["parentId"] == one
    resumed.dispose()


async def test_branch_to_none_goes_back_to_before_the_first_entry(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session, _, _ = make_session([reply("one"), reply("two"), reply("again")], store=SessionStore(path))
    await two_prompts(session)
    session.branch_to(None)
    assert session.leaf_id is None and session.messages == []
    assert load_session(path).messages == []
    await session.prompt("anew")
    assert by_text(path, "anew")["parentId"] is None
    session.dispose()
    assert texts(load_session(path).messages) == ["anew", "again"]


async def test_without_a_file_the_tree_is_kept_in_memory() -> None:
    session, _, _ = make_session([reply("one"), reply("two"), reply("three")])
    await two_prompts(session)
    first_reply = session.messages[1]
    leaf = session.leaf_id
    assert leaf is not None
    tree = session.tree()
    assert tree.leaf_id == leaf and len(tree.branch) == 5  # model change, then four messages
    one = next(node.entry.id for _, node in tree.walk() if node.entry.text == "one")
    session.branch_to(one)
    assert session.messages == session.messages[:2] and texts(session.messages) == ["first", "one"]
    assert session.messages[1] == first_reply
    await session.prompt("third")
    assert texts(session.messages) == ["first", "one", "third", "three"]
    session.branch_to(leaf)  # and back to the branch left behind
    assert texts(session.messages) == ["first", "one", "second", "two"]


async def test_branch_to_an_unknown_entry_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session, _, _ = make_session([reply("one")], store=SessionStore(path))
    await session.prompt("first")
    before, leaf, messages = path.read_bytes(), session.leaf_id, list(session.messages)
    with pytest.raises(TreeError, match="no entry 'nope' in this session"):
        session.branch_to("nope")
    assert isinstance(TreeError("x"), ValueError)
    assert (path.read_bytes(), session.leaf_id, session.messages) == (before, leaf, messages)
    session.dispose()


async def test_branch_to_while_a_run_is_active_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session, rec, _ = make_session([reply("one"), reply("two " * 200)], tps=200, store=SessionStore(path))
    await session.prompt("first")
    one = session.leaf_id
    updates = rec.types().count("message_update")
    run = asyncio.create_task(session.prompt("second"))
    await rec.wait_for("message_update", count=updates + 1)
    leaf = session.leaf_id
    with pytest.raises(SessionBusyError, match="Wait for the current response to finish"):
        session.branch_to(one)
    assert session.leaf_id == leaf
    await session.abort()
    await run
    assert texts(session.messages)[:3] == ["first", "one", "second"]
    session.dispose()


async def test_branch_to_the_leaf_itself_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session, rec, _ = make_session([reply("one")], store=SessionStore(path))
    await session.prompt("first")
    before = path.read_bytes()
    session.branch_to(session.leaf_id)
    assert path.read_bytes() == before
    assert not [e for e in rec.events if isinstance(e, SessionTreeEvent)]
    session.dispose()


@pytest.mark.parametrize("saved", [True, False], ids=["file", "memory"])
async def test_branch_to_before_a_compaction_brings_back_the_messages_it_summarised(
    tmp_path: Path, saved: bool
) -> None:
    store = SessionStore(tmp_path / "s.jsonl") if saved else None
    settings = {"compaction": {"enabled": True, "keep_recent_tokens": 5}}
    session, _, _ = make_session(
        [reply("one"), reply("two"), reply("three"), reply("summary"), reply("prefix")], store=store, settings=settings
    )
    for text in ("first", "second", "third"):
        await session.prompt(text)
    await session.compact()
    assert session.messages[0].role == "compactionSummary" and "first" not in texts(session.messages)
    one = next(node.entry.id for _, node in session.tree().walk() if node.entry.text == "one")
    session.branch_to(one)
    assert texts(session.messages) == ["first", "one"]
    session.branch_to(session.tree().branch[-1])  # no-op: already there
    compaction = next(node.entry.id for _, node in session.tree().walk() if node.entry.type == "compaction")
    session.branch_to(compaction)
    assert session.messages[0].role == "compactionSummary"
    session.dispose()
