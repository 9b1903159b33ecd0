"""An MCP tool result as the model sees it: text and image blocks, truncated as Pi's tools truncate.

Each content block becomes text or an image: ``text`` as it is; ``image`` as an image, made to fit as Pi's ``read``
makes an image file fit (at most 2000×2000 pixels and 4.5 MB base64, ``tools._images``); ``audio`` and binary
resources as a line saying what was left out (the models take text and images); a resource link as its name, URI
and description; an embedded text resource as its URI and text. A result with no content but ``structuredContent``
gives that as JSON.

The text is truncated as Pi's ``read`` truncates a file: its first 2000 lines or 50 KB, whichever comes first, never
a partial line. A truncated result says so in its last line and names a temp file holding the whole text
(``<tempdir>/pi-mcp-<16 hex>.log``, readable by the user only, keys redacted, deleted when the kernel exits), which
the model can page through with ``read``.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import secrets
import tempfile
from collections.abc import Iterable
from typing import Any

import mcp_types as types

from ..agent import AgentToolResult
from ..ai import ImageContent, TextContent, scrub_secrets
from ..tools import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, delete_at_exit, format_size, process_image, truncate_head

__all__ = ["LOG_PREFIX", "agent_result"]

LOG_PREFIX = "pi-mcp"


def agent_result(result: types.CallToolResult, secrets_: Iterable[str] = ()) -> AgentToolResult:
    """``result`` as an :class:`AgentToolResult` (see the module docstring). ``secrets_`` are kept out of the full
    text's temp file."""
    texts: list[str] = []
    images: list[ImageContent] = []
    for block in result.content:
        _add(block, texts, images)
    if not result.content and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=1))
    text, details = _truncated("\n".join(texts), list(secrets_))
    content: list[TextContent | ImageContent] = [TextContent(text=text)] if text or not images else []
    return AgentToolResult(content=[*content, *images], details=details)


def _add(block: types.ContentBlock, texts: list[str], images: list[ImageContent]) -> None:
    match block:
        case types.TextContent():
            texts.append(block.text)
        case types.ImageContent():
            _image(block.data, block.mime_type, texts, images)
        case types.AudioContent():
            texts.append(
                f"[Audio omitted ({block.mime_type}, {_decoded_size(block.data)}): the model takes text and images]"
            )
        case types.ResourceLink():
            described = f": {block.description}" if block.description else ""
            texts.append(f"[Resource {block.name}: {block.uri}{described}]")
        case types.EmbeddedResource(resource=types.TextResourceContents() as resource):
            texts.append(f"[Resource {resource.uri}]\n{resource.text}")
        case types.EmbeddedResource(resource=types.BlobResourceContents() as resource):
            mime = resource.mime_type or "application/octet-stream"
            if mime.startswith("image/"):
                _image(resource.blob, mime, texts, images)
            else:
                texts.append(f"[Resource {resource.uri} omitted ({mime}, {_decoded_size(resource.blob)})]")


def _image(data: str, mime_type: str, texts: list[str], images: list[ImageContent]) -> None:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        texts.append(f"[Image omitted: its data is not valid base64 ({mime_type})]")
        return
    processed = process_image(raw, mime_type)
    texts.extend(processed.notes)
    if processed.data is not None:
        images.append(ImageContent(data=processed.data, mime_type=processed.mime_type))


def _decoded_size(data: str) -> str:
    return format_size(len(data) * 3 // 4)


def _truncated(text: str, keys: list[str]) -> tuple[str, dict[str, Any] | None]:
    truncation = truncate_head(text, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES)
    if not truncation.truncated:
        return text, None
    path, error = _save(text, keys)
    where = f"Full output: {path}" if path else f"Full output not saved: {error}"
    shown, total = truncation.output_lines, truncation.total_lines
    if truncation.first_line_exceeds_limit:
        first = format_size(len(text.split("\n", 1)[0].encode("utf-8", "surrogatepass")))
        footer = f"[Line 1 is {first}, over the {format_size(DEFAULT_MAX_BYTES)} limit. {where}]"
    elif truncation.truncated_by == "bytes":
        footer = f"[Showing lines 1-{shown} of {total} ({format_size(DEFAULT_MAX_BYTES)} limit). {where}]"
    else:
        footer = f"[Showing lines 1-{shown} of {total}. {where}]"
    details = {"truncation": truncation.details(), "full_output_path": path}
    body = truncation.content
    return f"{body}\n\n{footer}" if body else footer, details


def _save(text: str, keys: list[str]) -> tuple[str | None, str | None]:
    """Write the whole text (keys redacted) to a new private temp file; ``(path, None)`` or ``(None, why not)``."""
    path = os.path.join(tempfile.gettempdir(), f"{LOG_PREFIX}-{secrets.token_hex(8)}.log")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as file:
            file.write(scrub_secrets(text, keys))
    except OSError as exc:
        return None, exc.strerror or str(exc)
    delete_at_exit(path)
    return path, None
