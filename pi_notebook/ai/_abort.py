"""One abort signal per run, as in Pi (and the web's AbortController).

Abort is cooperative: whoever holds the signal checks ``signal.aborted`` or registers a listener. To make a
pending await stop at once, enter :func:`abort_scope` around it: the scope is cancelled when the signal
fires, so an HTTP read, a backoff sleep or a subprocess wait ends within milliseconds instead of at the
next chunk.

All methods must be called on the event loop's thread. From another thread, use
``loop.call_soon_threadsafe(controller.abort)``. ``wait()`` and ``abortable_sleep`` need an asyncio loop (the
Jupyter kernel's); anyio is used for cancel scopes, on its asyncio backend.

A signal may also carry a :class:`Deadline`: when a timer of its owner will abort it, and why. The timer is an
asyncio timer, so it cannot fire while code blocks the event loop's thread; a consumer that blocks that thread
(the ``python`` tool runs the agent's code synchronously) reads ``signal.deadline`` and enforces it itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

import anyio

__all__ = ["AbortController", "AbortSignal", "Deadline", "OnAbort", "abort_scope", "abortable_sleep"]

_log = logging.getLogger(__name__)

OnAbort = Callable[[], object]
"""What ``AbortSignal.add_listener`` takes: called once, with no arguments, when the signal aborts."""


@dataclass(frozen=True, slots=True)
class Deadline:
    """A signal will be aborted at ``at`` (``time.monotonic()`` seconds); ``reason`` says why, for people and
    models (``"Tool python timed out after 2 seconds"``, ``"Turn timed out: ..."``)."""

    at: float
    reason: str

    @staticmethod
    def first(*deadlines: Deadline | None) -> Deadline | None:
        """The deadline that comes first (``None`` entries are ignored; ``None`` when there is none)."""
        present = [deadline for deadline in deadlines if deadline is not None]
        return min(present, key=lambda deadline: deadline.at) if present else None


class AbortSignal:
    """Read side of an :class:`AbortController`."""

    __slots__ = ("_aborted", "_deadline", "_listeners", "_reason", "_waiter")

    def __init__(self, deadline: Deadline | None = None) -> None:
        self._aborted = False
        self._reason: object = None
        self._deadline = deadline
        self._listeners: list[OnAbort] = []
        self._waiter: asyncio.Future[None] | None = None

    @property
    def aborted(self) -> bool:
        return self._aborted

    @property
    def deadline(self) -> Deadline | None:
        """When the owner's timer will abort this signal (see the module docstring); ``None``: no timer."""
        return self._deadline

    @property
    def reason(self) -> object:
        """What was passed to ``abort()``; ``None`` while not aborted."""
        return self._reason

    def add_listener(self, listener: OnAbort) -> None:
        """Call ``listener()`` once when the signal aborts (at once if it already has).

        Listeners run synchronously inside ``abort()`` and must not raise; an exception from one is
        reported through the loop's exception handler and does not stop the others.
        """
        if self._aborted:
            _call(listener)
        else:
            self._listeners.append(listener)

    def remove_listener(self, listener: OnAbort) -> None:
        with suppress(ValueError):
            self._listeners.remove(listener)

    async def wait(self) -> None:
        """Return once the signal has aborted."""
        if self._aborted:
            return
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._waiter)

    def _fire(self, reason: object) -> None:
        if self._aborted:
            return
        self._aborted = True
        self._reason = reason
        listeners, self._listeners = self._listeners, []
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        for listener in listeners:
            _call(listener)

    def __repr__(self) -> str:
        return f"AbortSignal(aborted={self._aborted})"


class AbortController:
    """Owns an :class:`AbortSignal`. Make a new one per run: a signal never un-aborts.

    ``deadline`` only describes a timer the owner arms itself (a child signal for one tool call passes the
    earliest of its own timeout and its parent's deadline); the controller arms nothing.
    """

    __slots__ = ("signal",)

    def __init__(self, deadline: Deadline | None = None) -> None:
        self.signal = AbortSignal(deadline)

    def abort(self, reason: object = "aborted") -> None:
        """Abort the signal. Idempotent: later calls do nothing and keep the first reason."""
        self.signal._fire(reason)


def _call(listener: OnAbort) -> None:
    try:
        listener()
    except Exception as exc:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            _log.exception("AbortSignal listener %r raised", listener)
            return
        loop.call_exception_handler({"message": "AbortSignal listener raised", "exception": exc, "listener": listener})


@contextmanager
def abort_scope(signal: AbortSignal | None) -> Iterator[anyio.CancelScope]:
    """A cancel scope cancelled when ``signal`` aborts (or at once, if it already has).

    Use it around awaits that must stop promptly; afterwards ``scope.cancelled_caught`` tells whether the
    abort interrupted the block. Must be entered and exited in the same task.
    """
    with anyio.CancelScope() as scope:
        if signal is None:
            yield scope
            return
        signal.add_listener(scope.cancel)
        try:
            yield scope
        finally:
            signal.remove_listener(scope.cancel)


async def abortable_sleep(seconds: float, signal: AbortSignal | None) -> bool:
    """Sleep up to ``seconds``; return ``False`` early if ``signal`` aborts, else ``True``."""
    if signal is not None and signal.aborted:
        return False
    loop = asyncio.get_running_loop()
    done: asyncio.Future[bool] = loop.create_future()

    def finish(value: bool) -> None:
        if not done.done():
            done.set_result(value)

    handle = loop.call_later(max(0.0, seconds), finish, True)

    def on_abort() -> None:
        finish(False)

    if signal is not None:
        signal.add_listener(on_abort)
    try:
        return await done
    finally:
        handle.cancel()
        if signal is not None:
            signal.remove_listener(on_abort)
