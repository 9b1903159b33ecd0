"""Which browser page shows the run's notebook, and asking it to read or change that notebook's cells.

A :class:`Frontend` is one notebook page of JupyterLab (or Notebook 7) whose pi-notebook extension opened a control
comm and said it can act on cells (``{"cells": 1, "path": ...}`` in its ``comm_open``). The control comm
(``pi_notebook.notebook._control_comm``, a floor above) tells the kernel's one :class:`Frontends` (``KERNEL.frontends``)
when one opens or closes and hands it every answer; this module knows nothing of comms: a frontend is a thread-safe
``send``.

Which page. The notebook the cell tools act on is the one whose cell started the run, described by a
:class:`NotebookTarget` the run sets in :data:`current_notebook` for its task: the client session id of the
``execute_request`` that ran the ``%pi`` cell (each page's kernel connection has its own; every comm message the
page sends carries it), that cell's id, and the notebook's path as the kernel knows it. The page is the newest
connected frontend that has that client id or shows exactly the path the page with that client id showed (after a
reload, whose new connection has a new client id; the old page's comm may still be listed). Paths are compared
whole, as the pages name them (relative to the server's root): ``sub/nb.ipynb`` is never ``nb.ipynb``, and the
kernel's own idea of the path (absolute, and fixed when the kernel started) is not used, so another notebook
attached to the same kernel is never acted on. A page closed without closing its comm (a reload, a crashed tab)
stays listed; it is dropped when it does not answer within :data:`REPLY_TIMEOUT_S`.

Waiting. A request waits for its answer at most :data:`REPLY_TIMEOUT_S` and never past the run's abort signal. A
call whose notebook has no connected page waits for one at most ``wait`` seconds (the cell tools give
:data:`RECONNECT_WAIT_S`: a page being reloaded reconnects within that), then fails with
:class:`NotebookUnavailable`. Requests, answers and waits happen on the kernel's event loop; :meth:`Frontends.notify`
(no answer) may be called from any thread (the live outputs of a running cell are sent from a flusher thread).
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..ai import AbortSignal, PiNotebookError

__all__ = [
    "RECONNECT_WAIT_S",
    "REPLY_TIMEOUT_S",
    "CellChange",
    "CellChanges",
    "Frontend",
    "FrontendRefused",
    "Frontends",
    "NotebookTarget",
    "NotebookUnavailable",
    "current_notebook",
]

REPLY_TIMEOUT_S = 5.0
"""How long a request waits for the page's answer (a page answers within milliseconds; a closed one never does)."""
RECONNECT_WAIT_S = 10.0
"""How long a cell tool waits for its notebook's page to connect (again, after a reload) before it fails."""

_log = logging.getLogger(__name__)


CellChangeKind = Literal["inserted", "edited", "deleted", "ran", "interrupted"]


@dataclass(frozen=True, slots=True)
class CellChange:
    """One thing a cell tool did to the notebook: ``call`` is the tool call's id, ``reason`` why a cell was
    interrupted (``"Stopped by the user"``, a timeout)."""

    call: str
    kind: CellChangeKind
    cell_id: str
    reason: str = ""


@dataclass(eq=False, slots=True)
class CellChanges:
    """What a run's cell tools did to the notebook, in order (the run's receipt reads it)."""

    items: list[CellChange] = field(default_factory=list)

    def record(self, call: str, kind: CellChangeKind, cell_id: str, reason: str = "") -> None:
        self.items.append(CellChange(call, kind, cell_id, reason))

    def ids(self, kind: CellChangeKind) -> list[str]:
        return [change.cell_id for change in self.items if change.kind == kind]

    def calls(self) -> set[str]:
        return {change.call for change in self.items}


@dataclass(frozen=True, slots=True)
class NotebookTarget:
    """The notebook a run's cell tools act on: where its ``%pi`` cell came from (see the module docstring).
    ``run`` is the run's number, which the changed cells' metadata records; ``changes`` what the tools did."""

    client: str | None
    cell_id: str | None = None
    path: str | None = None
    run: int = 0
    changes: CellChanges = field(default_factory=CellChanges, compare=False)


current_notebook: contextvars.ContextVar[NotebookTarget | None] = contextvars.ContextVar(
    "pi_notebook_current_notebook", default=None
)
"""The notebook of the run whose task is running (set by the run; the tools it calls read it)."""


@dataclass(eq=False, slots=True)
class Frontend:
    """One connected notebook page: its kernel connection's client id, the notebook path it shows, and how to
    send it a message (thread-safe)."""

    client: str
    path: str | None
    send: Callable[[dict[str, Any]], None]
    opened: float = field(default_factory=time.monotonic)


class NotebookUnavailable(PiNotebookError, RuntimeError):
    """No page shows the run's notebook (no JupyterLab extension, the page was closed) or it did not answer."""


class FrontendRefused(PiNotebookError, RuntimeError):
    """The page refused a request: ``error`` is a :data:`~._cell_protocol.CellError`, ``text`` its message."""

    def __init__(self, error: str, text: str) -> None:
        super().__init__(text)
        self.error = error


class Frontends:
    """The kernel's connected notebook pages and its open requests to them (see the module docstring)."""

    def __init__(self) -> None:
        self._open: tuple[Frontend, ...] = ()
        self._paths: dict[str, str] = {}  # client id -> the path its page showed (kept after it disconnects)
        self._pending: dict[int, tuple[Frontend, asyncio.Future[dict[str, Any]]]] = {}  # asked, its answer
        self._ids = itertools.count(1)
        self._changed: asyncio.Event | None = None

    # -- the control comm's side (on the event loop) -----------------------------------------------------
    def connect(self, frontend: Frontend) -> None:
        self._open = (*self._open, frontend)
        if frontend.path:
            self._paths[frontend.client] = frontend.path
        if self._changed is not None:
            self._changed.set()

    def disconnect(self, frontend: Frontend) -> None:
        self._open = tuple(item for item in self._open if item is not frontend)

    def reply(self, data: dict[str, Any], page: Frontend | None, client: str | None) -> bool:
        """An answer (``{"action": "cells", "request": N, ...}``) that came on ``page``'s comm from ``client``.
        Taken only from the page that was asked, in its own client's message: another page, or another client
        writing on that page's comm (its id is no secret), cannot answer for it. Whether it was taken."""
        pending = self._pending.get(data.get("request"))  # type: ignore[arg-type]
        if pending is None or pending[0] is not page or page.client != client or pending[1].done():
            return False
        pending[1].set_result(data)
        return True

    # -- the cell tools' side ------------------------------------------------------------------------------
    @property
    def connected(self) -> tuple[Frontend, ...]:
        return self._open

    def find(self, target: NotebookTarget | None) -> Frontend | None:
        """The newest page of ``target``'s client or showing exactly the path that client's page showed (a
        reload), or ``None`` (see the module docstring)."""
        if target is None or target.client is None:
            return None
        path = self._paths.get(target.client)
        found = [
            frontend
            for frontend in self._open
            if frontend.client == target.client or (path is not None and frontend.path == path)
        ]
        return max(found, key=lambda frontend: frontend.opened) if found else None

    async def wait_for(self, target: NotebookTarget | None, wait: float, signal: AbortSignal | None) -> Frontend:
        """The page showing ``target``'s notebook, waiting at most ``wait`` seconds for one to connect; raises
        :class:`NotebookUnavailable` (or returns early, raising it, when ``signal`` aborts)."""
        deadline = time.monotonic() + wait
        while (frontend := self.find(target)) is None:
            remaining = deadline - time.monotonic()
            if target is None or remaining <= 0 or (signal is not None and signal.aborted):
                raise NotebookUnavailable(_unavailable(target))
            changed = self._changed = self._changed or asyncio.Event()
            changed.clear()
            waiter = asyncio.ensure_future(changed.wait())
            try:
                await _first(waiter, remaining, signal)
            finally:
                waiter.cancel()
        return frontend

    async def request(
        self,
        target: NotebookTarget | None,
        message: dict[str, Any],
        signal: AbortSignal | None,
        *,
        wait: float = RECONNECT_WAIT_S,
        reply_within: float = REPLY_TIMEOUT_S,
    ) -> dict[str, Any]:
        """Send ``message`` (a request without its ``request`` number) to ``target``'s page and return the
        ``result`` of its answer (waited for at most ``reply_within`` seconds: longer for a question the user
        answers). Raises :class:`FrontendRefused` when the page refuses, and :class:`NotebookUnavailable` when no
        page answers (a silent page is dropped)."""
        frontend = await self.wait_for(target, wait, signal)
        number = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[number] = (frontend, future)
        try:
            frontend.send({**message, "request": number})
            await _first(future, reply_within, signal)
        finally:
            self._pending.pop(number, None)
        if not future.done():
            if signal is None or not signal.aborted:
                self.disconnect(frontend)
                raise NotebookUnavailable(
                    f"The notebook's page did not answer within {reply_within:g} s (was it closed or reloaded?)"
                )
            raise NotebookUnavailable("Operation aborted")
        answer = future.result()
        if not answer.get("ok"):
            raise FrontendRefused(str(answer.get("error") or "invalid"), str(answer.get("message") or ""))
        result = answer.get("result")
        return result if isinstance(result, dict) else {}

    def notify(self, target: NotebookTarget | None, message: dict[str, Any]) -> bool:
        """Send ``message`` (no answer expected) to ``target``'s page if one is connected; any thread."""
        frontend = self.find(target)
        if frontend is None:
            return False
        try:
            frontend.send({**message, "request": 0})
        except Exception:  # a page that went away: the next request finds out
            _log.debug("could not notify the notebook page", exc_info=True)
            return False
        return True


async def _first(waiter: asyncio.Future[Any], seconds: float, signal: AbortSignal | None) -> None:
    """Wait for ``waiter``, at most ``seconds``, and not past ``signal``'s abort (raises for neither;
    ``waiter`` is left as it is)."""
    aborted = asyncio.ensure_future(signal.wait()) if signal is not None else None
    try:
        waiters = [waiter] if aborted is None else [waiter, aborted]
        await asyncio.wait(waiters, timeout=max(0.0, seconds), return_when=asyncio.FIRST_COMPLETED)
    finally:
        if aborted is not None:
            aborted.cancel()


def _unavailable(target: NotebookTarget | None) -> str:
    if target is None:
        return "No notebook: this run was not started from a notebook cell, so the cell tools have nothing to act on"
    return (
        "The notebook is not open in a JupyterLab page with the pi-notebook extension (it may have been closed or "
        "be reloading), so its cells cannot be read or changed"
    )
