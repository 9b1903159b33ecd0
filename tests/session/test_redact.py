"""Unit tests of the session's tool-output redaction (``session/_redact.py``, ``_guard.guard_tool``); the real bash
tool through a session is in ``test_session_secrets.py``."""

from __future__ import annotations

from typing import Any

import pytest

from pi_notebook.agent import AgentTool, AgentToolResult
from pi_notebook.ai import AbortController, TextContent
from pi_notebook.session import Settings
from pi_notebook.session._guard import guard_tool
from pi_notebook.session._redact import redact_result, redact_text

KEY = "sk-redact-canary-3f9e0b1c"


def test_a_key_cut_at_either_edge_of_a_snapshot_is_redacted() -> None:
    assert redact_text(f"tail of output {KEY[:12]}", [KEY]) == "tail of output ***"
    assert redact_text(f"{KEY[-10:]} rest of the line", [KEY]) == "*** rest of the line"
    assert redact_text("ordinary text sk-r", [KEY]) == "ordinary text sk-r"  # under 6 characters: kept


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
