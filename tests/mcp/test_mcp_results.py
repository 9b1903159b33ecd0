"""Unit tests beside the real servers': each kind of MCP content block as the model gets it, a result that is only
``structuredContent``, and progress lines kept short and few."""

from __future__ import annotations

import base64
from typing import Any

import mcp_types as types

from pi_notebook.agent import AgentToolResult
from pi_notebook.ai import ImageContent, TextContent
from pi_notebook.mcp._mcp_results import agent_result
from pi_notebook.mcp._mcp_tool import PROGRESS_LINES, _Progress

PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def text_of(result: AgentToolResult) -> str:
    assert not isinstance(result.content, str)
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def test_every_kind_of_block_becomes_text_or_an_image() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(text="plain"),
            types.AudioContent(data=base64.b64encode(b"x" * 3000).decode(), mime_type="audio/wav"),
            types.ResourceLink(name="report", uri="file:///r.pdf", description="the report"),
            types.EmbeddedResource(resource=types.TextResourceContents(uri="file:///a.txt", text="inside")),
            types.EmbeddedResource(resource=types.BlobResourceContents(uri="file:///b.bin", blob="AAAA")),
            types.EmbeddedResource(resource=types.BlobResourceContents(uri="x:img", blob=PIXEL, mime_type="image/png")),
            types.ImageContent(data="not base64!", mime_type="image/png"),
        ]
    )
    mapped = agent_result(result)
    assert text_of(mapped).splitlines() == [
        "plain",
        "[Audio omitted (audio/wav, 2.9KB): the model takes text and images]",
        "[Resource report: file:///r.pdf: the report]",
        "[Resource file:///a.txt]",
        "inside",
        "[Resource file:///b.bin omitted (application/octet-stream, 3B)]",
        "[Image omitted: its data is not valid base64 (image/png)]",
    ]
    assert not isinstance(mapped.content, str)
    images = [block for block in mapped.content if isinstance(block, ImageContent)]
    assert [image.mime_type for image in images] == ["image/png"]


def test_a_result_with_only_structured_content_is_its_json() -> None:
    mapped = agent_result(types.CallToolResult(content=[], structured_content={"temperature": 21.5}))
    assert text_of(mapped) == '{\n "temperature": 21.5\n}'


async def test_progress_keeps_the_last_lines_and_cuts_long_messages() -> None:
    seen: list[Any] = []
    progress = _Progress(seen.append)
    for step in range(PROGRESS_LINES + 5):
        await progress(step, None, "x" * 10_000 if step == PROGRESS_LINES + 4 else None)
    lines = text_of(seen[-1]).splitlines()
    assert len(lines) == PROGRESS_LINES
    assert lines[0] == "[progress 5]"
    assert lines[-1] == f"[progress {PROGRESS_LINES + 4}] " + "x" * 500 + "…"
