"""Issue 30 item 13: session files are never read whole to describe them or to refuse them. ``list_sessions`` (what
``%pi sessions`` and the ``%load_ext`` greeting read) reads a file's head and tail, and counts messages in one
streamed pass only up to ``COUNT_LIMIT``; ``AgentSession.resume`` (``%pi resume``) refuses a file too large, or
one whose first line is not a session header, before reading it. Bytes read are the process's own count
(``/proc/self/io``, ``rchar``), so the tests measure what was read, not how long it took."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_notebook.ai import AssistantMessage, TextContent, ToolResultMessage, UserMessage
from pi_notebook.ai.providers.faux import FauxProvider
from pi_notebook.session import AgentSession, SessionFileError, SessionStore, _catalog, list_sessions

MB = 1 << 20


def bytes_read() -> int:
    with open("/proc/self/io", encoding="ascii") as io:
        return int(next(line for line in io if line.startswith("rchar:")).split()[1])


def write_session(folder: Path, turns: int) -> Path:
    """A session of ``turns`` (prompt, 4 KB tool result, reply): about ``turns * 4.5`` KB."""
    with SessionStore.new(folder) as store:
        for turn in range(turns):
            store.append_message(UserMessage(content=[TextContent(text=f"question {turn}")]))
            result = ToolResultMessage(
                tool_call_id=f"c{turn}", tool_name="bash", content=[TextContent(text="x" * 4096)]
            )
            store.append_message(result)
            store.append_message(AssistantMessage(content=[TextContent(text="done")], provider="p", model="m"))
        return store.path


def test_listing_a_large_session_reads_its_head_and_tail_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_session(tmp_path, 3000)  # about 13 MB
    size = path.stat().st_size
    monkeypatch.setattr(_catalog, "COUNT_LIMIT", MB, raising=False)  # too large to count
    before = bytes_read()
    [info] = list_sessions(tmp_path)
    read = bytes_read() - before
    assert read < 6 * MB < size  # HEAD_BYTES + TAIL_BYTES and a margin
    assert info.message_count is None
    assert (info.first_prompt, info.model, info.last_role) == ("question 0", "p:m", "assistant")
    monkeypatch.setattr(_catalog, "COUNT_LIMIT", 64 * MB)  # counted, in one streamed pass
    [counted] = list_sessions(tmp_path)
    assert counted.message_count == 9000 and counted.first_prompt == "question 0"


def session() -> AgentSession:
    faux = FauxProvider()
    return AgentSession(model=faux.model, stream_fn=faux.stream)


def test_resume_refuses_a_file_too_large_before_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    header = {"type": "session", "version": 3, "id": "h", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}
    with open(path, "wb") as file:
        file.write(json.dumps(header).encode() + b"\n")
        file.truncate(1 << 30)  # 1 GB (sparse)
    before = bytes_read()
    with pytest.raises(SessionFileError, match=r"huge\.jsonl is 1074 MB, larger than a session is continued from"):
        session().resume(path)
    assert bytes_read() - before < MB


def test_resume_refuses_a_file_that_is_no_session_before_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"level": "info", "text": "not a session"}\n' * 500_000)  # 22 MB of JSON lines
    before = bytes_read()
    with pytest.raises(SessionFileError, match="has no session header: not continued"):
        session().resume(path)
    assert bytes_read() - before < 2 * MB
