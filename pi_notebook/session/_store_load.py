"""Reading session files (ours and Pi's), tolerating the damage a crash, a full disk or another tool leaves.

:func:`load_session` follows the ``parentId`` chain from the last entry (session files are trees, see ``_tree``;
the last entry is the current leaf, or names it: a leaf move), keeps ``message`` entries (Pi's ``custom`` message
role and Pi's ``custom_message`` entries are read as :class:`~pi_notebook.agent.CustomMessage` with role
``custom``) and ``branch_summary`` entries (a :class:`~._branch_summary.BranchSummaryMessage`), applies the latest
``compaction`` entry (its summary becomes a :class:`CompactionSummaryMessage`, followed by the messages from
``firstKeptEntryId`` on), reads the session's model as Pi does (:attr:`LoadedSession.model`), and ignores the
other entry kinds (thinking-level changes, labels, custom data). Every entry of the file, on every branch, is in
:attr:`LoadedSession.index`. :func:`read_session` reads the branch that ends at another entry. Pi's version 1
files (no ids) are read in file order.

What the loader tolerates, and how it reports it in :attr:`LoadedSession.problems` (one
:class:`LoadProblem` per line, its 1-based number and a reason):

* a line that is not valid JSON (a torn write after a kill, a corrupt line) is skipped and counted in
  ``skipped_lines``; if a complete entry was glued onto a torn line (a file continued by an older
  version of this package, or by Pi, which appends the same way), that entry is recovered;
* bytes that are not UTF-8 are read as U+FFFD (as Pi's reader does), so a line that is still valid JSON
  keeps its entry (reported, not skipped);
* an entry whose ``parentId`` names a missing entry (the lost line) continues with the entry before it in
  the file, so one bad line loses only its own entry, never the messages before it;
* a header whose format ``version`` is newer than ours is read as version 3 and reported
  (:class:`SessionStore` refuses to append to such a file); entries without a header are read and
  reported (Pi cannot open such a file, and :class:`SessionStore` refuses it).

An empty file loads as an empty session; a non-empty file in which no line is a JSON object raises
:class:`SessionFileError` (a one-line message naming the file).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import from_json

from ..agent import AgentMessage, CustomMessage
from ..ai import PiNotebookError
from ..ai.messages import message_from_dict
from ._branch_summary import BranchSummaryMessage
from ._summary import CompactionSummaryMessage
from ._tree import EntryIndex

__all__ = [
    "FORMAT_VERSION",
    "LoadProblem",
    "LoadedSession",
    "SessionFileError",
    "entries_by_id",
    "load_session",
    "message_of_entry",
    "read_session",
]

FORMAT_VERSION = 3
"""The session format version we read and write (Pi 0.83's ``CURRENT_SESSION_VERSION``)."""

_ENTRY_START = '{"type"'
"""How every entry line starts (ours and Pi's ``JSON.stringify`` put ``type`` first)."""
_DECODER = json.JSONDecoder()


class SessionFileError(PiNotebookError, ValueError):
    """Raised by :func:`load_session` for a file that is not a session file, and by :class:`SessionStore`
    for a file it must not append to (no session header, or a newer format version)."""


@dataclass(frozen=True, slots=True)
class LoadProblem:
    """A line of a session file that could not be read as written. ``skipped``: its entry was left out
    (otherwise it was kept, e.g. with U+FFFD for bytes that are not UTF-8)."""

    line: int
    reason: str
    skipped: bool = True

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


@dataclass
class LoadedSession:
    header: dict[str, Any]
    messages: list[AgentMessage] = field(default_factory=list)
    entry_ids: list[str | None] = field(default_factory=list)
    leaf_id: str | None = None
    """The current leaf (where the next entry goes): the last entry, or the entry a final leaf move names."""
    index: EntryIndex = field(default_factory=EntryIndex)
    """Every entry of the file, every branch (``_tree``)."""
    all_ids: set[str] = field(default_factory=set)
    """Every entry id in the file (all branches), so a continued file never reuses one."""
    skipped_lines: int = 0
    """Lines whose entry was left out (torn or corrupt lines, unknown message shapes): see ``problems``."""
    problems: list[LoadProblem] = field(default_factory=list)
    """What could not be read as written, line by line (see the module docstring)."""
    newer_version: object = None
    """The header's format version when it is newer than ours (``None`` otherwise)."""
    model: dict[str, Any] | None = None
    """The session's model, as Pi reads it: the last ``model_change`` entry or assistant reply on the current branch
    (a reply gives only ``provider``, ``modelId`` and ``api``; ``None``: the file names none)."""


@dataclass
class _Lines:
    """The entries of a file in file order, with their line numbers."""

    header: dict[str, Any] | None = None
    header_line: int = 0
    entries: list[dict[str, Any]] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    problems: list[LoadProblem] = field(default_factory=list)
    any_json: bool = False


def load_session(path: str | Path) -> LoadedSession:
    """Rebuild the transcript a session file describes (ours or Pi's): the current branch (from the last
    entry up its ``parentId`` chain), with the latest compaction applied. Raises :class:`SessionFileError`
    if the file is not a session file, ``OSError`` if it cannot be read."""
    path = Path(path)
    data = path.read_bytes()
    try:
        return read_session(data)
    except SessionFileError as error:
        raise SessionFileError(f"{path} {error}") from None


_LAST = object()


def read_session(data: bytes, leaf_id: str | object | None = _LAST) -> LoadedSession:
    """A session file's content (see :func:`load_session`), its transcript the branch that ends at ``leaf_id``
    (``None``: before the first entry; by default the current leaf). Raises :class:`SessionFileError` if it is
    not a session file, :class:`~._tree.TreeError` for a ``leaf_id`` it does not hold."""
    lines = _read_lines(data)
    if not lines.any_json and data.strip():
        raise SessionFileError("is not a session file: none of its lines is a JSON object")
    header = lines.header or {}
    problems = lines.problems
    if lines.header is None and lines.entries:
        reason = "no session header before this entry (Pi cannot open this file)"
        problems.append(LoadProblem(lines.numbers[0], reason, skipped=False))
    version = header.get("version", 1) if lines.header is not None else None
    newer = version is not None and not (isinstance(version, int) and version <= FORMAT_VERSION)
    if newer:
        reason = f"format version {version!r} is newer than ours ({FORMAT_VERSION}); read as {FORMAT_VERSION}"
        problems.append(LoadProblem(lines.header_line, reason, skipped=False))
    loaded = LoadedSession(header=header, newer_version=version if newer else None)
    loaded.all_ids = {str(entry["id"]) for entry in lines.entries if entry.get("id") is not None}
    index = loaded.index
    for entry in lines.entries:
        index.add(entry)
    if leaf_id is _LAST:
        branch = _current_branch(lines, len(lines.entries) - 1)
    else:
        index.path(leaf_id if isinstance(leaf_id, str) else None)  # TreeError for an unknown id
        index.leaf_id = leaf_id if isinstance(leaf_id, str) else None
        start = next((i for i, entry in enumerate(lines.entries) if entry.get("id") == leaf_id), -1)
        branch = _current_branch(lines, start)
    loaded.leaf_id = index.leaf_id
    _rebuild(loaded, lines, _apply_compaction(loaded, lines, branch))
    for message, entry_id in zip(loaded.messages, loaded.entry_ids, strict=True):
        if entry_id:
            index.remember(message, entry_id)
    loaded.model = _model_of(lines, branch)
    loaded.problems = sorted(problems, key=lambda problem: problem.line)
    loaded.skipped_lines = sum(1 for problem in loaded.problems if problem.skipped)
    return loaded


def entries_by_id(data: bytes) -> dict[str, dict[str, Any]]:
    """The entries of a session file's content that have an id, by id (in file order)."""
    return {entry["id"]: entry for entry in _read_lines(data).entries if isinstance(entry.get("id"), str)}


def message_of_entry(entry: dict[str, Any]) -> AgentMessage | None:
    """What an entry puts in the context, as Pi's branch summariser reads it: a message, a compaction's or a branch's
    summary (``None``: nothing, e.g. a model change)."""
    if entry.get("type") == "compaction":
        summary = str(entry.get("summary", ""))
        return CompactionSummaryMessage(summary=summary, tokens_before=_int(entry.get("tokensBefore")))
    return _message_of(entry)


def _read_lines(data: bytes) -> _Lines:
    lines = _Lines()
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        entry = _parse_line(raw, number, lines.problems)
        if entry is None:
            continue
        lines.any_json = True
        if entry.get("type") == "session" and lines.header is None and not lines.entries:
            lines.header, lines.header_line = entry, number
        elif entry.get("type") == "session":
            lines.problems.append(LoadProblem(number, "a second session header"))
        else:
            lines.entries.append(entry)
            lines.numbers.append(number)
    return lines


def _parse_line(raw: bytes, number: int, problems: list[LoadProblem]) -> dict[str, Any] | None:
    try:
        text, utf8 = raw.decode("utf-8"), True
    except UnicodeDecodeError:
        text, utf8 = raw.decode("utf-8", "replace"), False
    try:
        entry = _loads(text)
    except ValueError:
        entry = _glued_entry(text)
        if entry is None:
            what = "not valid JSON" if utf8 else "not valid JSON nor UTF-8"
            problems.append(LoadProblem(number, f"{what} ({len(raw)} bytes; a torn write?)"))
            return None
        problems.append(LoadProblem(number, "began with a torn entry, skipped; the entry glued onto it was kept"))
    if not isinstance(entry, dict):
        problems.append(LoadProblem(number, "not a JSON object"))
        return None
    if not utf8:
        problems.append(LoadProblem(number, "invalid UTF-8, read as U+FFFD", skipped=False))
    return entry


def _loads(text: str) -> Any:
    """``json.loads``, through pydantic-core's parser first (about 4x faster on entry lines); the few lines it
    refuses and the standard library reads (lone surrogate escapes, which JavaScript writes) go to ``json``."""
    try:
        return from_json(text)
    except ValueError:
        return json.loads(text)


def _glued_entry(text: str) -> dict[str, Any] | None:
    """A complete entry that an append glued onto an unterminated torn line: the rest of the line from the
    first ``{"type"`` at which it parses as one entry (``raw_decode`` in place: no copy per attempt)."""
    text = text.rstrip()
    start = text.find(_ENTRY_START, 1)
    while start > 0:
        try:
            entry, end = _DECODER.raw_decode(text, start)
        except ValueError:
            entry, end = None, -1
        if end == len(text):
            return entry if isinstance(entry, dict) and "id" in entry else None
        start = text.find(_ENTRY_START, start + 1)
    return None


def _current_branch(lines: _Lines, last: int) -> list[int]:
    """Indices of the entries from the first to the entry at ``last`` (-1: none), following ``parentId``. A parent
    that is not in the file (its line was lost) is bridged to the entry before the child in file order."""
    entries = lines.entries
    position = {entry["id"]: index for index, entry in enumerate(entries) if isinstance(entry.get("id"), str)}
    if not position:  # Pi's version 1 files: no ids, one linear sequence
        return list(range(len(entries)))
    chain: list[int] = []
    seen: set[int] = set()
    index: int | None = last
    while index is not None and index >= 0 and index not in seen:
        seen.add(index)
        chain.append(index)
        parent = entries[index].get("parentId")
        if parent is None:
            break
        found = position.get(parent) if isinstance(parent, str) else None
        if found is None:
            reason = f"its parent entry {parent!r} is missing; continued with the entry before it in the file"
            lines.problems.append(LoadProblem(lines.numbers[index], reason, skipped=False))
            found = index - 1
        index = found
    chain.reverse()
    return chain


def _apply_compaction(loaded: LoadedSession, lines: _Lines, branch: list[int]) -> list[int]:
    """Add the latest compaction's summary to ``loaded``; return the branch entries that follow it."""
    entries = lines.entries
    for at in range(len(branch) - 1, -1, -1):
        entry = entries[branch[at]]
        if entry.get("type") != "compaction":
            continue
        details = entry.get("details")
        if not isinstance(details, dict):
            details = {}
        summary = CompactionSummaryMessage(
            summary=str(entry.get("summary", "")),
            tokens_before=_int(entry.get("tokensBefore")),
            read_files=_strings(details.get("readFiles")),
            modified_files=_strings(details.get("modifiedFiles")),
        )
        loaded.messages.append(summary)
        loaded.entry_ids.append(entry.get("id"))
        kept = entry.get("firstKeptEntryId")
        start = next((i for i, index in enumerate(branch) if entries[index].get("id") == kept), at + 1)
        return [index for i, index in enumerate(branch) if i >= start and i != at]
    return branch


def _rebuild(loaded: LoadedSession, lines: _Lines, indices: list[int]) -> None:
    for index in indices:
        entry = lines.entries[index]
        message = _message_of(entry)
        if message is None:
            if entry.get("type") in ("message", "custom_message", "notebook_message"):
                lines.problems.append(LoadProblem(lines.numbers[index], "not a message this version can read"))
            continue
        loaded.messages.append(message)
        loaded.entry_ids.append(entry.get("id"))


def _model_of(lines: _Lines, branch: list[int]) -> dict[str, Any] | None:
    """Pi's ``getSessionContextSettings``: the model of the last ``model_change`` or assistant reply on the branch.
    A reply of the model the last ``model_change`` named keeps that entry's fuller record."""
    named: dict[str, Any] | None = None  # the last reply's model, if it came after the last model_change
    for index in reversed(branch):
        entry = lines.entries[index]
        message = entry.get("message")
        if entry.get("type") == "model_change":
            change = {key: value for key, value in entry.items() if key not in ("type", "id", "parentId", "timestamp")}
            if named is None or (named["provider"], named["modelId"]) == (
                change.get("provider"),
                change.get("modelId"),
            ):
                return change
            return named
        if named is None and isinstance(message, dict) and message.get("role") == "assistant":
            named = {"provider": message.get("provider"), "modelId": message.get("model"), "api": message.get("api")}
    return named


def _message_of(entry: dict[str, Any]) -> AgentMessage | None:
    kind = entry.get("type")
    try:
        if kind == "custom_message":  # Pi's extension messages
            fields = {k: v for k, v in entry.items() if k not in ("type", "id", "parentId", "timestamp")}
            return CustomMessage(role="custom", **fields)
        if kind == "branch_summary":
            return _branch_summary(entry)
        data = entry.get("message")
        if kind not in ("message", "notebook_message") or not isinstance(data, dict):
            return None
        if kind == "notebook_message" or data.get("role") not in ("user", "assistant", "toolResult"):
            return CustomMessage.model_validate(data)
        if data.get("content") is None:  # Pi tolerates hand-edited files with missing content
            data = {**data, "content": []}
        return message_from_dict(data)
    except (ValidationError, TypeError, ValueError):
        return None


def _branch_summary(entry: dict[str, Any]) -> BranchSummaryMessage | None:
    """A ``branch_summary`` entry as Pi reads it into the context (only one with a summary)."""
    summary = entry.get("summary")
    if not isinstance(summary, str) or not summary:
        return None
    details = entry.get("details")
    details = details if isinstance(details, dict) else {}
    from_id = entry.get("fromId")
    return BranchSummaryMessage(
        summary=summary,
        from_id=from_id if isinstance(from_id, str) else "root",
        read_files=_strings(details.get("readFiles")),
        modified_files=_strings(details.get("modifiedFiles")),
        from_hook=entry.get("fromHook") is True,
    )


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) and value == value and abs(value) != float("inf") else 0


def _strings(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []
