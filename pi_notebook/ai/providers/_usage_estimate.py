"""The token estimate, ceil(characters / 4) of Pi's serialisation of the request: the faux provider's usage, and
the HTTP providers' usage when a server streams none (llama-cpp-python) or a reply ends before its usage came.

What a server does not report is estimated from what its model was given (:func:`estimated_usage`): the system
prompt and the messages, and the tool definitions only once the transcript shows the model sees them (a tool call
of this model in it, or in the reply). A chat template decides whether tools reach the model, and many do not:
llama-cpp-python's default (the GGUF's own template) drops them from SmolLM2's prompt, where counting them made
1,934 tokens of about 530, and compaction began after the first long reply on a 2,048-token window. A server that
does pass them is under-counted by their size until its model first calls a tool; whether a prompt overflows is
still judged with them (``_sse_api``).

Pi serialises the whole context on every request, so a turn costs O(transcript). :class:`PromptMeter` keeps
the size of each message's part and only measures messages added since the previous request: the agent
loop's transcript only grows during a run. It starts over whenever the new request does not begin with the
messages it saw (first and last seen objects compared), which covers retries (the last message replaced),
compaction and context transforms. A message replaced in the middle of an otherwise identical transcript is
not noticed; that never happens inside the agent loop. Prompt-cache simulation (with a ``session_id``, which an
:class:`~pi_notebook.session.AgentSession` always sends) is incremental the same way: :class:`PromptCache` keeps
where the last request's messages ended and compares only the parts after them; a request that does not continue
the previous one is compared whole.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._request import Context, Model
from .._trusted import trusted_usage
from ..messages import AssistantMessage, ImageContent, TextContent, ThinkingContent, ToolCall, ToolResultMessage, Usage

__all__ = [
    "PromptCache",
    "PromptMeter",
    "block_body",
    "estimate_tokens",
    "estimated_usage",
    "output_chars",
    "output_text",
    "serialize_context",
]

_SEPARATOR = "\n\n"


def estimate_tokens(chars: int) -> int:
    return math.ceil(chars / 4)


def compact_json(value: Any) -> str:
    """``JSON.stringify``'s spelling: no spaces, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _content_text(content: str | Sequence[Any]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        block.text if isinstance(block, TextContent) else f"[image:{block.mime_type}:{len(block.data)}]"
        for block in content
        if isinstance(block, TextContent | ImageContent)
    )


def block_body(block: Any) -> str:
    """What a block of a reply streams: a text or thinking block's text, a tool call's arguments as JSON."""
    if isinstance(block, ToolCall):
        return compact_json(block.arguments)
    if isinstance(block, ThinkingContent):
        return block.thinking
    return block.text if isinstance(block, TextContent) else ""


def _output_text(content: Sequence[Any], bodies: Sequence[str]) -> str:
    parts = []
    for block, body in zip(content, bodies, strict=True):
        if isinstance(block, ToolCall):
            parts.append(f"{block.name}:{body}")
        elif isinstance(block, TextContent | ThinkingContent):
            parts.append(body)
    return "\n".join(parts)


def output_text(content: Sequence[Any]) -> str:
    """An assistant message's content as Pi's faux provider counts it."""
    return _output_text(content, [block_body(block) for block in content])


def output_chars(content: Sequence[Any], bodies: Sequence[str]) -> int:
    """``len(output_text(content))`` from each block's :func:`block_body` already at hand (a tool call's
    arguments are not serialised a second time)."""
    return len(_output_text(content, bodies))


def _message_part(message: Any) -> str:
    if isinstance(message, AssistantMessage):
        text = output_text(message.content)
    elif isinstance(message, ToolResultMessage):
        text = "\n".join([message.tool_name, *(_content_text([block]) for block in message.content)])
    else:
        text = _content_text(getattr(message, "content", ""))
    return f"{message.role}:{text}"


def _tools_part(context: Context) -> str | None:
    if not context.tools:
        return None
    tools = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in context.tools]
    return f"tools:{compact_json(tools)}"


def serialize_context(context: Context) -> str:
    """Pi's ``serializeContext``: system prompt, each message and the tools, joined by blank lines."""
    return _join(context.system_prompt, context.messages, _tools_part(context))


def _join(system: str, messages: Sequence[Any], tools: str | None) -> str:
    parts = [f"system:{system}"] if system else []
    parts.extend(_message_part(m) for m in messages)
    if tools is not None:
        parts.append(tools)
    return _SEPARATOR.join(parts)


def estimated_usage(model: Model, context: Context, content: Sequence[Any], reported: Usage | None = None) -> Usage:
    """Usage for what a server did not report, marked ``estimated``: characters / 4 of the prompt its model was given
    (see the module docstring) and of the reply ``content`` so far. What the server did report (``reported``: a
    reply cut off after Anthropic's ``message_start``, say) is kept: its prompt counts, and its output count when
    the text written so far is not longer. Not priced."""
    usage = reported.model_copy() if reported is not None else Usage()
    if not (usage.input or usage.cache_read or usage.cache_write):
        tools = _tools_part(context) if _sees_tools(model, context, content) else None
        usage.input = estimate_tokens(len(_join(context.system_prompt, context.messages, tools)))
        usage.estimated = True
    written = estimate_tokens(len(output_text(content)))
    if written > usage.output:  # the count so far lags what was written (or was never sent)
        usage.output = written
        usage.estimated = True
    return usage


def _sees_tools(model: Model, context: Context, content: Sequence[Any]) -> bool:
    """The model was given the tool definitions, as far as the transcript shows: it called a tool (in this reply, or
    in an earlier one of the same model)."""
    if not context.tools:
        return False
    if any(isinstance(block, ToolCall) for block in content):
        return True
    return any(
        isinstance(message, AssistantMessage)
        and message.model == model.id
        and message.provider == model.provider
        and any(isinstance(block, ToolCall) for block in message.content)
        for message in context.messages
    )


class PromptMeter:
    """``len(serialize_context(context))``, measured incrementally (see the module docstring)."""

    def __init__(self) -> None:
        self._sizes: list[int] = []
        self._first: Any = None
        self._last: Any = None
        self._total = 0
        self._tools: tuple[object, int, str] | None = None
        self._known: tuple[Any, int] | None = None

    def remember(self, message: AssistantMessage, output: int) -> None:
        """Note the reply just produced and the size of its output text, so that measuring it in the next
        request does not serialise it again (one reply: the agent loop sends it back next)."""
        self._known = (message, len(message.role) + 1 + output)

    def chars(self, context: Context) -> int:
        messages = context.messages
        count = len(self._sizes)
        if not (
            len(messages) >= count
            and (count == 0 or (messages[0] is self._first and messages[count - 1] is self._last))
        ):
            self._sizes, self._total, count = [], 0, 0
        known = self._known
        for index in range(count, len(messages)):  # not islice: it would step over the first ``count`` items
            message = messages[index]
            size = known[1] if known is not None and message is known[0] else len(_message_part(message))
            self._sizes.append(size)
            self._total += size
        self._first = messages[0] if messages else None
        self._last = messages[-1] if messages else None
        system = len("system:") + len(context.system_prompt) if context.system_prompt else 0
        tools = self._tool_chars(context)
        parts = len(messages) + (1 if system else 0) + (1 if tools else 0)
        return self._total + system + tools + len(_SEPARATOR) * max(0, parts - 1)

    def _tool_chars(self, context: Context) -> int:
        part = self.tools_part(context)
        return len(part) if part is not None else 0

    def tools_part(self, context: Context) -> str | None:
        """The tools' part of the serialisation (``None``: no tools), serialised once per tool list."""
        tools = context.tools
        if not tools:
            return None
        cached = self._tools
        if cached is None or cached[0] is not tools or cached[1] != len(tools):
            cached = self._tools = (tools, len(tools), _tools_part(context) or "")
        return cached[2]


@dataclass(slots=True)
class _Seen:
    """What a session's previous request was: enough to find the common prefix with the next one."""

    system: str
    messages: Sequence[Any]
    """The request's message list (its first ``count`` are the request's: a caller may append to it later)."""
    count: int
    first: Any
    last: Any
    before_tools: int
    """Characters of the serialisation before the tools part (system prompt and messages)."""
    tools: str | None
    length: int


class PromptCache:
    """Pi's faux prompt cache: per session id, the previous request's prompt, compared with the next one."""

    def __init__(self) -> None:
        self._seen: dict[str, _Seen] = {}

    def common_prefix(self, session_id: str, context: Context, meter: PromptMeter, length: int) -> int | None:
        """Characters the serialised ``context`` (``length`` long, just measured by ``meter``) shares from the
        start with the session's previous request; ``None`` for the session's first. Remembers ``context``."""
        previous = self._seen.get(session_id)
        messages = context.messages
        tools = meter.tools_part(context)
        before = length  # characters before the tools part, which comes last (after a separator, unless alone)
        if tools is not None:
            before = 0 if length == len(tools) else length - len(_SEPARATOR) - len(tools)
        first, last = (messages[0], messages[-1]) if messages else (None, None)
        seen = _Seen(context.system_prompt, messages, len(messages), first, last, before, tools, length)
        self._seen[session_id] = seen
        if previous is None:
            return None
        common = _continued(previous, context, tools)
        if common is not None:
            return common
        old = _join(previous.system, previous.messages[: previous.count], previous.tools)
        return _common_prefix(old, _join(context.system_prompt, messages, tools))


def _continued(previous: _Seen, context: Context, tools: str | None) -> int | None:
    """The common prefix when ``context`` repeats the previous request's system prompt and messages and adds
    messages or changes tools after them (what the agent loop sends); ``None`` when it does not, or when telling
    would need the whole text."""
    messages, count = context.messages, previous.count
    if context.system_prompt != previous.system or len(messages) < count:
        return None
    if count and not (messages[0] is previous.first and messages[count - 1] is previous.last):
        return None
    if previous.tools is None:
        return previous.length  # the previous text ended with its last message: all of it is shared
    if len(messages) > count:
        following = f"{messages[count].role}:"  # differs from "tools:" within its first characters
    elif tools is None:
        return previous.before_tools
    else:
        following = tools
    same = _common_prefix(previous.tools, following)
    if same >= min(len(previous.tools), len(following)):
        return None if following != previous.tools else previous.length
    joint = len(_SEPARATOR) if previous.before_tools else 0
    return previous.before_tools + joint + same


def usage_estimate(
    meter: PromptMeter,
    cache: PromptCache,
    context: Context,
    output: int,
    session_id: str | None,
    cache_retention: str | None,
) -> Usage:
    """Pi's faux usage: prompt and output estimates (``output``: the reply's characters as :func:`output_text`
    counts them), with prompt caching simulated per ``session_id``."""
    length = meter.chars(context)
    prompt = estimate_tokens(length)
    out = estimate_tokens(output)
    cache_read = cache_write = 0
    if session_id and cache_retention != "none":
        same = cache.common_prefix(session_id, context, meter, length)
        if same is None:
            cache_write = prompt
        else:
            cache_read = estimate_tokens(same)
            cache_write = estimate_tokens(length - same)
            prompt = max(0, prompt - cache_read)
    return trusted_usage(
        input=prompt,
        output=out,
        cache_read=cache_read,
        cache_write=cache_write,
        total_tokens=prompt + out + cache_read + cache_write,
    )


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix, comparing 4 KiB slices at C speed before going character by character."""
    limit = min(len(a), len(b))
    step = 4096
    index = 0
    while index + step <= limit and a[index : index + step] == b[index : index + step]:
        index += step
    while index < limit and a[index] == b[index]:
        index += 1
    return index
