"""Unit tests of the session's tool-output redaction (``session/_redact.py``, ``_guard.guard_tool``); the real bash
tool through a session is in ``test_session_secrets.py``."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest

from pi_notebook.agent import AgentTool, AgentToolResult
from pi_notebook.ai import AbortController, TextContent
from pi_notebook.session import Settings, StreamRedactor
from pi_notebook.session._guard import guard_tool
from pi_notebook.session._redact import redact_result, redact_text

KEY = "sk-redact-canary-3f9e0b1c"


def test_a_key_cut_at_either_edge_of_a_snapshot_is_redacted() -> None:
    assert redact_text(f"tail of output {KEY[:12]}", [KEY]) == "tail of output ***"
    assert redact_text(f"{KEY[-10:]} rest of the line", [KEY]) == "*** rest of the line"
    assert redact_text("ordinary text sk-r", [KEY]) == "ordinary text sk-r"  # under 6 characters: kept
    assert redact_text(KEY[:12], [KEY]) == "***"  # the whole text is a piece of the key (held back, then flushed)
    assert redact_text(KEY[-10:], [KEY]) == "***"


def test_text_content_and_strings_in_details_are_redacted() -> None:
    result = AgentToolResult(content=f"a {KEY} b", details={"log": [f"x{KEY}", 3], "n": None})
    redacted = redact_result(result, [KEY])
    assert redacted.content == [TextContent(text="a *** b")]
    assert redacted.details == {"log": ["x***", 3], "n": None}


def tool_returning(value: Any = None, error: Exception | None = None) -> AgentTool:
    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        on_update(AgentToolResult(content=f"partial {KEY}"))
        if error is not None:
            raise error
        return value

    return AgentTool(name="t", label="t", description="", parameters={"type": "object"}, execute=execute)


@pytest.mark.parametrize("value", [f"text {KEY}", AgentToolResult(content=f"text {KEY}")])
async def test_the_guard_redacts_results_updates_and_error_texts(value: Any) -> None:
    updates: list[AgentToolResult] = []
    guarded = guard_tool(tool_returning(value), Settings().timeouts, lambda: [KEY])
    result = await guarded.execute("c", {}, AbortController().signal, updates.append)
    assert result.content == [TextContent(text="text ***")]
    assert updates[0].content == [TextContent(text="partial ***")]
    failing = guard_tool(tool_returning(error=ValueError(f"bad {KEY!r}")), Settings().timeouts, lambda: [KEY])
    with pytest.raises(RuntimeError, match=r"^bad '\*\*\*'$"):
        await failing.execute("c", {}, AbortController().signal, updates.append)


STREAMED_KEY = 'sk-stream/0123+456789"abcdefghij'  # spelled differently in JSON and percent-encoding


@pytest.mark.parametrize("spelling", [STREAMED_KEY, json.dumps(STREAMED_KEY)[1:-1], quote(STREAMED_KEY, safe="")])
def test_a_key_cut_anywhere_between_two_pieces_of_streamed_text_never_shows(spelling: str) -> None:
    """Live output arrives in pieces: whatever character the cut falls on, neither piece shows any of the key."""
    text = f"before {spelling} after"
    start = text.index(spelling)
    for cut in range(start, start + len(spelling) + 1):
        redactor = StreamRedactor(lambda: [STREAMED_KEY])
        shown = [redactor.feed(text[:cut]), redactor.feed(text[cut:]), redactor.flush()]
        assert "".join(shown) == "before *** after", (cut, shown)
        assert not any(STREAMED_KEY[:3] in piece or STREAMED_KEY[-3:] in piece for piece in shown), (cut, shown)


def test_streamed_text_holds_back_only_what_could_begin_a_key() -> None:
    redactor = StreamRedactor(lambda: [STREAMED_KEY])
    assert redactor.feed("progress 1/3\n") == "progress 1/3\n"  # nothing like a key: shown at once
    assert redactor.feed("token sk-str") == "token "  # could be a key: held
    assert redactor.feed("ange fruit\n") == "sk-strange fruit\n"  # was not: shown with what came next
    assert redactor.feed("sk-") == ""
    assert redactor.flush() == "sk-"  # the code ended: what was held goes
    assert redactor.feed("the code ends with sk-stream/01") == "the code ends with "
    assert redactor.flush() == "***"  # a piece of the key that long is not shown
    assert StreamRedactor(list).feed("no keys sk-") == "no keys sk-"
