"""The session tree, as Pi 0.83 has it: every entry of a session file names its parent (``parentId``), so the
file holds a tree; the *leaf* is where the next entry goes, and the current branch is the path from the root to
it.

:class:`EntryIndex` holds every entry of a session (every branch), light: its id, its parent, its type and a short
preview of its text, never the message itself (the file holds those; a session without a file holds them in its
:class:`~._journal.MemoryJournal`). :meth:`EntryIndex.snapshot` draws it as a :class:`SessionTree` with the current
branch marked, which ``%pi tree`` and the run widget show.

Moving the leaf without a summary (``AgentSession.branch_to``, and a tree navigation that writes no summary) is
written to the file as a ``custom`` entry whose ``customType`` is :data:`LEAF_MOVE`, a child of the new leaf. Pi
0.83 takes a file's last entry as its leaf and leaves ``custom`` entries out of the context it sends (and out of
its tree view), so Pi continues on the branch we chose; we read such an entry as "the leaf is my parent", so the
next entry is the new leaf's child, as Pi's own ``branch()`` then ``append`` would write it. (Pi 0.83 itself
does not write a leaf move: its leaf goes back to the file's last entry when the file is opened again.)

A ``parentId`` that names no entry before it (its line was lost) is read as the entry before it in the file, as
the loader does (``_store_load``), so one lost line loses only its own entry.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..agent import AgentMessage
from ..ai import UserError
from ..ai.messages import message_key
from ._branch_summary import BRANCH_SUMMARY_PREAMBLE

__all__ = ["LEAF_MOVE", "EntryIndex", "SessionTree", "TreeEntry", "TreeError", "TreeNode"]

LEAF_MOVE = "pi_notebook.leaf"
"""``customType`` of the ``custom`` entry that records a leaf move (see the module docstring)."""

PREVIEW_CHARS = 200
"""How much of an entry's text the index keeps (the tree shows its first words)."""


class TreeError(UserError, ValueError):
    """An entry id the session does not have, or an entry that is not a place to go to (``%pi fork`` of a reply)."""


@dataclass(slots=True)
class TreeEntry:
    """One entry of the session file, light. ``type`` is Pi's entry type (``message``, ``compaction``,
    ``branch_summary``, ``model_change``, ``custom``, ...); ``role`` the role of a ``message`` entry's message
    (``user``, ``assistant``, ``toolResult``, ``custom``) or a ``custom`` entry's ``customType``; ``text`` the start
    of its text (a prompt, a reply, a summary; for a reply with only tool calls, their names)."""

    id: str
    parent_id: str | None
    type: str
    timestamp: str = ""
    role: str | None = None
    text: str = ""
    prompt_number: int = 0
    """A user prompt's number in the session, 1 for the first in the file (0: not a prompt); it never changes, as
    the file only grows (``%pi fork N``)."""

    @property
    def is_user(self) -> bool:
        """A user's prompt: where ``%pi fork`` can go."""
        return self.type == "message" and self.role == "user"

    @property
    def is_leaf_move(self) -> bool:
        return self.type == "custom" and self.role == LEAF_MOVE


@dataclass(frozen=True, slots=True)
class TreeNode:
    """An entry in a :class:`SessionTree`: its children oldest first; ``on_branch``: on the current branch."""

    entry: TreeEntry
    children: tuple[TreeNode, ...] = ()
    on_branch: bool = False


@dataclass(frozen=True, slots=True)
class SessionTree:
    """Every entry of a session as a tree (a snapshot). ``roots`` are the entries without a parent; ``leaf_id``
    the current leaf (``None``: before the first entry); ``branch`` the ids on the current branch, root first."""

    roots: tuple[TreeNode, ...] = ()
    leaf_id: str | None = None
    branch: tuple[str, ...] = ()

    def walk(self) -> Iterator[tuple[int, TreeNode]]:
        """Every node with its depth (its number of ancestors), parents before children, oldest child first."""
        stack = [(0, node) for node in reversed(self.roots)]
        while stack:  # not recursive: a linear session of 10k entries is 10k deep
            depth, node = stack.pop()
            yield depth, node
            stack.extend((depth + 1, child) for child in reversed(node.children))

    def find(self, entry_id: str) -> TreeNode | None:
        return next((node for _, node in self.walk() if node.entry.id == entry_id), None)

    def __len__(self) -> int:
        return sum(1 for _ in self.walk())


@dataclass(slots=True)
class EntryIndex:
    """Every entry of a session by id, in file order, with the current leaf (see the module docstring).

    Entries are added as they are read or written (:meth:`add`); the entry ids of recorded messages are found by
    the message's :func:`~pi_notebook.ai.messages.message_key` (:meth:`entry_id`), which keeps no message alive.
    """

    entries: dict[str, TreeEntry] = field(default_factory=dict)
    leaf_id: str | None = None
    prompts: int = 0
    """How many user prompts the session holds (every branch)."""
    _keys: dict[int, str] = field(default_factory=dict)
    _last: str | None = None

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, entry_id: str | None) -> TreeEntry | None:
        return self.entries.get(entry_id) if entry_id is not None else None

    def new_id(self) -> str:
        """A fresh id: 8 hex digits, as Pi's, unused in this session."""
        entry_id = secrets.token_hex(4)
        while entry_id in self.entries:
            entry_id = secrets.token_hex(4)
        return entry_id

    def add(self, entry: Mapping[str, Any], message: AgentMessage | None = None) -> TreeEntry | None:
        """Index an entry (a file line's object) and make it the leaf (a leaf move: its parent); ``None`` for an
        entry without an id (Pi's version 1 files). ``message``: the message it records (for :meth:`entry_id`)."""
        entry_id = entry.get("id")
        if not isinstance(entry_id, str) or not entry_id:
            return None
        parent = entry.get("parentId")
        parent_id = parent if isinstance(parent, str) else None
        if parent_id is not None and parent_id not in self.entries:
            parent_id = self._last  # a lost parent: the entry before it in the file
        while parent_id is not None and self.entries[parent_id].is_leaf_move:
            parent_id = self.entries[parent_id].parent_id  # Pi appended after a leaf move: its child is the leaf's
        node = TreeEntry(entry_id, parent_id, str(entry.get("type", "")), str(entry.get("timestamp", "")))
        _describe(node, entry)
        if node.is_user:
            self.prompts += 1
            node.prompt_number = self.prompts
        self.entries[entry_id] = node
        self._last = entry_id
        self.leaf_id = parent_id if node.is_leaf_move else entry_id
        if message is not None:
            self._keys[message_key(message)] = entry_id
        return node

    def remember(self, message: AgentMessage, entry_id: str) -> None:
        """``message`` (read back from the file) is the one entry ``entry_id`` records."""
        self._keys[message_key(message)] = entry_id

    def entry_id(self, message: AgentMessage) -> str | None:
        """The id of the entry that recorded ``message``, if one did."""
        return self._keys.get(message_key(message))

    def path(self, entry_id: str | None) -> list[TreeEntry]:
        """The entries from the root to ``entry_id`` (``None``: none); raises :class:`TreeError` for an unknown id."""
        if entry_id is None:
            return []
        node = self.entries.get(entry_id)
        if node is None:
            raise TreeError(f"no entry {entry_id!r} in this session")
        path: list[TreeEntry] = []
        seen: set[str] = set()
        while node is not None and node.id not in seen:
            seen.add(node.id)
            path.append(node)
            node = self.entries.get(node.parent_id) if node.parent_id is not None else None
        path.reverse()
        return path

    def snapshot(self) -> SessionTree:
        """The entries as a :class:`SessionTree`, the current branch marked (leaf moves left out)."""
        branch = tuple(entry.id for entry in self.path(self.leaf_id))
        on_branch = set(branch)
        children: dict[str | None, list[TreeEntry]] = {}
        for entry in self.entries.values():
            if not entry.is_leaf_move:
                children.setdefault(entry.parent_id, []).append(entry)
        built: dict[str, TreeNode] = {}
        # Children before parents: entries are in file order and a parent is written before its children, so the
        # reversed order builds every child first.
        for entry in reversed(self.entries.values()):
            if entry.is_leaf_move:
                continue
            kids = tuple(built.pop(kid.id) for kid in children.get(entry.id, ()) if kid.id in built)
            built[entry.id] = TreeNode(entry, kids, entry.id in on_branch)
        roots = tuple(built[entry.id] for entry in children.get(None, ()) if entry.id in built)
        return SessionTree(roots, self.leaf_id, branch)


def _describe(node: TreeEntry, entry: Mapping[str, Any]) -> None:
    """Fill ``role`` and ``text`` of ``node`` from its file entry (whose ``message`` may be the message itself: a
    :class:`~._journal.MemoryJournal`'s)."""
    kind = node.type
    if kind in ("message", "notebook_message"):
        message = entry.get("message")
        if message is not None:
            role = _get(message, "role")
            node.role = str(role or "")
            node.text = _text(_get(message, "content"), role == "assistant")
            if node.role == "toolResult" and not node.text:
                node.text = str(_get(message, "toolName") or _get(message, "tool_name") or "")
    elif kind == "custom_message":
        node.role, node.text = "custom", _text(entry.get("content"), False)
    elif kind == "custom":
        node.role = str(entry.get("customType", ""))
    elif kind in ("compaction", "branch_summary"):  # a branch summary without Pi's preamble: what it says first
        node.text = _clip(str(entry.get("summary", "")).removeprefix(BRANCH_SUMMARY_PREAMBLE))


def _get(item: object, key: str) -> Any:
    """``item[key]`` of a file's JSON, or the attribute of a message object."""
    return item.get(key) if isinstance(item, Mapping) else getattr(item, key, None)


def _text(content: object, reply: bool) -> str:
    if isinstance(content, str):
        return _clip(content)
    if not isinstance(content, list | tuple):
        return ""
    text = "".join(str(_get(block, "text") or "") for block in content if _get(block, "type") == "text")
    if not text.strip() and reply:
        calls = [str(_get(block, "name") or "") for block in content if _get(block, "type") == "toolCall"]
        return "→ " + ", ".join(calls) if calls else ""
    return _clip(text)


def _clip(text: str) -> str:
    return text[:PREVIEW_CHARS]
