"""Damaged session files: torn or unterminated last lines, bad bytes, corrupt lines, lone surrogates, newer
versions, empty and garbage files. Nothing valid before the damage is lost; what was skipped is reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from session_helpers import make_session, reply

from pi_notebook.ai import AssistantMessage, TextContent, ToolCall, UserMessage
from pi_notebook.ai.messages import text_of
from pi_notebook.session import SessionStore, load_session


def write_session(path: Path, count: int) -> list[str]:
    """A linear file of ``count`` user messages ``m0``, ``m1``, ...; returns their texts."""
    texts = [f"m{i} é" for i in range(count)]
    with SessionStore(path) as store:
        for text in texts:
            store.append_message(UserMessage(content=text))
    return texts


def texts_of(path: Path) -> list[str]:
    return [text_of(message) for message in load_session(path).messages]  # type: ignore[arg-type]


def append_texts(path: Path, *texts: str) -> None:
    with SessionStore(path) as store:
        for text in texts:
            store.append_message(UserMessage(content=text))


# -- 1. torn or unterminated last line ---------------------------------------------------------------------


def test_continuing_a_file_with_a_torn_last_line_keeps_every_entry(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    texts = write_session(path, 8)
    with open(path, "ab") as file:
        file.write(b'{"type":"message","id":"torn","parentId":null,"message":{"role":"us')
    append_texts(path, "after 1", "after 2")
    loaded = load_session(path)
    assert [text_of(m) for m in loaded.messages] == [*texts, "after 1", "after 2"]  # type: ignore[arg-type]
    assert loaded.skipped_lines == 1
    assert [p.line for p in loaded.problems] == [10]
    assert "not valid JSON" in str(loaded.problems[0])


def test_continuing_a_file_without_a_final_newline_keeps_its_last_entry(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    texts = write_session(path, 3)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))  # as another tool may save it
    append_texts(path, "next")
    loaded = load_session(path)
    assert [text_of(m) for m in loaded.messages] == [*texts, "next"]  # type: ignore[arg-type]
    assert loaded.problems == []


def test_an_entry_glued_onto_a_torn_line_is_recovered(tmp_path: Path) -> None:
    """Files continued by older versions (or by Pi, which appends the same way) have the glued line already."""
    path = tmp_path / "s.jsonl"
    texts = write_session(path, 3)
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    glued = {**entries[-1], "id": "g1", "parentId": entries[-1]["id"]}
    glued["message"] = {**glued["message"], "content": "glued"}
    after = {**glued, "id": "g2", "parentId": "g1", "message": {**glued["message"], "content": "after"}}
    with open(path, "a") as file:
        file.write('{"type":"message","id":"torn","message":{"role":"user","content":"tor')
        file.write(json.dumps(glued, separators=(",", ":")) + "\n" + json.dumps(after, separators=(",", ":")) + "\n")
    loaded = load_session(path)
    assert [text_of(m) for m in loaded.messages] == [*texts, "glued", "after"]  # type: ignore[arg-type]
    assert loaded.skipped_lines == 1
    assert "torn" in str(loaded.problems[0])


# -- 2. invalid UTF-8 --------------------------------------------------------------------------------------


def test_invalid_utf8_neither_stops_loading_nor_opening(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    texts = write_session(path, 4)
    raw = path.read_bytes().split(b"\n")
    raw[2] = raw[2].replace("m1 é".encode(), b"m1 \xff")  # a bad byte inside a complete line
    torn = b'{"type":"message","id":"t","message":{"role":"user","content":"' + "é".encode()[:1]
    path.write_bytes(b"\n".join(raw) + torn)  # and a last line torn inside a two-byte character
    loaded = load_session(path)
    assert [text_of(m) for m in loaded.messages] == [texts[0], "m1 \ufffd", *texts[2:]]  # type: ignore[arg-type]
    assert loaded.skipped_lines == 1
    assert [(p.line, p.skipped) for p in loaded.problems] == [(3, False), (6, True)]
    assert "invalid UTF-8" in str(loaded.problems[0])
    append_texts(path, "next")
    assert texts_of(path)[-2:] == [texts[-1], "next"]


# -- 3. a corrupt line in the middle -----------------------------------------------------------------------


def test_a_corrupt_line_in_the_middle_loses_only_its_own_entry(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    texts = write_session(path, 6)
    raw = path.read_bytes().split(b"\n")
    raw[3] = b'{"type":"message","id":' + b"#" * 20  # the third message's line
    path.write_bytes(b"\n".join(raw))
    loaded = load_session(path)
    assert [text_of(m) for m in loaded.messages] == texts[:2] + texts[3:]  # type: ignore[arg-type]
    assert loaded.skipped_lines == 1
    assert [(p.line, p.skipped) for p in loaded.problems] == [(4, True), (5, False)]
    assert "parent" in str(loaded.problems[1])


# -- 5. lone surrogates ------------------------------------------------------------------------------------


def test_lone_surrogates_are_written_as_json_escapes_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    text, args = "half \ud83d of an emoji, é", {"command": "echo \udc80"}
    answer = AssistantMessage(content=[TextContent(text=text), ToolCall(id="c1", name="bash", arguments=args)])
    with SessionStore(path) as store:
        store.append_message(UserMessage(content="lone \ud800"))
        store.append_message(answer)
    data = path.read_bytes()
    data.decode("utf-8")  # the file is valid UTF-8
    assert b"\\ud800" in data and b"\\ud83d" in data and "é".encode() in data
    user, assistant = load_session(path).messages
    assert text_of(user) == "lone \ud800"  # type: ignore[arg-type]
    assert isinstance(assistant, AssistantMessage)
    assert assistant.content[0] == TextContent(text=text)
    assert assistant.content[1].arguments == args  # type: ignore[union-attr]


async def test_a_reply_with_a_lone_surrogate_reaches_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session, recorder, _ = make_session([reply("cut \ud83d emoji")], store=SessionStore(path))
    await session.prompt("go")
    session.dispose()
    assert "agent_settled:aborted=false" in recorder.labels
    assert texts_of(path) == ["go", "cut \ud83d emoji"]


# -- 6. a newer format version -----------------------------------------------------------------------------


def test_a_file_of_a_newer_format_version_is_read_but_never_appended_to(tmp_path: Path) -> None:
    from pi_notebook.session import SessionFileError

    path = tmp_path / "s.jsonl"
    texts = write_session(path, 2)
    path.write_text(path.read_text().replace('"version":3', '"version":4', 1))
    before = path.read_bytes()
    loaded = load_session(path)
    assert texts_of(path) == texts
    assert "newer" in str(loaded.problems[0]) and loaded.skipped_lines == 0
    with pytest.raises(SessionFileError, match=r"version 4.*newer.*\(3\)") as raised:
        SessionStore(path)
    assert "\n" not in str(raised.value)
    assert path.read_bytes() == before


# -- empty, header-only and garbage files ------------------------------------------------------------------


def test_an_empty_file_loads_as_an_empty_session_and_is_started(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    loaded = load_session(path)
    assert (loaded.header, loaded.messages, loaded.problems) == ({}, [], [])
    append_texts(path, "first")
    assert texts_of(path) == ["first"]


def test_a_header_only_file_loads_with_no_messages(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    SessionStore(path).close()
    loaded = load_session(path)
    assert loaded.header["type"] == "session"
    assert (loaded.messages, loaded.leaf_id, loaded.problems) == ([], None, [])


def test_a_garbage_file_is_a_one_line_error_and_is_left_alone(tmp_path: Path) -> None:
    from pi_notebook.session import SessionFileError

    path = tmp_path / "s.jsonl"
    garbage = bytes(range(256)) * 4
    path.write_bytes(garbage)
    with pytest.raises(SessionFileError, match="is not a session file") as raised:
        load_session(path)
    assert "\n" not in str(raised.value) and str(path) in str(raised.value)
    with pytest.raises(SessionFileError):
        SessionStore(path)
    assert path.read_bytes() == garbage


def test_entries_without_a_header_are_read_but_not_continued(tmp_path: Path) -> None:
    from pi_notebook.session import SessionFileError

    path = tmp_path / "s.jsonl"
    texts = write_session(path, 2)
    path.write_text("".join(path.read_text().splitlines(keepends=True)[1:]))
    loaded = load_session(path)
    assert texts_of(path) == texts
    assert "no session header" in str(loaded.problems[0])
    with pytest.raises(SessionFileError, match="no session header"):
        SessionStore(path)
