"""``%pi sessions``, ``%pi resume``, ``%pi new`` and ``%pi use``: the saved and named sessions of the kernel.

Each handler takes the registry and the parsed line, prints one-line messages and returns what the cell should
show (a :class:`~._saved.Replayed` view for ``resume``, which also puts the session's model back: ``_model_line``).
Errors are ``ValueError``/``RuntimeError`` with a one-line message, which the magic prints.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ..agent import AgentMessage
from ..session import CompactionSummaryMessage, SessionBusyError, SessionFileError, SessionInfo, read_session_info
from ._commands import PiCommand, UsageError
from ._model_line import restore_model
from ._registry import DEFAULT_NAME, SessionRegistry
from ._saved import (
    CUT_OFF_NOTE,
    Replayed,
    close_dangling_tool_calls,
    cut_off,
    describe_sessions,
    folder,
    pick_session,
    plural,
    saved_sessions,
    saving_problem,
)

__all__ = ["new_session", "resume_session", "show_sessions", "use_session"]


def _say(text: str) -> None:
    print(text)  # noqa: T201 - magics talk to the user through stdout


def _folder(registry: SessionRegistry) -> Path:
    settings = registry.get().session.settings
    where = folder(settings)
    if where is None:
        raise RuntimeError("saving is off (sessions.dir = none); %pi settings sessions.dir=PATH turns it on")
    problem = saving_problem(settings)
    if problem is not None:
        raise RuntimeError(problem.removeprefix("pi: "))
    return where


def show_sessions(registry: SessionRegistry, command: PiCommand) -> None:
    where = _folder(registry)
    _say(describe_sessions(saved_sessions(where), registry.live_files(), where))


def resume_session(registry: SessionRegistry, command: PiCommand) -> Replayed:
    entry = registry.get()
    if entry.busy:
        raise SessionBusyError("a run is active; wait for it (or %pi abort) before resuming another session")
    live = registry.live_files()
    where = folder(entry.session.settings)
    infos = saved_sessions(where) if where is not None else []
    path = pick_session(infos, command.text, live, entry.notebook)
    if path in live and live[path] != entry.name:
        raise RuntimeError(f"{path.name} is in use by session {live[path]!r} (%pi use {live[path]})")
    previous = entry.file
    try:
        loaded = entry.session.resume(path)
    except SessionFileError as exc:
        raise RuntimeError(str(exc)) from None
    except OSError as exc:
        raise RuntimeError(f"cannot open {path}: {exc.strerror or exc}") from None
    closed = close_dangling_tool_calls(entry.session)
    note = CUT_OFF_NOTE if cut_off(entry.session.messages) else None
    if closed:
        note = f"{closed} tool call(s) were interrupted by the kernel's stop (given error results); " + (
            "%pi continue goes on from there"
        )
    info = next((info for info in infos if info.path == path), None) or read_session_info(path)
    counted = _count(info, entry.session.messages)
    lines = [f"pi: resumed {path.name}: {counted}" + _name(entry.name, registry)]
    if info is not None and info.notebook and entry.notebook and info.notebook != entry.notebook:
        lines[0] += f" (a session of {info.notebook})"
    if loaded.problems:
        lines.append(f"pi: {len(loaded.problems)} line(s) could not be read as written: {loaded.problems[0]}")
    if note:
        lines.append(f"pi: {note}")
    if previous is not None and previous != path and previous.exists():
        lines.append(f"pi: the previous session stays in {previous.name}")
    lines.append(restore_model(entry, loaded.model))
    _say("\n".join(lines))
    return Replayed(entry.session, f"Resumed {path.name}", note=note, on_send=entry.send_from_view, counted=counted)


def new_session(registry: SessionRegistry, command: PiCommand) -> None:
    entry = registry.get()
    previous = entry.file
    file = entry.new_file()
    kept = f"; the previous one stays in {previous.name}" if previous is not None and previous.exists() else ""
    where = f" (saved to {file.name})" if file is not None else " (not saved: sessions.dir = none)"
    _say(f"pi: new session{_name(entry.name, registry)}{where}{kept}")


def use_session(registry: SessionRegistry, command: PiCommand) -> None:
    name = command.text.strip()
    if not name:
        names = [
            f"{'*' if entry.name == registry.current else ' '} {entry.name}: {entry.model_spec}, "
            f"{len(entry.session.messages)} messages{', running' if entry.busy else ''}"
            for entry in registry
        ]
        _say("pi: sessions in this kernel (* is the default of %pi):\n" + "\n".join(names or ["  (none yet)"]))
        return
    if command.session:
        raise UsageError("use takes a NAME, not -s")
    if not re.fullmatch(r"[\w.-]{1,64}", name):
        raise UsageError(f"use takes one session name (letters, digits, '_', '-', '.'), got {name!r}")
    created = registry.find(name) is None
    registry.current = name
    entry = registry.get(name)
    _say(f"pi: %pi now uses session {name!r}" + (f" (new, model {entry.model_spec})" if created else ""))


def _count(info: SessionInfo | None, messages: Sequence[AgentMessage]) -> str:
    """The file's messages, as ``%pi sessions`` counts them, and what the model is given of them after a
    compaction: ``12 messages (compacted: the model is given a summary of the earlier ones and the last 4)``."""
    counted = info.message_count if info is not None else None
    text = plural(counted if counted is not None else len(messages), "message")
    if messages and isinstance(messages[0], CompactionSummaryMessage):
        text += f" (compacted: the model is given a summary of the earlier ones and the last {len(messages) - 1})"
    return text


def _name(name: str, registry: SessionRegistry) -> str:
    return "" if name == DEFAULT_NAME else f" (session {name!r})"
