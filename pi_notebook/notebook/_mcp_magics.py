"""``%pi mcp``: the kernel's MCP servers (``pi_notebook.mcp``).

    %pi mcp add NAME [--env VAR=VALUE | --env VAR]... [--cwd DIR] [--timeout-ms N] -- COMMAND [ARG...]
    %pi mcp add NAME URL [--header "Name: value"]... [--timeout-ms N]
    %pi mcp list | tools NAME | remove NAME | restart NAME

``add`` starts a stdio server (after ``--``) or connects a streamable HTTP one (a URL) and returns at once; the line is
awaited (``_magics.pi_transformer``), so the cell shows when the server is ready, or why it is not, within its start
timeout (an interrupt stops the wait, not the server); ``--startup-timeout-ms N`` sets that timeout (default 30 s).
``--env VAR`` passes the kernel's ``VAR`` to the server; a
value may name variables as ``${VAR}``. A key written literally into a cell would be saved with the notebook, so a
credential header or a variable whose name says key/token/secret/password must take its value from ``${VAR}`` here
(``configure(mcp_servers=...)`` takes any value).

What these lines print depends on the machine (how long a server took, whether it runs or cassettes replay), so a
check of the saved notebook leaves it out (``_volatile``), as the ``%pi cassette`` line. What a server wrote in it (its
tools' names and descriptions, its stderr) is shown with hidden characters marked (``_visible``).
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
from collections.abc import Awaitable, Coroutine
from typing import Any, NoReturn

from ..ai import is_secret_name
from ..mcp import DEFAULT_STARTUP_TIMEOUT_MS, Connection, McpServers, ServerConfig, agent_tool_name
from ._commands import PiCommand, UsageError
from ._mcp_link import sync_mcp_tools
from ._registry import SessionRegistry
from ._visible import visible_text
from ._volatile import show_volatile

__all__ = ["Pending", "describe_servers", "describe_tools", "mcp_command"]

_VERBS = ("add", "list", "tools", "remove", "restart")


def _show(text: str) -> None:
    """Show a line; a server's own words in it (names, descriptions, stderr) can hide nothing (``_visible``)."""
    show_volatile(visible_text(text))


class Pending:
    """What ``%pi mcp`` returns: its work already runs as a task; awaiting this waits for it and shows its line.
    Interrupting the wait leaves the work running."""

    def __init__(self, work: Coroutine[Any, Any, str] | None = None, *, what: str = "") -> None:
        self._task = asyncio.get_running_loop().create_task(work) if work is not None else None
        self._what = what

    def __await__(self) -> Any:
        return self._wait().__await__()

    async def _wait(self) -> None:
        if self._task is None:
            return
        try:
            line = await asyncio.shield(self._task)
        except asyncio.CancelledError:
            _show(f"pi: stopped waiting; {self._what} goes on (%pi mcp list shows its state)")
            raise
        _show(line)

    def __repr__(self) -> str:
        return f"<pi: {self._what}; await it to see the outcome>" if self._task is not None else "<pi: done>"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"mcp add: {message}")


def _add_parser() -> _Parser:
    parser = _Parser(prog="%pi mcp add", add_help=False)
    parser.add_argument("name")
    parser.add_argument("url", nargs="?")
    parser.add_argument("--env", action="append", default=[], metavar="VAR[=VALUE]")
    parser.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'")
    parser.add_argument("--cwd")
    parser.add_argument("--timeout-ms", type=int)
    parser.add_argument("--startup-timeout-ms", type=int)
    return parser


_ADD = _add_parser()


def mcp_command(registry: SessionRegistry, command: PiCommand) -> Pending:
    """Run one ``%pi mcp`` line (see the module docstring). Raises :class:`UsageError` for a bad line and a
    ``ValueError``/``RuntimeError`` (one line) for one that cannot be done."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            "%pi mcp needs a Jupyter kernel: MCP servers live on the kernel's running event loop"
        ) from None
    try:
        words = shlex.split(command.text, comments=True)  # a trailing "# ..." is a comment, as in a shell
    except ValueError as exc:
        raise UsageError(f"mcp: {exc}") from None
    if not words or words[0] not in _VERBS:
        raise UsageError(f"mcp takes {', '.join(_VERBS)}")
    verb, rest = words[0], words[1:]
    servers = registry.mcp
    if verb == "add":
        return _add(registry, _config(rest))
    if verb == "list":
        if rest:
            raise UsageError("mcp list takes no arguments")
        _show(describe_servers(servers))
        return Pending()
    name = _one_name(verb, rest)
    connection = servers.get(name)
    if connection is None:
        known = ", ".join(c.config.name for c in servers) or "none"
        raise ValueError(f"no MCP server {name!r} (servers: {known})")
    if verb == "tools":
        _show(describe_tools(registry, connection))
        return Pending()
    if verb == "restart":
        return _add(registry, connection.config)
    stopping = servers.remove(name)
    sync_mcp_tools(registry, servers)
    return Pending(_removed(name, stopping), what=f"stopping MCP server {name}")


def _one_name(verb: str, rest: list[str]) -> str:
    if len(rest) != 1:
        raise UsageError(f"mcp {verb} takes one server NAME")
    return rest[0]


def _add(registry: SessionRegistry, config: ServerConfig) -> Pending:
    connection = registry.mcp.add(config)
    return Pending(_started(registry, connection), what=f"starting MCP server {config.name}")


async def _started(registry: SessionRegistry, connection: Connection) -> str:
    await connection.wait_settled(None)
    sync_mcp_tools(registry, registry.mcp)
    return f"pi: MCP server {connection.config.name}: {_state_line(connection)}"


async def _removed(name: str, stopping: Awaitable[None] | None) -> str:
    if stopping is not None:
        await stopping
    return f"pi: MCP server {name} removed (its processes stopped; its tools are no longer offered)"


def _config(words: list[str]) -> ServerConfig:
    """``%pi mcp add``'s words as a configuration: options before ``--``, the command after it."""
    split = words.index("--") if "--" in words else len(words)
    options, command = words[:split], words[split + 1 :]
    parsed = _ADD.parse_intermixed_args(options)
    if command and parsed.url:
        raise UsageError("mcp add: give a URL or '-- COMMAND', not both")
    if not command and not parsed.url:
        raise UsageError("mcp add NAME -- COMMAND [ARGS...] (stdio) or mcp add NAME URL (streamable HTTP)")
    if parsed.url and (parsed.env or parsed.cwd):
        raise UsageError("mcp add: --env and --cwd are for a server started with '-- COMMAND'")
    if command and parsed.header:
        raise UsageError("mcp add: --header is for an HTTP server (a URL)")
    for value in (parsed.timeout_ms, parsed.startup_timeout_ms):
        if value is not None and value <= 0:
            raise UsageError("mcp add: timeouts are positive numbers of milliseconds")
    return ServerConfig(
        parsed.name,
        command=command[0] if command else None,
        args=tuple(command[1:]),
        env=dict(_env(item) for item in parsed.env),
        cwd=parsed.cwd,
        url=parsed.url,
        headers=dict(_header(item) for item in parsed.header),
        timeout_ms=parsed.timeout_ms,
        startup_timeout_ms=parsed.startup_timeout_ms or DEFAULT_STARTUP_TIMEOUT_MS,
    )


def _env(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not name or not name.replace("_", "a").isalnum():
        raise UsageError(f"mcp add: --env takes VAR or VAR=VALUE, got {item!r}")
    if not sep:
        return name, f"${{{name}}}"
    _no_literal_secret(name, value, f"--env {name}")
    return name, value


def _header(item: str) -> tuple[str, str]:
    name, sep, value = item.partition(":")
    if not sep or not name.strip():
        raise UsageError(f"mcp add: --header takes 'Name: value', got {item!r}")
    _no_literal_secret(name.strip(), value.strip(), f"the header {name.strip()}")
    return name.strip(), value.strip()


def _no_literal_secret(name: str, value: str, what: str) -> None:
    if is_secret_name(name) and "${" not in value:
        raise ValueError(
            f"mcp add: {what} holds a key: write it as ${{VAR}} (an environment variable of the kernel), since a "
            "literal key in a cell is saved with the notebook"
        )


# -- describing ---------------------------------------------------------------------------------------------
def describe_servers(servers: McpServers) -> str:
    """``%pi mcp list``: each server, its state, its tool count and what it runs or reaches (no secret)."""
    if not len(servers):
        return "pi: no MCP servers (%pi mcp add NAME -- COMMAND, or NAME URL)"
    lines = []
    for connection in servers:
        count = f"{len(connection.tools)} tools" if connection.alive else "-"
        lines.append(
            f"{connection.config.name}: {connection.describe_state()}; {count}; {connection.config.describe()}"
        )
    return "\n".join(lines)


def describe_tools(registry: SessionRegistry, connection: Connection) -> str:
    """``%pi mcp tools NAME``: the server's tools as the agent names them, whether each asks, and their first line."""
    name = connection.config.name
    if not connection.alive:
        return f"pi: MCP server {name} is {connection.describe_state()}: no tools to list"
    if not connection.tools:
        return f"pi: MCP server {name} has no tools"
    session = registry.get().session
    lines = []
    for tool in connection.tools:
        agent_name = agent_tool_name(name, tool.name)
        try:
            mode = "off by policy" if session.policy.is_disabled(agent_name) else session.approval_mode(agent_name)
        except KeyError:
            mode = "auto" if tool.annotations is not None and tool.annotations.read_only_hint else "ask"
        summary = (tool.description or tool.title or "").strip().split("\n")[0][:80]
        lines.append(f"{agent_name}  {mode}  {summary}")
    lines.append(f"(read-only tools run without asking; Always answers for every tool of MCP server {name})")
    return "\n".join(lines)


def _state_line(connection: Connection) -> str:
    if connection.state == "ready":
        took = f" in {connection.ready_after_s:.1f} s" if connection.ready_after_s is not None else ""
        server = f" ({connection.server_info})" if connection.server_info else ""
        prefix = agent_tool_name(connection.config.name, "")
        return f"ready{server}{took}, {len(connection.tools)} tools, offered as {prefix}*"
    return connection.describe_state()
