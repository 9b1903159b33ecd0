"""An MCP server's configuration, as ``%pi mcp add``, ``configure(mcp_servers=...)`` and an ``mcpServers`` file give it.

The file shape is the one Claude Desktop, Cursor, Claude Code (``.mcp.json``) and VS Code (``servers``) write::

    {"mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"]},
        "git": {"command": "mcp-server-git", "args": ["--repository", "."], "env": {"GIT_TOKEN": "${GIT_TOKEN}"}},
        "docs": {"type": "http", "url": "https://mcp.example.com/mcp",
                 "headers": {"Authorization": "Bearer ${DOCS_KEY}"}}
    }}

Read per server: ``command``, ``args``, ``env``, ``cwd`` (a stdio server), or ``url`` and ``headers`` (a streamable
HTTP server; ``type`` ``"http"`` or ``"streamable-http"``, ``"stdio"`` for the other; ``"sse"``, the old transport, is
refused), ``timeout`` (one tool call, in ms, as Gemini CLI's; default: the setting ``timeouts.mcp_call_ms``),
``startupTimeout`` (start and ``initialize``, in ms; default 30 s) and ``disabled`` (``true``: left out). Other keys
(``autoApprove``, ``alwaysAllow``, ...) are other clients' and are ignored: approval is this package's (``_mcp_tool``).

Values in ``env``, ``headers``, ``args``, ``url`` and ``cwd`` may name the kernel's environment variables as
``${VAR}``, ``${VAR:-default}`` (Claude Code's) or ``${env:VAR}`` (VS Code's), read when the server starts: so a key
need not be written into a notebook or a file. A variable that is not set (and has no default) is an error naming it.

Names: a server is named by letters and digits, with single ``-`` or ``_`` between them, at most 32 characters (so the
agent's tool names, ``mcp__<server>__<tool>``, stay readable and unambiguous; see :func:`agent_tool_name`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..ai import UserError, header_secrets, is_secret_name

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_CONFIG",
    "DEFAULT_STARTUP_TIMEOUT_MS",
    "TOOL_PREFIX",
    "McpConfigError",
    "ServerConfig",
    "agent_tool_name",
    "config_path",
    "is_mcp_tool",
    "read_config_file",
    "server_configs",
    "servers_from_json",
]

TOOL_PREFIX = "mcp__"
DEFAULT_STARTUP_TIMEOUT_MS = 30_000
DEFAULT_CONFIG = "~/.pi_notebook/mcp.json"
CONFIG_ENV = "PI_NOTEBOOK_MCP_CONFIG"
"""Names the ``mcpServers`` file read when the extension loads (``none``: no file); default :data:`DEFAULT_CONFIG`."""
_NAME = re.compile(r"[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*")
_MAX_NAME = 32
_MAX_TOOL_NAME = 64  # what OpenAI, Anthropic and Gemini all accept
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_VARIABLE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class McpConfigError(UserError, ValueError):
    """An MCP server's configuration is wrong (the message names the server and what): a bad name, a missing
    command or URL, an unset ``${VAR}``, a file that is not in the ``mcpServers`` shape."""


@dataclass(frozen=True)
class ServerConfig:
    """How to start (``command``) or reach (``url``) one MCP server; see the module docstring."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables added to the server's environment (values may hold ``${VAR}``); see ``_connection`` for the rest
    of its environment."""
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_ms: int | None = None
    """One tool call; ``None``: the session's ``timeouts.mcp_call_ms``."""
    startup_timeout_ms: int = DEFAULT_STARTUP_TIMEOUT_MS

    def __post_init__(self) -> None:
        check_name(self.name)
        if (self.command is None) == (self.url is None):
            raise McpConfigError(f"MCP server {self.name!r}: give either a command (stdio) or a url (HTTP)")
        if self.command is not None and not self.command.strip():
            raise McpConfigError(f"MCP server {self.name!r}: the command is empty")
        if self.url is not None and not re.match(r"https?://", self.url.strip(), re.IGNORECASE):
            raise McpConfigError(f"MCP server {self.name!r}: the url must start with http:// or https://")
        for value, what in ((self.timeout_ms, "timeout"), (self.startup_timeout_ms, "startupTimeout")):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise McpConfigError(f"MCP server {self.name!r}: {what} must be a positive number of ms")

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    def target(self, environ: Mapping[str, str] | None = None) -> str:
        """The command line (as a shell reads it) or the URL, with ``${VAR}`` expanded when ``environ`` is given: what
        the site policy's ``[mcp] allow`` is matched against."""
        expand = (lambda text: expand_variables(text, environ, self.name)) if environ is not None else str
        if self.command is not None:
            return shlex.join([expand(self.command), *(expand(arg) for arg in self.args)])
        return expand(self.url or "")

    def describe(self) -> str:
        """One line for people, with no secret in it: the command line or URL as configured (``${VAR}`` unexpanded),
        the names of the variables and headers it is given (not their values), the timeouts set."""
        parts = [self.target() if self.command is not None else f"{self.url}"]
        if self.env:
            parts.append("env " + ", ".join(sorted(self.env)))
        if self.headers:
            parts.append("headers " + ", ".join(sorted(self.headers)))
        if self.cwd:
            parts.append(f"cwd {self.cwd}")
        if self.timeout_ms is not None:
            parts.append(f"timeout {self.timeout_ms} ms")
        return "; ".join(parts)

    def resolved(self, environ: Mapping[str, str] | None = None) -> ServerConfig:
        """This configuration with every ``${VAR}`` read from ``environ`` (default: the kernel's environment now).
        Raises :class:`McpConfigError` naming an unset variable."""
        source = os.environ if environ is None else environ

        def expand(text: str) -> str:
            return expand_variables(text, source, self.name)

        return replace(
            self,
            command=expand(self.command) if self.command is not None else None,
            args=tuple(expand(arg) for arg in self.args),
            env={name: expand(value) for name, value in self.env.items()},
            cwd=expand(self.cwd) if self.cwd is not None else None,
            url=expand(self.url) if self.url is not None else None,
            headers={name: expand(value) for name, value in self.headers.items()},
        )

    def secrets(self) -> list[str]:
        """The secret values of a :meth:`resolved` configuration, redacted like every key (``ai._secret``'s rule):
        each ``env`` value whose name says key/token/secret/password, each credential header's value (``Authorization``:
        its token too). A value read from ``${VAR}`` is redacted anyway when ``VAR``'s name says so (a session redacts
        every such variable of the kernel's environment)."""
        found = [value for name, value in self.env.items() if is_secret_name(name)]
        return found + header_secrets(self.headers)

    def to_json(self) -> dict[str, Any]:
        """This server in the ``mcpServers`` shape (``${VAR}`` kept as written)."""
        data: dict[str, Any] = {"command": self.command, "args": list(self.args)} if self.command else {}
        if self.url is not None:
            data = {"type": "http", "url": self.url}
        for key, value in (("env", dict(self.env)), ("headers", dict(self.headers)), ("cwd", self.cwd)):
            if value:
                data[key] = value
        if self.timeout_ms is not None:
            data["timeout"] = self.timeout_ms
        if self.startup_timeout_ms != DEFAULT_STARTUP_TIMEOUT_MS:
            data["startupTimeout"] = self.startup_timeout_ms
        return data


def check_name(name: object) -> str:
    if not isinstance(name, str) or len(name) > _MAX_NAME or not _NAME.fullmatch(name):
        raise McpConfigError(
            f"bad MCP server name {name!r}: letters and digits, with single '-' or '_' between them, at most "
            f"{_MAX_NAME} characters"
        )
    return name


def expand_variables(text: str, environ: Mapping[str, str], server: str) -> str:
    """``text`` with each ``${VAR}``, ``${VAR:-default}`` or ``${env:VAR}`` replaced by the variable's value."""

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = environ.get(name)
        if found is not None and (found or default is None):
            return found
        if default is not None:
            return default
        raise McpConfigError(
            f"MCP server {server!r}: the environment variable {name} is not set (named as ${{{name}}})"
        )

    return _VARIABLE.sub(value, text)


def agent_tool_name(server: str, tool: str) -> str:
    """The agent's name for the tool ``tool`` of the server ``server``: ``mcp__<server>__<tool>``, each character
    other than letters, digits, ``_`` and ``-`` replaced by ``_``; a name longer than 64 characters (the models' limit)
    keeps its first 55 and ends with ``_`` and 8 hexadecimal digits of a hash of the whole."""
    name = _UNSAFE.sub("_", f"{TOOL_PREFIX}{server}__{tool}")
    if len(name) <= _MAX_TOOL_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: _MAX_TOOL_NAME - 9]}_{digest}"


def is_mcp_tool(name: str) -> bool:
    """Whether a tool of this name is an MCP server's (the :data:`TOOL_PREFIX` is theirs: do not name yours so)."""
    return name.startswith(TOOL_PREFIX)


def servers_from_json(data: object, *, source: str = "mcp_servers") -> list[ServerConfig]:
    """The servers of an ``mcpServers`` document: ``{"mcpServers": {NAME: {...}}}``, VS Code's ``{"servers": ...}``,
    or the inner mapping itself. Servers with ``"disabled": true`` are left out. Raises :class:`McpConfigError`."""
    if not isinstance(data, Mapping):
        raise McpConfigError(f"{source}: expected a JSON object of servers")
    inner = data.get("mcpServers", data.get("servers", data))
    if not isinstance(inner, Mapping):
        raise McpConfigError(f"{source}: mcpServers must be an object (server name -> its command or url)")
    return [_server(name, entry, source) for name, entry in inner.items() if not _disabled(entry)]


def _disabled(entry: object) -> bool:
    return isinstance(entry, Mapping) and entry.get("disabled") is True


def _server(name: str, entry: object, source: str) -> ServerConfig:
    where = f"{source}: server {name!r}"
    if not isinstance(entry, Mapping):
        raise McpConfigError(f"{where} must be an object")
    kind = entry.get("type", entry.get("transport", "stdio" if "command" in entry else "http"))
    if kind == "sse":
        raise McpConfigError(f"{where}: the SSE transport is not supported (use its streamable HTTP endpoint)")
    if kind not in ("stdio", "http", "streamable-http", "streamableHttp"):
        raise McpConfigError(f"{where}: unknown type {kind!r} (stdio or http)")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise McpConfigError(f"{where}: args must be a list of strings")
    return ServerConfig(
        name,
        command=_text(entry, "command", where) if kind == "stdio" else None,
        args=tuple(args),
        env=_strings(entry.get("env", {}), f"{where}: env"),
        cwd=_text(entry, "cwd", where, required=False),
        url=_text(entry, "url", where) if kind != "stdio" else None,
        headers=_strings(entry.get("headers", {}), f"{where}: headers"),
        timeout_ms=_ms(entry.get("timeout"), f"{where}: timeout"),
        startup_timeout_ms=_ms(entry.get("startupTimeout"), f"{where}: startupTimeout") or DEFAULT_STARTUP_TIMEOUT_MS,
    )


def _text(entry: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    value = entry.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise McpConfigError(f"{where}: {key} must be a non-empty string")
    return value


def _strings(value: object, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise McpConfigError(f"{where} must map names to strings")
    return dict(value)


def _ms(value: object, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise McpConfigError(f"{where} must be a positive number of milliseconds")
    return int(value)


def config_path(environ: Mapping[str, str] | None = None) -> Path | None:
    """The ``mcpServers`` file the extension reads when it loads: ``$PI_NOTEBOOK_MCP_CONFIG``, else
    ``~/.pi_notebook/mcp.json``; ``None`` when the variable says ``none``."""
    named = (os.environ if environ is None else environ).get(CONFIG_ENV, "").strip()
    if named.lower() in ("none", "off"):
        return None
    return Path(named or DEFAULT_CONFIG).expanduser()


def read_config_file(path: Path) -> list[ServerConfig]:
    """The servers of the ``mcpServers`` file at ``path`` (none when it does not exist). Raises
    :class:`McpConfigError` for a file that cannot be read or is not in the shape."""
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise McpConfigError(f"cannot read the MCP servers file {path}: {exc}") from None
    return servers_from_json(data, source=str(path))


def unique(configs: Iterable[ServerConfig]) -> list[ServerConfig]:
    """``configs`` with each name once (raises :class:`McpConfigError` for a name given twice)."""
    seen: dict[str, ServerConfig] = {}
    for config in configs:
        if config.name in seen:
            raise McpConfigError(f"MCP server {config.name!r} is named twice")
        seen[config.name] = config
    return list(seen.values())


def server_configs(value: object) -> list[ServerConfig]:
    """``configure(mcp_servers=...)``'s value as configurations: the ``mcpServers`` shape (a dict, with or without the
    outer key) or :class:`ServerConfig` objects. Raises :class:`McpConfigError`."""
    if isinstance(value, list | tuple) and all(isinstance(item, ServerConfig) for item in value):
        return unique(value)
    if isinstance(value, Mapping):
        return unique(servers_from_json(value))
    raise McpConfigError("mcp_servers takes the mcpServers shape ({'name': {'command': ...}}) or ServerConfig objects")
