"""The guard around each tool call: its timeout and abort grace, and keys kept out of its output. (The run budget
is ``_budget.py``; the wall-time and turn timers ``_timers.py``.)

Pi leaves these to the host ("cancellation, timeouts and budgets are the host's job"); the session builds
them in. Each knob's docstring in ``Settings`` says what it does not cover.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import replace
from typing import Any, Protocol

import anyio

from ..agent import AgentTool, AgentToolResult
from ..ai import AbortController, AbortSignal, Deadline, PiNotebookError, knowing_secrets
from ._redact import SessionKeys, redact_result, redact_text
from ._settings import TimeoutSettings

__all__ = ["AbortRun", "RunHooks", "ToolTimeoutError", "guard_tool"]


class ToolTimeoutError(PiNotebookError):
    """A tool ran longer than its timeout. Its text becomes the tool's error result: the tool's own error text
    (the output it had so far), if it raised one, then ``Tool <name> timed out after <n> seconds``."""

    def __init__(self, tool_name: str, seconds: float, output: str = "") -> None:
        line = f"Tool {tool_name} timed out after {seconds:g} seconds"
        super().__init__(f"{output}\n\n{line}" if output and line not in output else output or line)
        self.tool_name = tool_name
        self.seconds = seconds


class AbortRun(PiNotebookError):
    """Raised by a tool to abort the whole run, as Stop does (the ``python`` tool raises it when the kernel's
    interrupt ended the agent's code). Under ``AgentSession`` the run settles with ``aborted=True``; the text
    becomes the tool's error result. A bare ``Agent`` only records the error result."""


class RunHooks(Protocol):
    """What the session gives ``guard_tool``: its run deadlines, and a way to abort the run from a tool."""

    def deadlines(self) -> list[Deadline]: ...

    def abort_run(self) -> None: ...


class _Timeout:
    """The abort reason a tool's signal carries when its timeout fires."""

    def __init__(self, error: ToolTimeoutError) -> None:
        self.error = error

    def __str__(self) -> str:
        return str(self.error)


def guard_tool(
    tool: AgentTool, timeouts: TimeoutSettings, keys: Callable[[], list[str]] = list, run: RunHooks | None = None
) -> AgentTool:
    """Wrap ``tool.execute`` with the tool timeout and the abort grace, and keep keys out of its output.

    The tool gets its own signal, aborted when the run aborts or when its timeout (``tool.timeout_ms``, else
    ``timeouts.tool_ms``) expires. If it has not returned ``timeouts.abort_grace_ms`` after that, its await is
    cancelled: a tool that ignores its signal cannot hold a stopped run (Pi would wait for it forever).

    Every key ``keys()`` returns is redacted from the result, from each ``on_update`` snapshot and from the text
    of an exception the tool raises (which then becomes a plain ``RuntimeError``); see ``_redact``. When ``keys``
    is the session's :class:`~._redact.SessionKeys`, the call runs with them as
    :func:`~pi_notebook.ai._keys.known_secrets` (the tools keep those variables out of the code they run).

    The signal's ``deadline`` is the earliest of the tool timeout, the run's deadlines (``run.deadlines()``:
    turn timeout, wall-time budget) and the parent signal's. The timers are asyncio timers: a tool that blocks
    the event loop past its timeout gets the timeout error when it returns, as if the timer had fired. A tool
    raising :class:`AbortRun` aborts the run through ``run.abort_run``.
    """
    inner = _redacting(tool.execute, keys)
    name = tool.name

    async def execute(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> AgentToolResult:
        loop = asyncio.get_running_loop()
        timeout_ms = tool.timeout_ms or timeouts.tool_ms
        timeout = _Timeout(ToolTimeoutError(name, timeout_ms / 1000)) if timeout_ms else None
        own = Deadline(time.monotonic() + timeout_ms / 1000, str(timeout)) if timeout_ms else None
        child = AbortController(Deadline.first(own, *(run.deadlines() if run else ()), signal.deadline))
        grace = timeouts.abort_grace_ms / 1000
        handles: list[asyncio.TimerHandle] = []
        with anyio.CancelScope() as scope:

            def forward() -> None:
                child.abort(signal.reason)

            def start_grace() -> None:
                handles.append(loop.call_later(grace, scope.cancel))

            signal.add_listener(forward)
            child.signal.add_listener(start_grace)
            if timeout_ms:
                handles.append(loop.call_later(timeout_ms / 1000, child.abort, timeout))
            try:
                result = await inner(call_id, args, child.signal, on_update)
            except AbortRun:
                if run is not None:
                    run.abort_run()
                raise
            except Exception as exc:
                if timeout is not None and _timed_out(child.signal, own):
                    raise ToolTimeoutError(name, timeout.error.seconds, str(exc)) from None
                raise
            finally:
                signal.remove_listener(forward)
                for handle in handles:
                    handle.cancel()
        if scope.cancelled_caught:
            why = child.signal.reason
            cause = str(why) if isinstance(why, _Timeout) else "the run was aborted"
            raise RuntimeError(f"Tool {name} did not stop within {timeouts.abort_grace_ms} ms ({cause}); cancelled")
        if timeout is not None and _timed_out(child.signal, own):
            raise timeout.error
        return result

    return replace(tool, execute=execute)


_Execute = Callable[[str, Any, AbortSignal, Any], Awaitable[AgentToolResult]]


def _redacting(inner: _Execute, keys: Callable[[], list[str]]) -> _Execute:
    known = keys.known if isinstance(keys, SessionKeys) else None

    async def execute(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> AgentToolResult:
        def update(partial: AgentToolResult) -> None:
            on_update(redact_result(partial, keys()))

        try:
            with knowing_secrets(known()) if known is not None else nullcontext():
                outcome: object = await inner(call_id, args, signal, update if on_update is not None else None)
        except AbortRun:
            raise
        except Exception as exc:
            text = str(exc)
            redacted = redact_text(text, keys())
            if redacted != text:
                raise RuntimeError(redacted) from None
            raise
        if isinstance(outcome, str):  # the loop accepts text as a result too
            return AgentToolResult(content=redact_text(outcome, keys()))
        if isinstance(outcome, AgentToolResult):
            return redact_result(outcome, keys())
        return outcome  # type: ignore[return-value]  # None or a wrong type: the loop reports it

    return execute


def _timed_out(signal: AbortSignal, own: Deadline | None) -> bool:
    """The tool timeout fired, or is past while the tool blocked the loop (its timer could not fire)."""
    if isinstance(signal.reason, _Timeout):
        return True
    return own is not None and not signal.aborted and time.monotonic() >= own.at
