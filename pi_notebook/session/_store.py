"""Session files: JSONL in Pi's format, one line per entry, written and flushed as it happens.

Line 1 is the header ``{"type": "session", "version": 3, "id", "timestamp", "cwd"}`` (Pi's format version 3,
so Pi can open our files). Then one entry per line, each with ``id``, ``parentId`` (the previous entry: a
linear chain) and an ISO ``timestamp``:

* ``{"type": "message", "message": {...}}`` for every user, assistant and tool-result message that reached
  ``message_end``, whatever its stop reason (aborted and error replies included);
* ``{"type": "compaction", "summary", "firstKeptEntryId", "tokensBefore", "details": {"readFiles",
  "modifiedFiles"}}`` after a compaction;
* ``{"type": "notebook_message", "message": {...}}`` for app-defined transcript entries (Pi skips them).

Each entry is one ``write`` of a whole line followed by a flush, so a process killed with SIGKILL leaves
every entry written before it; a torn last line (a kill in the middle of a write) is skipped on load.

Reading Pi's files: :func:`load_session` follows the ``parentId`` chain from the last entry (Pi files can
branch; the last entry is the current leaf), keeps ``message`` entries (Pi's ``custom`` message role is
and Pi's ``custom_message`` entries are read as :class:`~pi_notebook.agent.CustomMessage` with role
``custom``), applies the latest ``compaction`` entry (its summary
becomes a :class:`CompactionSummaryMessage`, followed by the messages from ``firstKeptEntryId`` on), and
ignores the other entry kinds (model and thinking-level changes, labels, branch summaries, custom data).
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..agent import AgentMessage, CustomMessage
from ..ai.messages import message_from_dict, message_key
from ._summary import CompactionSummaryMessage

__all__ = ["LoadedSession", "SessionStore", "load_session"]

FORMAT_VERSION = 3


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class SessionStore:
    """Appends session entries to a JSONL file. Open with ``SessionStore(path)`` (created if missing;
    an existing file is continued) or ``SessionStore.new(directory)`` for a fresh Pi-style file name."""

    def __init__(self, path: str | Path, *, fsync: bool = False) -> None:
        self.path = Path(path)
        self._fsync = fsync
        self._ids: dict[int, str] = {}  # message_key -> entry id
        self._used: set[str] = set()
        existing = self.path.exists() and self.path.stat().st_size > 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        if existing:
            loaded = load_session(self.path)
            self.session_id = loaded.header.get("id", "")
            self._leaf = loaded.leaf_id
            for message, entry_id in zip(loaded.messages, loaded.entry_ids, strict=True):
                if entry_id:
                    self._ids[message_key(message)] = entry_id
            self._used.update(loaded.all_ids)
            self.loaded: LoadedSession | None = loaded
        else:
            self.session_id = secrets.token_hex(8)
            self._leaf = None
            self.loaded = None
            header = {"type": "session", "version": FORMAT_VERSION, "id": self.session_id, "timestamp": _now_iso()}
            header["cwd"] = os.getcwd()
            self._write(header)

    @classmethod
    def new(cls, directory: str | Path, **options: Any) -> SessionStore:
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M-%S-%fZ")
        return cls(Path(directory) / f"{stamp}_{secrets.token_hex(8)}.jsonl", **options)

    def append_message(self, message: AgentMessage) -> str:
        """Record a message; returns its entry id."""
        if isinstance(message, CompactionSummaryMessage):
            raise ValueError("compaction summaries are recorded with append_compaction()")
        kind = "notebook_message" if isinstance(message, CustomMessage) else "message"
        data = message.model_dump(mode="json", by_alias=True, exclude_none=True)
        entry_id = self._append({"type": kind, "message": data})
        self._ids[message_key(message)] = entry_id
        return entry_id

    def append_compaction(self, summary: CompactionSummaryMessage, first_kept: AgentMessage | None) -> str:
        """Record a compaction: ``summary`` replaces everything before ``first_kept`` (a recorded message)."""
        first_kept_id = self.entry_id(first_kept) if first_kept is not None else None
        details = {"readFiles": summary.read_files, "modifiedFiles": summary.modified_files}
        return self._append(
            {
                "type": "compaction",
                "summary": summary.summary,
                "firstKeptEntryId": first_kept_id,
                "tokensBefore": summary.tokens_before,
                "details": details,
            }
        )

    def entry_id(self, message: AgentMessage) -> str | None:
        """The entry id a message was recorded under (by its :func:`~pi_notebook.ai.messages.message_key`), if
        it was."""
        return self._ids.get(message_key(message))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _append(self, body: dict[str, Any]) -> str:
        entry_id = secrets.token_hex(4)
        while entry_id in self._used:
            entry_id = secrets.token_hex(4)
        self._used.add(entry_id)
        entry = {"type": body.pop("type"), "id": entry_id, "parentId": self._leaf, "timestamp": _now_iso(), **body}
        self._write(entry)
        self._leaf = entry_id
        return entry_id

    def _write(self, entry: dict[str, Any]) -> None:
        if self._fd < 0:
            raise ValueError(f"session store {self.path} is closed")
        line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        written = os.write(self._fd, line)  # O_APPEND: one write per line, no buffering in this process
        while written < len(line):
            written += os.write(self._fd, line[written:])
        if self._fsync:
            os.fsync(self._fd)


@dataclass
class LoadedSession:
    header: dict[str, Any]
    messages: list[AgentMessage] = field(default_factory=list)
    entry_ids: list[str | None] = field(default_factory=list)
    leaf_id: str | None = None
    all_ids: set[str] = field(default_factory=set)
    """Every entry id in the file (all branches), so a continued file never reuses one."""
    skipped_lines: int = 0
    """Lines that could not be read (a torn last line after a kill, or unknown message shapes)."""


def load_session(path: str | Path) -> LoadedSession:
    """Rebuild the transcript a session file describes (ours or Pi's; see the module docstring)."""
    entries: list[dict[str, Any]] = []
    header: dict[str, Any] = {}
    skipped = 0
    with open(path, encoding="utf-8") as file:
        for line in file:
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                skipped += 1
                continue
            if not isinstance(entry, dict):
                skipped += 1
            elif entry.get("type") == "session":
                header = entry
            else:
                entries.append(entry)
    path_entries = _current_branch(entries)
    loaded = LoadedSession(header=header, skipped_lines=skipped)
    loaded.all_ids = {str(entry["id"]) for entry in entries if entry.get("id") is not None}
    loaded.leaf_id = path_entries[-1].get("id") if path_entries else None
    for index in range(len(path_entries) - 1, -1, -1):
        entry = path_entries[index]
        if entry.get("type") == "compaction":
            details = entry.get("details")
            if not isinstance(details, dict):
                details = {}
            summary = CompactionSummaryMessage(
                summary=str(entry.get("summary", "")),
                tokens_before=int(entry.get("tokensBefore") or 0),
                read_files=_strings(details.get("readFiles")),
                modified_files=_strings(details.get("modifiedFiles")),
            )
            loaded.messages.append(summary)
            loaded.entry_ids.append(entry.get("id"))
            kept = entry.get("firstKeptEntryId")
            start = next((i for i, e in enumerate(path_entries) if e.get("id") == kept), index + 1)
            path_entries = [e for i, e in enumerate(path_entries) if i >= start and i != index]
            break
    for entry in path_entries:
        message = _message_of(entry)
        if message is None:
            if entry.get("type") in ("message", "custom_message", "notebook_message"):
                loaded.skipped_lines += 1
            continue
        loaded.messages.append(message)
        loaded.entry_ids.append(entry.get("id"))
    return loaded


def _current_branch(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not entries:
        return []
    by_id = {entry.get("id"): entry for entry in entries if entry.get("id") is not None}
    if not by_id:
        return entries
    chain = []
    seen = set()
    node: dict[str, Any] | None = entries[-1]
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        chain.append(node)
        parent = node.get("parentId")
        node = by_id.get(parent) if parent is not None else None
    chain.reverse()
    return chain


def _message_of(entry: dict[str, Any]) -> AgentMessage | None:
    kind = entry.get("type")
    if kind == "custom_message":  # Pi's extension messages
        fields = {k: v for k, v in entry.items() if k not in ("type", "id", "parentId", "timestamp")}
        return CustomMessage(role="custom", **fields)
    data = entry.get("message")
    if kind not in ("message", "notebook_message") or not isinstance(data, dict):
        return None
    try:
        if kind == "notebook_message" or data.get("role") not in ("user", "assistant", "toolResult"):
            return CustomMessage.model_validate(data)
        if data.get("content") is None:  # Pi tolerates hand-edited files with missing content
            data = {**data, "content": []}
        return message_from_dict(data)
    except ValidationError:
        return None


def _strings(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []
