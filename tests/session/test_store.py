"""The JSONL session file: Pi's format, flushed per entry, loadable after SIGKILL, reads Pi's own files."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path
from typing import Any

from session_helpers import error, make_session, reply

from pi_notebook.agent import CustomMessage
from pi_notebook.ai.providers.faux import faux_assistant_message
from pi_notebook.session import CompactionSummaryMessage, SessionStore, load_session

PI_FILE = """\
{"type":"session","version":3,"id":"0199a1b2-0000-7000-8000-000000000000","timestamp":"2026-07-30T10:00:00.000Z","cwd":"/tmp/x"}
{"type":"model_change","id":"a0000001","parentId":null,"timestamp":"2026-07-30T10:00:00.001Z","provider":"anthropic","modelId":"claude-sonnet-4-5"}
{"type":"message","id":"a0000002","parentId":"a0000001","timestamp":"2026-07-30T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"old question"}],"timestamp":1785405601000}}
{"type":"message","id":"a0000003","parentId":"a0000002","timestamp":"2026-07-30T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"old answer"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1785405602000}}
{"type":"message","id":"a0000004","parentId":"a0000003","timestamp":"2026-07-30T10:00:03.000Z","message":{"role":"user","content":[{"type":"text","text":"kept question"}],"timestamp":1785405603000}}
{"type":"compaction","id":"a0000005","parentId":"a0000004","timestamp":"2026-07-30T10:00:04.000Z","summary":"The user asked an old question.","firstKeptEntryId":"a0000004","tokensBefore":15}
{"type":"custom_message","customType":"note","content":"remember this","display":true,"id":"a0000006","parentId":"a0000005","timestamp":"2026-07-30T10:00:05.000Z"}
{"type":"message","id":"a0000007","parentId":"a0000006","timestamp":"2026-07-30T10:00:06.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"ls"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"aborted","errorMessage":"Request was aborted","timestamp":1785405606000}}
{"type":"message","id":"b0000001","parentId":"a0000003","timestamp":"2026-07-30T10:00:07.000Z","message":{"role":"user","content":"an abandoned branch","timestamp":1785405607000}}
{"type":"label","id":"a0000008","parentId":"a0000007","timestamp":"2026-07-30T10:00:08.000Z","targetId":"a0000007","label":"bookmark"}
"""  # noqa: E501


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_every_message_that_reached_message_end_is_written_with_a_header(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.jsonl")
    session, _, _ = make_session([error("503"), faux_assistant_message("word " * 50)], store=store)
    await session.prompt("go")
    entries = lines(store.path)
    assert entries[0]["type"] == "session"
    assert entries[0]["version"] == 3
    assert entries[1]["type"] == "model_change"  # the model the messages after it were made with
    assert (entries[1]["provider"], entries[1]["modelId"]) == (session.model.provider, session.model.id)
    messages = entries[2:]
    assert [e["message"]["role"] for e in messages] == ["user", "assistant", "assistant"]
    assert [e["message"].get("stopReason") for e in messages] == [None, "error", "stop"]
    assert [e["parentId"] for e in entries[1:]] == [None, entries[1]["id"], entries[2]["id"], entries[3]["id"]]
    assert messages[1]["message"]["errorMessage"] == "503"


async def test_loading_rebuilds_the_transcript_and_a_store_continues_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session, _, _ = make_session([reply("one")], store=SessionStore(path))
    await session.prompt("first")
    session.dispose()
    store = SessionStore(path)
    resumed, _, _ = make_session([reply("two")], store=store)
    assert [m.role for m in resumed.messages] == ["user", "assistant"]
    await resumed.prompt("second")
    resumed.dispose()
    loaded = load_session(path)
    assert [getattr(m, "stop_reason", "user") for m in loaded.messages] == ["user", "stop", "user", "stop"]
    assert sum(1 for e in lines(path) if e["type"] == "session") == 1


def test_reads_the_message_entries_of_a_pi_session_file(tmp_path: Path) -> None:
    path = tmp_path / "pi.jsonl"
    path.write_text(PI_FILE)
    loaded = load_session(path)
    assert loaded.header["version"] == 3
    messages = loaded.messages
    assert isinstance(messages[0], CompactionSummaryMessage)
    assert messages[0].summary == "The user asked an old question."
    assert [m.role for m in messages] == ["compactionSummary", "user", "custom", "assistant"]
    assert isinstance(messages[2], CustomMessage)
    assert messages[3].stop_reason == "aborted"  # type: ignore[union-attr]
    assert loaded.leaf_id == "a0000008"
    assert loaded.skipped_lines == 0


def test_compaction_entries_round_trip(tmp_path: Path) -> None:
    from pi_notebook.ai import TextContent, UserMessage

    store = SessionStore(tmp_path / "s.jsonl")
    old, kept = UserMessage(content="old"), UserMessage(content=[TextContent(text="kept")])
    store.append_message(old)
    store.append_message(kept)
    summary = CompactionSummaryMessage(
        summary="summary of old", tokens_before=42, read_files=["a.py"], modified_files=["b.py"]
    )
    store.append_compaction(summary, kept)
    store.close()
    entry = json.loads(store.path.read_text().splitlines()[-1])
    assert entry["details"] == {"readFiles": ["a.py"], "modifiedFiles": ["b.py"]}  # Pi's field names
    loaded = load_session(store.path)
    assert [m.role for m in loaded.messages] == ["compactionSummary", "user"]
    restored = loaded.messages[0]
    assert isinstance(restored, CompactionSummaryMessage)
    assert (restored.summary, restored.tokens_before) == ("summary of old", 42)
    assert (restored.read_files, restored.modified_files) == (["a.py"], ["b.py"])


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore(path)
    from pi_notebook.ai import UserMessage

    store.append_message(UserMessage(content="complete"))
    store.close()
    with open(path, "a") as file:
        file.write('{"type":"message","id":"x","parentId":null,"message":{"role":"us')
    loaded = load_session(path)
    assert [m.role for m in loaded.messages] == ["user"]
    assert loaded.skipped_lines == 1


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
    from pi_notebook.agent import AgentTool, AgentToolResult
    from pi_notebook.session import AgentSession, SessionStore, Settings

    async def execute(call_id, args, signal, on_update):
        return AgentToolResult(content="tool output")

    async def main():
        faux = FauxProvider(token_size=(1, 1), tokens_per_second=200)
        replies = [faux_assistant_message([faux_tool_call("t", {}, id=f"c{i}")], "toolUse") for i in range(200)]
        faux.set_responses(replies)
        tool = AgentTool(name="t", description="", parameters={"type": "object"}, execute=execute)
        session = AgentSession(model=faux.model, stream_fn=faux.stream, tools=[tool],
                               store=SessionStore(sys.argv[1]), settings=Settings(compaction={"enabled": False}))
        ended = 0
        def on_event(event):
            nonlocal ended
            if event.type == "message_end":
                ended += 1
                print(f"ended {ended}", flush=True)
        session.subscribe(on_event)
        await session.prompt("go")

    asyncio.run(main())
    """
)


def test_a_process_killed_with_sigkill_mid_run_leaves_a_loadable_file(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    reported = 0
    with subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None
        try:
            for line in child.stdout:  # printed by a listener: the entry was written before listeners ran
                reported = int(line.split()[1])
                if reported >= 7:
                    break
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL
    loaded = load_session(path)
    assert len(loaded.messages) >= reported
    assert [m.role for m in loaded.messages[:4]] == ["user", "assistant", "toolResult", "assistant"]
    assert loaded.skipped_lines <= 1


def test_a_branched_pi_file_follows_its_current_branch_without_reporting_problems(tmp_path: Path) -> None:
    path = tmp_path / "pi.jsonl"
    path.write_text(PI_FILE)  # its abandoned branch has no child on the current one: no missing parent
    loaded = load_session(path)
    assert [m.role for m in loaded.messages] == ["compactionSummary", "user", "custom", "assistant"]
    assert loaded.problems == []


def test_entry_ids_follow_the_message_key_and_keep_no_message_alive(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.jsonl")
    message = faux_assistant_message("recorded")
    entry_id = store.append_message(message)
    assert store.entry_id(message) == entry_id
    assert store.entry_id(faux_assistant_message("recorded")) is None  # same content, another message
    gone = weakref.ref(message)
    del message
    gc.collect()
    assert gone() is None
    store.close()
