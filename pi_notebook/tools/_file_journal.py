"""Where the changing tools tell a run's checkpoint what they are about to change, before they change it.

A run that can be rewound (the notebook's runs: ``pi_notebook.kernel._checkpoint``) sets :data:`file_journal` for its
task; the tools it calls read it and, when one is set:

- ``write`` and ``edit`` call :meth:`FileJournal.before` on their worker thread, inside the file's mutation lock,
  before the first byte of the file (or a parent directory) changes, then :meth:`FileJournal.after` once the rename
  happened (a failed or stopped call never reaches it);
- ``bash`` calls :meth:`FileJournal.untracked` with its command before it starts it: what a command changes cannot
  be known, so a rewind names it instead of pretending to undo it.

Without a journal (a plain ``AgentSession``, a script) the tools do nothing more. A journal must be thread-safe
(writes of different files run in parallel threads) and must not raise: the tool's work matters more than its
checkpoint.
"""

from __future__ import annotations

import contextvars
import logging
from typing import Protocol

__all__ = ["FileJournal", "file_journal", "note_after", "note_before", "note_untracked"]

_log = logging.getLogger(__name__)


class FileJournal(Protocol):
    def before(self, absolute: str, content: bytes | None = None) -> None:
        """``absolute`` is about to be written. ``content``: its bytes when the tool has just read them (``edit``),
        else the journal reads the file itself (or records that it did not exist)."""

    def after(self, absolute: str) -> None:
        """The tool has written ``absolute`` (what it holds now is the run's)."""

    def untracked(self, tool: str, text: str) -> None:
        """``tool`` ran something whose changes are not tracked (``bash`` and its command)."""


file_journal: contextvars.ContextVar[FileJournal | None] = contextvars.ContextVar(
    "pi_notebook_file_journal", default=None
)
"""The running run's journal (set by the run for its task; ``None``: nothing is recorded)."""


def note_before(journal: FileJournal | None, absolute: str, content: bytes | None = None) -> None:
    """Tell ``journal`` (if any) that ``absolute`` is about to change; never raises."""
    if journal is not None:
        try:
            journal.before(absolute, content)
        except Exception:  # a checkpoint must never stop the tool
            _log.exception("the run's checkpoint failed to record %s", absolute)


def note_after(journal: FileJournal | None, absolute: str) -> None:
    """Tell ``journal`` (if any) that the tool has written ``absolute``; never raises."""
    if journal is not None:
        try:
            journal.after(absolute)
        except Exception:
            _log.exception("the run's checkpoint failed to record %s", absolute)


def note_untracked(journal: FileJournal | None, tool: str, text: str) -> None:
    if journal is not None:
        try:
            journal.untracked(tool, text)
        except Exception:
            _log.exception("the run's checkpoint failed to record a %s call", tool)
