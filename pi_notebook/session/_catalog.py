"""Where session files live and what a folder of them holds: :func:`session_folder`, :func:`list_sessions`.

Pi keeps one folder per working directory under ``~/.pi/agent/sessions``, named from the directory's absolute
path: the leading separator dropped, every ``/``, ``\\`` and ``:`` turned into ``-``, wrapped in ``--``
(``/home/me/proj`` -> ``--home-me-proj--``). :func:`session_folder` names ours the same way under any root, so
a folder can be handed to Pi (``pi --session-dir``) and back.

:func:`list_sessions` reads just enough of each ``*.jsonl`` file to describe it (:class:`SessionInfo`), never a
whole file: the header and the first user prompt from its first :data:`HEAD_BYTES`, the last entries (when it was
written, how it ended, the model of the last reply) from its last :data:`TAIL_BYTES`, and the message entries
counted in one streamed pass, for files up to :data:`COUNT_LIMIT` (a larger one's count is ``None``). A file that
is not a session file (no header line) is left out, as Pi leaves it out. So ``%pi sessions`` and the
``%load_ext`` greeting cost a few milliseconds per file, however large the files (``bench/bench_resume.py``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["SessionInfo", "list_sessions", "read_session_info", "session_folder"]

_MESSAGE = b'{"type":"message"'
_COMPACTION = b'{"type":"compaction"'
HEAD_BYTES = 1 << 20
"""What is read from a file's start: its header line and first prompt must lie within it."""
TAIL_BYTES = 4 << 20
"""What is read from a file's end for its last entries."""
COUNT_LIMIT = 64 << 20
"""Files up to this size have their message entries counted (one streamed pass); larger ones are not."""


def session_folder(root: str | Path, cwd: str | Path | None = None) -> Path:
    """The folder under ``root`` (``~`` and environment variables expanded: ``/data/pi/$JUPYTERHUB_USER`` gives
    each hub user their own) for the sessions of ``cwd`` (default: the current directory), named as Pi names its own
    (see the module docstring)."""
    resolved = str(Path(cwd if cwd is not None else os.getcwd()).resolve())
    safe = resolved.lstrip("/\\")
    for separator in "/\\:":
        safe = safe.replace(separator, "-")
    return Path(os.path.expandvars(os.fspath(root))).expanduser() / f"--{safe}--"


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One saved session, as :func:`list_sessions` describes it."""

    path: Path
    id: str
    cwd: str
    created: datetime
    modified: datetime
    """When the last entry was written (its timestamp; the file's mtime if it has none)."""
    message_count: int | None
    """Message entries in the file; ``None`` for a file over :data:`COUNT_LIMIT`, which is not counted."""
    first_prompt: str
    """The text of the first user message (``""`` before any)."""
    model: str
    """``provider:id`` of the last assistant reply (``""`` before any)."""
    notebook: str = ""
    """The notebook the session was written from, if the kernel knew it."""
    last_role: str = ""
    """Role of the last message (``user`` or ``toolResult`` means a reply was cut off before it ended)."""
    last_stop_reason: str = ""
    """``stopReason`` of the last message if it is an assistant reply (``toolUse``: its tool calls have no results,
    the kernel stopped while they ran)."""
    user: str = ""
    """The JupyterHub user whose kernel wrote it (the header's ``user``; ``""`` outside a hub)."""
    compacted: bool = False
    """The file holds a compaction: a resumed session gives the model a summary of the messages before it (``False``
    for a file over :data:`COUNT_LIMIT`, which is not read through)."""


def list_sessions(folder: str | Path) -> list[SessionInfo]:
    """The sessions saved in ``folder``, newest (last written) first. A missing folder has none; a file that
    cannot be read or is not a session file is left out."""
    folder = Path(folder).expanduser()
    try:
        paths = [path for path in folder.iterdir() if path.suffix == ".jsonl" and path.is_file()]
    except OSError:
        return []
    infos = [info for info in map(read_session_info, paths) if info is not None]
    return sorted(infos, key=lambda info: (info.modified, info.path.name), reverse=True)


def read_session_info(path: str | Path) -> SessionInfo | None:
    """Describe one session file (``None`` if it cannot be read or has no session header); see the module
    docstring for what is read."""
    path = Path(path)
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            mtime = datetime.fromtimestamp(os.fstat(file.fileno()).st_mtime, UTC)
            head = file.read(HEAD_BYTES)
            tail = _tail(file, size, len(head))
            count, compacted = _count_messages(file) if size <= COUNT_LIMIT else (None, False)
    except OSError:
        return None
    head_lines = _whole_lines(head, at_end=size <= len(head))
    header = _parse(head_lines[0]) if head_lines else None
    if header is None or header.get("type") != "session":
        return None
    first = next((m for m in map(_message, head_lines[1:]) if m.get("role") == "user"), None)
    lines = head_lines if size <= len(head) else _whole_lines(tail, at_start=False)
    messages = [line for line in lines if line.startswith(_MESSAGE)]
    last = _last(lines, lambda entry: "timestamp" in entry and entry.get("type") != "session")
    last_message = _last(messages, lambda entry: isinstance(entry.get("message"), dict))
    assistant = _last([line for line in messages if b'"role":"assistant"' in line], lambda entry: "message" in entry)
    reply = _message_of(assistant)
    created = _time(header.get("timestamp")) or mtime
    return SessionInfo(
        path=path,
        id=str(header.get("id", "")),
        cwd=str(header.get("cwd", "")),
        created=created,
        modified=_time(last.get("timestamp") if last else None) or created,
        message_count=count,
        first_prompt=_text(first) if first else "",
        model=f"{reply.get('provider', '')}:{reply.get('model', '')}" if reply else "",
        notebook=str(header.get("notebook", "") or ""),
        last_role=str(_message_of(last_message).get("role", "")) if last_message else "",
        last_stop_reason=str(_message_of(last_message).get("stopReason", "") or "") if last_message else "",
        user=str(header.get("user", "") or ""),
        compacted=compacted,
    )


def _tail(file: BinaryIO, size: int, read: int) -> bytes:
    """The file's last :data:`TAIL_BYTES` (what the head did not already hold)."""
    start = max(read, size - TAIL_BYTES)
    if start >= size:
        return b""
    file.seek(start)
    return file.read(size - start)


def _whole_lines(data: bytes, *, at_start: bool = True, at_end: bool = False) -> list[bytes]:
    """The complete, non-blank lines of a piece of a file: a first line cut by the piece's start
    (``at_start=False``) and a last line cut by its end (not ``at_end``) are left out."""
    lines = data.split(b"\n")
    if not at_start:
        lines = lines[1:]
    if not at_end and not data.endswith(b"\n"):
        lines = lines[:-1]
    return [line for line in lines if line.strip()]


def _count_messages(file: BinaryIO) -> tuple[int, bool]:
    """Lines that start a message entry, and whether a line starts a compaction, in one streamed pass (1 MB at a
    time)."""
    needle, compaction = b"\n" + _MESSAGE, b"\n" + _COMPACTION
    file.seek(0)
    count, compacted, carry = 0, False, b""
    while chunk := file.read(1 << 20):
        data = carry + chunk
        count += data.count(needle) - carry.count(needle)  # one wholly in the carry was counted with its chunk
        compacted = compacted or compaction in data
        carry = data[-(len(compaction) - 1) :]
    return count, compacted


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _last(lines: list[bytes], accept: Any) -> dict[str, Any] | None:
    for line in reversed(lines):
        entry = _parse(line)
        if entry is not None and accept(entry):
            return entry
    return None


def _message(line: bytes) -> dict[str, Any]:
    return _message_of(_parse(line))


def _message_of(entry: dict[str, Any] | None) -> dict[str, Any]:
    message = entry.get("message") if entry else None
    return message if isinstance(message, dict) else {}


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            block["text"] for block in content if isinstance(block, dict) and isinstance(block.get("text"), str)
        )
    return ""


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
