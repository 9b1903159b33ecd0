"""The session's file and journal, kept in step: :class:`SessionFile` holds the store (the JSONL file, or ``None``:
nothing is saved) and the journal every entry goes through (the store, or a :class:`~._journal.MemoryJournal`
holding the same entries in memory), and hands the journal to the objects that record entries whenever it changes
(``AgentSession.use_store``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from ..agent import AgentMessage
from ._events import SessionEvent
from ._journal import Journal, MemoryJournal
from ._store import SessionStore

__all__ = ["SessionFile"]


class _Recorder(Protocol):
    journal: Journal


class SessionFile:
    """See the module docstring. The store's write failures go to ``emit`` (as session events)."""

    def __init__(
        self, store: SessionStore | None, messages: Iterable[AgentMessage], emit: Callable[[SessionEvent], None]
    ) -> None:
        self._emit = emit
        self.store = store
        self.journal: Journal = store if store is not None else MemoryJournal(messages)
        self._unsubscribe = store.subscribe(emit) if store is not None else None
        self._recorders: list[_Recorder] = []

    def attach(self, *recorders: _Recorder) -> None:
        """``recorders`` record through this file's journal, now and after every change."""
        self._recorders.extend(recorders)
        for recorder in recorders:
            recorder.journal = self.journal

    def use(self, store: SessionStore | None, messages: Iterable[AgentMessage]) -> None:
        """Record from now on in ``store`` (``None``: in memory, starting from ``messages``); the previous store is
        closed."""
        self._detach()
        if self.store is not None and self.store is not store:
            self.store.close()
        self.store = store
        self.journal = store if store is not None else MemoryJournal(messages)
        for recorder in self._recorders:
            recorder.journal = self.journal
        self._unsubscribe = store.subscribe(self._emit) if store is not None else None

    def close(self) -> None:
        """Close the store (its subscribers still hear whether its last write failed), then stop listening."""
        if self.store is not None:
            self.store.close()
        self._detach()

    def _detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
