"""One MCP server's connection, on the official SDK (``mcp``: ``stdio_client`` / ``streamable_http_client`` and
``ClientSession``), owned by a task on the kernel's event loop.

Starting never blocks: :meth:`Connection.start` creates the owner task and returns; the task spawns the server (or
opens the HTTP transport), runs ``initialize`` and lists the tools within the server's ``startupTimeout``, and then
holds the connection until :meth:`Connection.stop`. A server that cannot start, exits, or does not answer
``initialize`` in time ends ``failed``, with one line saying what happened and the last lines it wrote to stderr.

Calls (:meth:`Connection.call`) run in tasks of their own, so a Stop never waits for the server: when the caller's
signal aborts, the call's cancel scope is cancelled (the SDK then sends the server ``notifications/cancelled``, from
the call's task) and :class:`McpCallAborted` is raised at once, whether or not the server ever answers or stops.

A stdio server runs in a process group of its own (the SDK starts it so) and carries
``PI_NOTEBOOK_BASH_RUN=<token>`` in its environment, by which the bash tool's watchdog (``tools._lifeline``) finds it
and everything it started: so the server's tree dies with the kernel however the kernel dies (SIGKILL too), and at
:meth:`Connection.stop` (``%pi mcp remove``) it is killed as ``bash`` kills a command (SIGTERM to the group and every
descendant, SIGKILL after :data:`KILL_GRACE_S`). Its environment is the kernel's without the variables that hold keys
(``ai._secret_env``: the provider variables and every variable whose name says key/token/secret/password), plus the
``env`` it is given: a server gets a model key only when it is named there.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import secrets
import time
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeAlias

import anyio
import httpx2
import mcp_types as types
import psutil
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from pydantic import ValidationError

from ..ai import HELD_SECRETS, AbortSignal, PiNotebookError, abort_scope, known_secrets, scrub_secrets, secret_variables
from ..tools import LIFELINE, MARKER_ENV, ProcessTree, spawn_mark
from ._server_config import McpConfigError, ServerConfig
from ._stderr_tail import StderrTail

__all__ = ["KILL_GRACE_S", "Connection", "McpCallAborted", "McpCallError", "ServerState"]

ServerState: TypeAlias = Literal["starting", "ready", "failed", "stopped", "replay"]
"""``starting`` (spawned or connecting, not through ``initialize`` yet), ``ready`` (its tools are offered), ``failed``
(could not start, exited, or did not answer: :attr:`Connection.error` says which), ``stopped`` (removed), ``replay``
(not started: cassettes replay only, ``PI_NOTEBOOK_CASSETTE_MODE=none``; its tools and results come from them)."""

KILL_GRACE_S = 0.5
"""Between SIGTERM and SIGKILL when a server is stopped or the kernel dies."""
LEADER_WAIT_S = 2.0
"""How long a new stdio server's process is looked for by its marker (``_leader``): a server whose program drops
the environment it was given (``env -i ...``) is never found, and its process is not tracked then."""
CLIENT_INFO = types.Implementation(name="pi-notebook", version="0.1.0")
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's own defaults for its transports


class McpCallError(PiNotebookError):
    """An MCP call could not be made or did not complete: the server is not ready, failed, closed the connection,
    answered with a protocol error, or returned a result that does not parse. The text says which, naming the
    server."""


class McpCallAborted(McpCallError):
    """The call's signal aborted (Stop, a timeout): the server was sent ``notifications/cancelled`` and not waited
    for."""


logging.getLogger("mcp").addHandler(logging.NullHandler())  # the SDK's own logs: not printed into the notebook's cells
_live: weakref.WeakSet[Connection] = weakref.WeakSet()


@atexit.register
def _kill_at_exit() -> None:
    for connection in list(_live):
        connection.kill_now()


class Connection:
    """One configured server and its connection (see the module docstring). Use it on the event loop's thread."""

    def __init__(self, config: ServerConfig, *, replay_only: bool = False) -> None:
        self.config = config
        self.state: ServerState = "replay" if replay_only else "starting"
        self.error: str | None = None
        self.tools: tuple[types.Tool, ...] = ()
        self.server_info = ""
        self.instructions: str | None = None
        self.started_at = time.monotonic()
        self.ready_after_s: float | None = None
        self.pid: int | None = None
        self._session: ClientSession | None = None
        self._settled = asyncio.Event()
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None
        self._tree: ProcessTree | None = None
        self._token = secrets.token_hex(8)
        self._stderr = StderrTail()
        self._calls: set[asyncio.Task[None]] = set()
        if replay_only:
            self._settled.set()

    # -- life -------------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the owner task on the running loop (returns at once)."""
        if self.state == "replay" or self._task is not None:
            return
        self.started_at = time.monotonic()
        self._task = asyncio.get_running_loop().create_task(self._serve(), name=f"mcp server {self.config.name}")
        _live.add(self)

    async def wait_settled(self, timeout_s: float | None, signal: AbortSignal | None = None) -> bool:
        """Wait until the server is ready or failed, at most ``timeout_s`` (``None``: its start's own bound), or until
        ``signal`` aborts. True when it settled."""
        with abort_scope(signal), anyio.move_on_after(timeout_s):
            await self._settled.wait()
        return self._settled.is_set()

    async def stop(self) -> None:
        """Stop the server: kill its process tree (a stdio server), close the connection, end every call. Idempotent."""
        if self.state == "stopped":
            return
        self.state = "stopped"
        self._stopping.set()
        if self._tree is not None:
            await self._tree.kill(KILL_GRACE_S)
        for call in list(self._calls):
            call.cancel()
        if self._scope is not None:
            self._scope.cancel()
        if self._task is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await asyncio.wait({self._task})
        self._settled.set()

    def kill_now(self) -> None:
        """SIGKILL the server's tree at once (interpreter exit)."""
        if self._tree is not None:
            self._tree.kill_now()

    @property
    def alive(self) -> bool:
        """Whether the server can take calls now (a stdio server's process is checked, so one that died while idle is
        seen as failed)."""
        if self.state != "ready":
            return False
        if self._tree is not None and self.pid is not None and not _running(self.pid):
            self._fail("its process exited")
            return False
        return True

    async def _serve(self) -> None:
        try:
            with anyio.CancelScope() as self._scope:
                resolved = self.config.resolved()  # ${VAR} read now; an unset one fails the start, naming it
                HELD_SECRETS.hold(f"mcp server {self.config.name}", resolved.secrets())
                async with contextlib.AsyncExitStack() as stack:
                    read, write = await stack.enter_async_context(self._transport(resolved))
                    session = await stack.enter_async_context(ClientSession(read, write, client_info=CLIENT_INFO))
                    try:
                        await self._initialize(session)
                    except Exception as exc:
                        why = self._describe_failure(exc)
                        if self._tree is not None:
                            await self._tree.kill(KILL_GRACE_S)
                        self._fail(why)  # said now, not after the transport's bounded shutdown (seconds)
                        return
                    await self._stopping.wait()
        except Exception as exc:
            self._fail(self._describe_failure(exc))
        finally:
            self._session = None
            LIFELINE.done(self._token)
            self._stderr.close()
            self._settled.set()
            if self.state in ("starting", "ready"):
                self._fail(f"the connection ended{self._exited()}")

    async def _initialize(self, session: ClientSession) -> None:
        limit = self.config.startup_timeout_ms / 1000
        try:
            with anyio.fail_after(limit):
                result = await session.initialize()
                tools = await _list_tools(session)
        except TimeoutError:
            raise McpCallError(f"it did not answer initialize within {limit:g} s") from None
        info = result.server_info
        self.server_info = f"{info.name} {info.version}".strip() if info is not None else ""
        self.instructions = result.instructions
        self.tools = tuple(tools)
        self._session = session
        self.ready_after_s = time.monotonic() - self.started_at
        if self.state == "starting":
            self.state = "ready"
        self._settled.set()

    @asynccontextmanager
    async def _transport(self, config: ServerConfig) -> AsyncIterator[Any]:
        if config.command is None:
            headers = dict(config.headers)
            async with (
                httpx2.AsyncClient(headers=headers, timeout=HTTP_TIMEOUT) as client,
                streamable_http_client(config.url or "", http_client=client) as streams,
            ):
                yield streams
            return
        params = StdioServerParameters(
            command=config.command,
            args=list(config.args),
            env=server_environment(config.env) | {MARKER_ENV: self._token},
            cwd=config.cwd,
        )
        mark = spawn_mark()
        LIFELINE.track(self._token, mark, KILL_GRACE_S)
        async with stdio_client(params, errlog=self._stderr.writer()) as streams:
            self._stderr.started()
            self.pid = await _leader(self._token)
            if self.pid is not None:
                self._tree = ProcessTree(self.pid, self._token, mark)
                LIFELINE.group(self._token, self.pid)
            yield streams

    # -- calls ------------------------------------------------------------------------------------------------
    async def call(
        self, tool: str, arguments: dict[str, Any], *, signal: AbortSignal, on_progress: ProgressFnT | None = None
    ) -> types.CallToolResult:
        """Call ``tool``; raises :class:`McpCallAborted` at once when ``signal`` aborts, :class:`McpCallError` when
        the call cannot complete (see the module docstring)."""
        session = self._session
        if session is None or not self.alive:
            raise McpCallError(f"MCP server {self.config.name!r} is {self.describe_state()}")
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[types.CallToolResult] = loop.create_future()
        scopes: list[anyio.CancelScope] = []
        task = loop.create_task(self._run_call(session, tool, arguments, on_progress, outcome, scopes))
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)
        result: types.CallToolResult | None = None
        try:
            with abort_scope(signal):
                result = await outcome
        finally:
            for scope in scopes:
                scope.cancel()  # after an answer: nothing left to cancel; after a Stop: notifications/cancelled
        if result is None or signal.aborted:
            raise McpCallAborted(
                f"Operation aborted: the call of {tool} was stopped (MCP server {self.config.name!r} is sent "
                "notifications/cancelled if it had received it)"
            )
        return result

    async def _run_call(
        self,
        session: ClientSession,
        tool: str,
        arguments: dict[str, Any],
        on_progress: ProgressFnT | None,
        outcome: asyncio.Future[types.CallToolResult],
        scopes: list[anyio.CancelScope],
    ) -> None:
        try:
            with anyio.CancelScope() as scope:
                scopes.append(scope)
                try:
                    result = await session.call_tool(tool, arguments, progress_callback=on_progress)
                except Exception as exc:
                    if not outcome.done():
                        outcome.set_exception(self._call_error(tool, exc))
                    return
                if not outcome.done():
                    outcome.set_result(result)
        finally:
            if not outcome.done():  # the server was stopped (%pi mcp remove) during the call
                outcome.set_exception(McpCallError(f"MCP server {self.config.name!r} was stopped during the call"))

    def _call_error(self, tool: str, exc: Exception) -> McpCallError:
        """The one place the SDK's exceptions become ours."""
        name = self.config.name
        if self.state == "stopped":
            return McpCallError(f"MCP server {name!r} was stopped during the call")
        if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
            self._fail(f"it closed the connection during a call of {tool}{self._exited()}")
            return McpCallError(f"MCP server {name!r} closed the connection during the call{self._exited()}")
        if isinstance(exc, MCPError):
            return McpCallError(f"MCP server {name!r} answered {tool} with an error ({exc.code}): {exc.message}")
        if isinstance(exc, ValidationError):
            return McpCallError(f"MCP server {name!r} returned a result for {tool} that is not valid MCP: {exc}")
        return McpCallError(f"MCP server {name!r}: the call of {tool} failed ({type(exc).__name__}: {exc})")

    # -- describing -------------------------------------------------------------------------------------------
    def describe_state(self) -> str:
        """``ready``, ``starting``, ``failed: <why>``, ``stopped`` or ``replay (...)``, for people."""
        if self.state == "failed":
            return f"failed: {self.error}"
        if self.state == "replay":
            return "not started (cassettes replay only: PI_NOTEBOOK_CASSETTE_MODE=none)"
        return self.state

    def _fail(self, why: str) -> None:
        if self.state in ("stopped", "failed"):
            return
        tail = scrub_secrets(self._stderr.tail(), known_secrets().values)  # a server may log what it was given
        self.state = "failed"
        self.error = why + (f"; its stderr ended: {tail}" if tail else "")
        self._session = None
        self._settled.set()

    def _describe_failure(self, exc: Exception) -> str:
        while isinstance(exc, ExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        if isinstance(exc, McpCallError | McpConfigError):
            return str(exc)
        if isinstance(exc, OSError) and self.config.command is not None:
            return f"it could not be started ({exc.strerror or exc}: {self.config.command})"
        if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
            return f"it closed the connection before it was ready{self._exited()}"
        if isinstance(exc, httpx2.HTTPError):
            return f"it could not be reached ({type(exc).__name__}: {exc})"
        text = str(exc) or type(exc).__name__
        return f"it failed to start ({type(exc).__name__}: {text})"

    def _exited(self) -> str:
        return " (its process exited)" if self.pid is not None and not _running(self.pid) else ""


def server_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """A stdio server's environment: the kernel's without the variables that hold keys, plus ``extra``."""
    hidden = secret_variables()
    return {name: value for name, value in os.environ.items() if name not in hidden} | dict(extra)


async def _list_tools(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


async def _leader(token: str) -> int | None:
    """The pid of the child process that carries ``token`` (the server just spawned), looked for until
    :data:`LEADER_WAIT_S` has passed: the spawn returns once the child has begun its ``exec``, and Linux shows the
    new program's environment (``/proc/PID/environ``) only a moment later, so a busy machine can read it empty."""
    deadline = time.monotonic() + LEADER_WAIT_S
    while (pid := _carrying(token)) is None and time.monotonic() < deadline:  # noqa: ASYNC110 - /proc has no event
        await anyio.sleep(0.01)
    return pid


def _carrying(token: str) -> int | None:
    needle = f"{MARKER_ENV}={token}"
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error, OSError):
            environ = child.environ()
            if f"{MARKER_ENV}={environ.get(MARKER_ENV)}" == needle:
                return child.pid
    return None


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
