"""Saved sessions in the notebook: each session's default file, ``%pi sessions``, ``%pi resume``, replay.

Every session the registry creates records to a new file in ``session_folder(settings.sessions.dir)`` (Pi's
file naming, created with the first message, so a session that never runs leaves nothing behind); its header
records the notebook's path when the kernel knows it (``__vsc_ipynb_file__``, or ``__session__`` /
``JPY_SESSION_NAME`` that Jupyter Server sets) and the session's name if it is not the default.

A resumed session is shown by a :class:`Replayed` view: the run widget (``RunPresenter``/``RunView``) fed
with the transcript rebuilt from the file's entries — messages, tool panels, and an event-log line per entry
marked ``replayed`` — plus a markdown rendering for frontends without widgets. A reply the kernel was
streaming when it died never reached the file (only ``message_end`` is written): when the transcript ends
with a user message or tool results, the view and the printed line say the last reply was cut off, and
``%pi continue`` asks for it again. Tool calls left without results (the kernel died while tools ran) are
given error results saying so, recorded in the file, so the transcript can continue.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..agent import AgentMessage, AgentTool
from ..ai import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage
from ..ai.messages import message_key, text_of
from ..session import (
    AgentSession,
    CompactionSummaryMessage,
    MessageEndEvent,
    SessionInfo,
    SessionStore,
    Settings,
    list_sessions,
    session_folder,
)
from ._describe import describe_event, render_html, render_markdown, result_text
from ._retried import without_retried
from ._session_home import hub_user, mine, why_unwritable
from ._visible import shown_json
from .widget._presenter import RunPresenter, drawn_as_message, tool_preview
from .widget._protocol import MessageOp, Op, StatusOp, TextOp, ToolEndOp, ToolOp
from .widget._view import RunView

__all__ = [
    "CUT_OFF_NOTE",
    "Replayed",
    "close_dangling_tool_calls",
    "cut_off",
    "default_store",
    "describe_sessions",
    "last_session_line",
    "notebook_path",
    "offered",
    "pick_session",
    "plural",
    "saved_sessions",
    "saving_problem",
]

CUT_OFF_NOTE = "the last reply was cut off (the kernel stopped before it ended); %pi continue asks for it again"
INTERRUPTED_TOOL = "Tool call interrupted: the kernel stopped before it finished."


def notebook_path(user_ns: Mapping[str, Any] | None = None) -> str | None:
    """The notebook's path, when the kernel knows it (VS Code's ``__vsc_ipynb_file__``, Jupyter Server's
    ``__session__`` / ``JPY_SESSION_NAME``)."""
    ns = user_ns or {}
    for value in (ns.get("__vsc_ipynb_file__"), ns.get("__session__"), os.environ.get("JPY_SESSION_NAME")):
        if isinstance(value, str) and value:
            return value
    return None


def folder(settings: Settings) -> Path | None:
    """This working directory's session folder (``None``: saving is off)."""
    root = settings.sessions.dir
    return session_folder(root) if root is not None else None


def default_store(settings: Settings, *, name: str, notebook: str | None, default: bool) -> SessionStore | None:
    """A new (lazily created) file for a notebook session, or ``None`` when ``sessions.dir`` is ``none`` or its
    folder cannot be written (see :func:`saving_problem`: the session is kept in memory)."""
    where = folder(settings)
    if where is None or why_unwritable(where) is not None:
        return None
    header: dict[str, Any] = {}
    if notebook:
        header["notebook"] = notebook
    if not default:
        header["name"] = name
    if hub_user():
        header["user"] = hub_user()
    return SessionStore.new(where, lazy=True, header=header)


def saving_problem(settings: Settings) -> str | None:
    """``pi: sessions are not saved: ... (read-only file system); runs are kept in memory ...`` when
    ``sessions.dir`` is set but its folder cannot be written; ``None`` otherwise."""
    where = folder(settings)
    why = why_unwritable(where) if where is not None else None
    if where is None or why is None:
        return None
    return (
        f"pi: sessions are not saved: {where.parent} is not writable ({why}); runs are kept in memory only"
        " (set PI_NOTEBOOK_SESSIONS__DIR to a writable, persistent folder)"
    )


def saved_sessions(where: Path) -> list[SessionInfo]:
    """The sessions in ``where`` this user may see (see ``_session_home.mine``), newest first."""
    return mine(list_sessions(where))


def ago(moment: datetime, now: datetime | None = None) -> str:
    """``just now``, ``5 min ago``, ``2 h ago``, ``3 days ago``."""
    seconds = ((now or datetime.now(UTC)) - moment).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400 * 2:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} days ago"


def _short(text: str, limit: int = 50) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_sessions(infos: Sequence[SessionInfo], live: Mapping[Path, str], where: Path) -> str:
    """The ``%pi sessions`` table: number, when, messages, model, first prompt; live ones marked."""
    if not infos:
        return f"pi: no saved sessions in {where}"
    lines = [f"pi: {len(infos)} saved session(s) in {where} (newest first):"]
    for number, info in enumerate(infos, 1):
        mark = "  [compacted]" if info.compacted else ""
        mark += f"  [live: {live[info.path]}]" if info.path in live else ""
        model = info.model or "-"
        prompt = repr(_short(info.first_prompt)) if info.first_prompt else "(no prompt)"
        lines.append(
            f"{number:>3}  {ago(info.modified):<12} {_count(info):>5} msgs  {model:<28} {prompt}  "
            f"id {info.id[:8]}{mark}"
        )
    lines.append("%pi resume N (or ID, or a path) loads one; %pi resume loads the newest that is not live")
    if any(info.compacted for info in infos):
        lines.append("[compacted]: resumed, the model is given a summary of the earlier messages and the recent ones")
    return "\n".join(lines)


def offered(infos: Sequence[SessionInfo], notebook: str | None) -> list[SessionInfo]:
    """The sessions a kernel of ``notebook`` is offered: that notebook's; without any, those that name no notebook
    (written where the kernel did not know it); never one another notebook wrote. All of them when ``notebook`` is
    not known."""
    if not notebook:
        return list(infos)
    own = [info for info in infos if info.notebook == notebook]
    return own or [info for info in infos if not info.notebook]


def pick_session(
    infos: Sequence[SessionInfo], selector: str, live: Mapping[Path, str], notebook: str | None = None
) -> Path:
    """The file ``%pi resume SELECTOR`` means: ``latest``/empty (the newest not live in this kernel: of
    ``notebook`` when it has one, as the greeting offers, else of any notebook), a number from ``%pi sessions``, a
    session id (or a unique prefix of one), or a path. Raises ``ValueError``."""
    selector = selector.strip()
    if selector in ("", "latest"):
        free = [info for info in infos if info.path not in live]
        for info in offered(free, notebook) + free:
            return info.path
        raise ValueError("no saved session to resume here (%pi sessions lists them)")
    if selector.isdigit() and 1 <= int(selector) <= len(infos):  # a number from the list wins over an id prefix
        return infos[int(selector) - 1].path
    matches = [info.path for info in infos if info.id.startswith(selector)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise ValueError(f"{selector!r} matches {len(matches)} sessions; give more of the id")
    if selector.isdigit():
        raise ValueError(f"no session {int(selector)} (%pi sessions lists {len(infos)})")
    path = Path(selector).expanduser()
    if path.is_file():
        return path
    raise ValueError(f"no session {selector!r}: not a number, an id or a file (%pi sessions lists them)")


def cut_off(messages: Sequence[AgentMessage]) -> bool:
    """The transcript ends where a reply should follow (a user message or tool results)."""
    kinds = UserMessage | AssistantMessage | ToolResultMessage
    last = next((m for m in reversed(messages) if isinstance(m, kinds)), None)
    return isinstance(last, UserMessage | ToolResultMessage)


def close_dangling_tool_calls(session: AgentSession) -> int:
    """Give every tool call of the last assistant reply that has no result an error result (recorded in the
    session's file), so the transcript can continue. Returns how many were added."""
    messages = session.messages
    index = next((i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AssistantMessage)), None)
    if index is None:
        return 0
    reply = messages[index]
    assert isinstance(reply, AssistantMessage)
    answered = {m.tool_call_id for m in messages[index + 1 :] if isinstance(m, ToolResultMessage)}
    missing = [block for block in reply.content if isinstance(block, ToolCall) and block.id not in answered]
    for call in missing:
        result = ToolResultMessage(
            tool_call_id=call.id, tool_name=call.name, content=[TextContent(text=INTERRUPTED_TOOL)], is_error=True
        )
        messages.append(result)
        if session.store is not None:
            session.store.append_message(result)
    return len(missing)


class Replayed:
    """A resumed transcript shown as a run widget (marked replayed), with a markdown fallback."""

    def __init__(
        self,
        session: AgentSession,
        title: str,
        *,
        note: str | None = None,
        on_send: Callable[[str, RunView], None] | None = None,
        counted: str | None = None,
    ) -> None:
        """``on_send``: what the view's box does with a text (a new run, see :class:`RunView`); ``counted``: the
        messages as the resume line counts them (``12 messages``; default: the transcript's)."""
        self.counted = counted or plural(len(session.messages), "message")
        self.messages = without_retried(list(session.messages))  # as the run showed it (``_retried``)
        self.log: list[tuple[float, str, str]] = []
        self.title = title
        self.note = note
        self.presenter: RunPresenter | None = None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            self.presenter = RunPresenter(
                title=title, session=session, on_stop=lambda: None, loop=loop, on_send=on_send
            )
        self._tools = {tool.name: tool for tool in session.tools}
        self._replay(self._tools)

    def _call_text(self, name: str, args: Mapping[str, Any]) -> tuple[str, str]:
        return tool_preview(self._tools.get(name), args)

    def _replay(self, tools: Mapping[str, AgentTool]) -> None:
        start = next((m.timestamp for m in self.messages if _stamp(m)), 0)
        for message in self.messages:
            line = describe_event(MessageEndEvent(message=message))
            label, detail = line if line is not None else ("message_end", message.role)
            seconds = max(0.0, (_stamp(message) - start) / 1000) if start and _stamp(message) else 0.0
            self.log.append((seconds, label, f"{detail} (replayed)"))
            if self.presenter is not None:
                for op in _ops(message, tools):
                    self.presenter.view.transcript.add(op)
                self.presenter.log(seconds, label, f"{detail} (replayed)")
        if self.note:
            self.log.append((self.log[-1][0] if self.log else 0.0, "cut_off", self.note))
            if self.presenter is not None:
                self.presenter.log(self.log[-1][0], "cut_off", self.note)
        if self.presenter is not None:
            self.presenter.state("settled", 0.0)
            self.presenter.settle(False)

    @property
    def view(self) -> Any:
        return self.presenter.view if self.presenter is not None else None

    def _status(self) -> str:
        return f"replayed, {self.counted}" + (f" — {self.note}" if self.note else "")

    def markdown(self) -> str:
        return render_markdown(
            self.messages, self.log, title=self.title, status=self._status(), call_text=self._call_text
        )

    def html(self) -> str:
        return render_html(self.messages, self.log, title=self.title, status=self._status(), call_text=self._call_text)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle: dict[str, Any] = {"text/html": self.html(), "text/markdown": self.markdown()}
        if self.presenter is not None:
            widget_bundle = self.presenter.view._repr_mimebundle_()
            if widget_bundle:
                bundle.update(widget_bundle if isinstance(widget_bundle, dict) else widget_bundle[0])
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        return f"<{self.title}: {len(self.messages)} messages replayed>"


def _stamp(message: AgentMessage) -> int:
    value = getattr(message, "timestamp", 0)
    return value if isinstance(value, int) else 0


def _ops(message: AgentMessage, tools: Mapping[str, AgentTool]) -> list[Op]:
    """The widget operations that draw one recorded message (as the presenter draws a live one; ``tools``, by name,
    preview their calls)."""
    key = message_key(message)
    match message:
        case UserMessage():
            return [MessageOp(op="message", id=key, role="user", text=text_of(message))]
        case AssistantMessage():
            ops: list[Op] = []
            drawn = drawn_as_message(message)  # as the presenter draws a live one
            if drawn:
                text = "".join(block.text for block in message.content if isinstance(block, TextContent))
                ops.append(MessageOp(op="message", id=key, role="assistant", text=text))
                thinking = "".join(block.thinking for block in message.content if isinstance(block, ThinkingContent))
                if thinking:
                    ops.append(TextOp(op="thinking", id=key, text=thinking))
            for block in message.content:
                if isinstance(block, ToolCall):
                    args = shown_json(block.arguments)
                    preview, syntax = tool_preview(tools.get(block.name), block.arguments)
                    call = ToolOp(op="tool", call=block.id, name=block.name, args=args, preview=preview, syntax=syntax)
                    ops.append(call)
            if drawn:
                ops.append(StatusOp(op="status", id=key, stop_reason=message.stop_reason, error=message.error_message))
            return ops
        case ToolResultMessage():
            text = result_text(message)
            return [ToolEndOp(op="tool_end", call=message.tool_call_id, text=text, is_error=message.is_error)]
        case CompactionSummaryMessage():
            return [MessageOp(op="message", id=key, role="summary", text=message.summary)]
        case _:
            return []


def last_session_line(settings: Settings, notebook: str | None = None) -> str | None:
    """``pi: last session 2 h ago, 12 messages — %pi resume to continue`` when this directory has one (printed
    text: no markdown). A kernel that knows its ``notebook`` is offered the sessions :func:`offered` says (``%pi
    resume`` picks the same one); another notebook's are only counted."""
    where = folder(settings)
    if where is None:
        return None
    infos = saved_sessions(where)
    if not infos:
        return None
    mine = offered(infos, notebook)
    if not mine:
        return f"pi: no saved session of this notebook; %pi sessions lists {plural(len(infos), 'other')} here"
    info = mine[0]
    more = f" ({len(infos)} saved here, %pi sessions lists them)" if len(infos) > 1 else ""
    cut = ""
    if info.last_role in ("user", "toolResult"):
        cut = "; its last reply was cut off"
    elif info.last_role == "assistant" and info.last_stop_reason == "toolUse":
        cut = "; its last tool call was cut off"
    count = plural(info.message_count, "message") if info.message_count is not None else "a file too large to count"
    whose = " of this notebook" if notebook and info.notebook == notebook else ""
    return f"pi: last session{whose} {ago(info.modified)}, {count}{cut} — %pi resume to continue{more}"


def plural(count: int, noun: str) -> str:
    """``1 message``, ``2 messages``."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _count(info: SessionInfo) -> str:
    """The message count, ``?`` for a file too large to count (``list_sessions``)."""
    return str(info.message_count) if info.message_count is not None else "?"
