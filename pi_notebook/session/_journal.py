"""Where a session's entries go: :class:`Journal` gives each entry its id and parent (the session tree,
``_tree``) and hands it, as a file line, to its place: the session file (:class:`~._store.SessionStore`), or memory
(:class:`MemoryJournal`, for a session that saves nothing), which holds the lines the file would hold, so that a
session without a file has a tree to go back in too.

Entries are Pi's (see ``_store`` for the file format): ``message`` / ``notebook_message``, ``compaction``,
``branch_summary``, ``model_change``, and the leaf move (a ``custom`` entry, see ``_tree``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from ..agent import AgentMessage, CustomMessage
from ..ai import Model, Usage, model_record
from ._branch_summary import BranchSummaryMessage
from ._summary import CompactionSummaryMessage
from ._tree import LEAF_MOVE, EntryIndex, TreeError

__all__ = ["Journal", "MemoryJournal", "encode_entry", "now_iso"]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def encode_entry(entry: dict[str, Any]) -> bytes:
    """One file line: compact JSON, UTF-8; a lone surrogate (half of a UTF-16 pair, e.g. from a provider's
    ``\\ud83d`` escape) as its JSON escape, as JavaScript's ``JSON.stringify`` writes it."""
    line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"
    try:
        return line.encode()
    except UnicodeEncodeError:  # lone surrogates: as JSON escapes (valid JSON; JSON.stringify writes them so)
        return line.encode("utf-8", "backslashreplace")


class Journal:
    """Records a session's entries (see the module docstring). ``index`` is the tree of every entry recorded or
    read; each new entry is a child of its leaf. Subclasses write the lines (:meth:`_write`) and read them back
    (:meth:`read_bytes`)."""

    def __init__(self, index: EntryIndex | None = None, model: dict[str, Any] | None = None) -> None:
        self.index = index if index is not None else EntryIndex()
        self.model: dict[str, Any] | None = model
        """The model the entries name last (its ``model_change`` record, see ``record_model``)."""
        self._model_seen: Model | None = None

    @property
    def leaf_id(self) -> str | None:
        """Where the next entry goes: the last entry of the current branch (``None``: before the first)."""
        return self.index.leaf_id

    def append_message(self, message: AgentMessage) -> str:
        """Record a message; returns its entry id."""
        if isinstance(message, CompactionSummaryMessage | BranchSummaryMessage):
            raise ValueError("summaries are recorded with append_compaction() and append_branch_summary()")
        kind = "notebook_message" if isinstance(message, CustomMessage) else "message"
        return self._append({"type": kind, "message": self._message_body(message)}, message=message)

    def append_compaction(self, summary: CompactionSummaryMessage, first_kept: AgentMessage | None) -> str:
        """Record a compaction: ``summary`` replaces everything before ``first_kept`` (a recorded message)."""
        first_kept_id = self.entry_id(first_kept) if first_kept is not None else None
        details = {"readFiles": summary.read_files, "modifiedFiles": summary.modified_files}
        body = {
            "type": "compaction",
            "summary": summary.summary,
            "firstKeptEntryId": first_kept_id,
            "tokensBefore": summary.tokens_before,
            "details": details,
        }
        return self._append(body, message=summary)

    def append_branch_summary(self, summary: BranchSummaryMessage, usage: Usage | None = None) -> str:
        """Move the leaf to ``summary.from_id`` (``"root"``: before the first entry) and record the summary there,
        as Pi's ``branchWithSummary`` does; returns its entry id (the new leaf)."""
        parent = None if summary.from_id == "root" else summary.from_id
        self._check(parent)
        return self._append({"type": "branch_summary", **summary.entry_fields(usage)}, message=summary, parent=parent)

    def move_leaf(self, entry_id: str | None) -> None:
        """Make ``entry_id`` the leaf (``None``: before the first entry), recorded so that a reader of the file (Pi
        0.83 too) continues there (a leaf-move entry, see ``_tree``). Raises :class:`TreeError` for an unknown id."""
        self._check(entry_id)
        if entry_id == self.index.leaf_id:
            return
        body = {"type": "custom", "customType": LEAF_MOVE, "data": {"from": self.index.leaf_id}}
        self._append(body, parent=entry_id)

    def record_model(self, model: Model) -> str | None:
        """Record that the messages from now on are made with ``model`` (a ``model_change`` entry, see
        ``ai/_model_record.py``); nothing when it is the model recorded last. Returns the entry id, if one was
        written. Cheap when the model is the one seen last (called before every message)."""
        if model is self._model_seen:
            return None
        self._model_seen = model
        record = model_record(model)
        if self.model == record:
            return None
        self.model = record
        return self._append({"type": "model_change", **record})

    def entry_id(self, message: AgentMessage) -> str | None:
        """The entry id a message was recorded under (by its :func:`~pi_notebook.ai.messages.message_key`), if
        it was."""
        return self.index.entry_id(message)

    def read_bytes(self) -> bytes:
        """Every line recorded (header first), as the file holds them."""
        raise NotImplementedError

    def _message_body(self, message: AgentMessage) -> object:
        """What a message entry's ``message`` holds: the message as JSON (a file's line)."""
        return message.model_dump(mode="json", by_alias=True, exclude_none=True)

    def close(self) -> None:
        """Nothing more is recorded."""

    def _check(self, entry_id: str | None) -> None:
        if entry_id is not None and entry_id not in self.index:
            raise TreeError(f"no entry {entry_id!r} in this session")

    def _append(self, body: dict[str, Any], *, message: AgentMessage | None = None, parent: object = ...) -> str:
        entry_id = self.index.new_id()
        parent_id = self.index.leaf_id if parent is ... else parent
        entry = {"type": body.pop("type"), "id": entry_id, "parentId": parent_id, "timestamp": now_iso(), **body}
        self._write(entry)
        self.index.add(entry, message)
        return entry_id

    def _write(self, entry: dict[str, Any]) -> None:
        raise NotImplementedError


class MemoryJournal(Journal):
    """The journal of a session that saves no file: the entries the file would hold, in memory. A message entry
    holds the message itself (the transcript holds it too: no copy), made a line only when the entries are read
    (:meth:`read_bytes`, when the session goes elsewhere in its tree); it keeps alive the messages a compaction or a
    move took out of the context, as a file would hold them. ``messages`` are recorded first (a chain, as a file
    continued from them would be)."""

    def __init__(self, messages: Iterable[AgentMessage] = ()) -> None:
        super().__init__()
        self._entries: list[dict[str, Any]] = []
        for message in messages:
            if isinstance(message, CompactionSummaryMessage):
                self.append_compaction(message, None)
            elif isinstance(message, BranchSummaryMessage):  # from another file: its fromId is that file's
                self._append({"type": "branch_summary", **message.entry_fields()}, message=message)
            else:
                self.append_message(message)

    def read_bytes(self) -> bytes:
        return b"".join(encode_entry(_as_json(entry)) for entry in self._entries)

    def _message_body(self, message: AgentMessage) -> object:
        return message

    def _write(self, entry: dict[str, Any]) -> None:
        self._entries.append(entry)


def _as_json(entry: dict[str, Any]) -> dict[str, Any]:
    message = entry.get("message")
    if message is None or isinstance(message, dict):
        return entry
    dumped = message.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {**entry, "message": dumped}
