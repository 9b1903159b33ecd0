"""Failed writes (disk full, file-size limit) never tear the session file, keep the run going, are reported,
and what memory holds is written once the disk takes it again."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from session_helpers import DiskFull, make_session, reply

from pi_notebook.ai import UserMessage
from pi_notebook.ai.messages import text_of
from pi_notebook.session import SessionStore, SessionWriteFailedEvent, load_session


def texts_of(path: Path) -> list[str]:
    return [text_of(message) for message in load_session(path).messages]  # type: ignore[arg-type]


def write_state(store: SessionStore) -> tuple[int, str | None]:
    """The entries ``store`` holds unwritten and its last write error, typed as declared (an earlier assert must
    not narrow them: each append changes them)."""
    return store.unwritten, store.write_error


def test_a_disk_full_mid_line_leaves_no_torn_entry_and_the_entries_follow_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore(path)
    events: list[SessionWriteFailedEvent] = []
    store.subscribe(events.append)
    disk = DiskFull(monkeypatch.setattr, store._fd)
    store.append_message(UserMessage(content="one"))
    before = path.read_bytes()
    disk.full = True
    store.append_message(UserMessage(content="two"))
    store.append_message(UserMessage(content="three"))
    assert disk.failures == 2
    assert path.read_bytes() == before  # the half-written lines were truncated away
    assert (store.unwritten, [e.unwritten for e in events]) == (2, [1, 2])
    assert store.write_error == "No space left on device (ENOSPC)"
    assert events[0].reason == (
        f"Could not write session file {path}: No space left on device (ENOSPC); "
        "1 entry kept in memory, retried with the next write"
    )
    disk.full = False
    store.append_message(UserMessage(content="four"))
    assert write_state(store) == (0, None)
    store.close()
    loaded = load_session(path)
    assert [text_of(m) for m in loaded.messages] == ["one", "two", "three", "four"]  # type: ignore[arg-type]
    assert loaded.problems == []


def test_entries_still_unwritten_at_close_are_reported_and_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore(path)
    events: list[SessionWriteFailedEvent] = []
    store.subscribe(events.append)
    DiskFull(monkeypatch.setattr, store._fd).full = True
    store.append_message(UserMessage(content="lost"))
    with caplog.at_level(logging.WARNING, logger="pi_notebook.session._store"):
        store.close()
    assert [(e.unwritten, e.final) for e in events] == [(1, False), (1, True)]
    assert events[-1].reason.endswith("1 entry not written (store closed)")
    assert [r.getMessage() for r in caplog.records] == [events[-1].reason]
    assert load_session(path).messages == [] and load_session(path).problems == []


def test_a_new_file_on_a_full_disk_is_a_clear_error() -> None:
    with pytest.raises(OSError, match=r"^\[Errno 28\] cannot write to session file /dev/full: No space left"):
        SessionStore("/dev/full")


async def test_a_session_reports_a_failed_write_and_its_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    store = SessionStore(path)
    disk = DiskFull(monkeypatch.setattr, store._fd)
    disk.full = True
    session, recorder, _ = make_session([reply("one"), reply("two")], store=store)
    await session.prompt("first")
    assert recorder.labels.count("agent_settled:aborted=false") == 1
    failed = [e for e in recorder.events if e.type == "session_write_failed"]
    assert [e.unwritten for e in failed] == [1, 2, 3]  # the model_change entry, the prompt, the reply
    assert [getattr(m, "stop_reason", None) for m in session.messages] == [None, "stop"]
    disk.full = False
    await session.prompt("second")
    session.dispose()
    assert texts_of(path) == ["first", "one", "second", "two"]


CHILD = textwrap.dedent(
    """
    import asyncio, json, resource, signal, sys
    from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
    from pi_notebook.agent import AgentTool, AgentToolResult
    from pi_notebook.session import AgentSession, SessionStore, Settings

    async def execute(call_id, args, signal, on_update):
        return AgentToolResult(content="tool output " * 50)

    async def main(path, limit):
        faux = FauxProvider(token_size=(1000, 1000))
        text = "a reply that does not fit " * 40
        replies = [faux_assistant_message([faux_tool_call("t", {}, id=f"c{i}")], "toolUse") for i in range(12)]
        faux.set_responses([*replies, faux_assistant_message(text)])
        tool = AgentTool(name="t", description="", parameters={"type": "object"}, execute=execute)
        store = SessionStore(path)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        session = AgentSession(model=faux.model, stream_fn=faux.stream, tools=[tool], store=store,
                               settings=Settings(compaction={"enabled": False}, retry={"enabled": False}))
        kinds = []
        session.subscribe(lambda event: kinds.append(event.type))
        await session.prompt("go")
        summary = {"failed": kinds.count("session_write_failed"), "settled": kinds.count("agent_settled"),
                   "messages": len(session.messages), "last": session.messages[-1].stop_reason,
                   "unwritten": store.unwritten, "error": store.write_error}
        print(json.dumps(summary), flush=True)

    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
    """
)


def test_a_file_size_limit_mid_run_leaves_a_loadable_prefix_and_the_run_finishes(tmp_path: Path) -> None:
    path, limit = tmp_path / "limited.jsonl", 6000
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(limit)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["settled"], summary["messages"], summary["last"]) == (1, 26, "stop")  # the run went on
    assert summary["failed"] >= 1 and summary["unwritten"] >= 1
    assert summary["error"] == "File too large (EFBIG)"
    assert os.path.getsize(path) <= limit
    loaded = load_session(path)
    assert loaded.problems == []  # no torn line
    assert 0 < len(loaded.messages) == 26 - summary["unwritten"]
    assert [m.role for m in loaded.messages[:3]] == ["user", "assistant", "toolResult"]
