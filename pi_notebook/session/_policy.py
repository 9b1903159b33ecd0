"""A site policy: what an admin fixes for every session in an installation, which users cannot loosen.

Read once per process from ``sys.prefix/etc/pi_notebook/policy.toml``, ``/etc/pi_notebook/policy.toml`` and the file
``PI_NOTEBOOK_POLICY`` names (every one that exists applies: the strictest wins)::

    [tools]
    ask = ["python", "bash"]          # these always ask before they run: no "auto", no "Always for this session"
    disabled = ["write"]              # the agent never gets these tools

    [limits]                          # ceilings: a user may set a lower value, never a higher one, nor none
    "budget.max_cost_usd" = 2.0
    "budget.wall_time_ms" = 3_600_000

    [fixed]                           # settings users cannot change
    "sessions.dir" = "/data/pi-sessions/$JUPYTERHUB_USER"

    [models]
    allow = ["openai:gpt-4o-mini", "anthropic:claude-*"]   # model specs (provider:id), * and ? as in file names
    base_urls = ["https://llm.internal.example/"]           # a model's server: same scheme, host and port, and a
                                                            # path under this one (whole segments)

    [mcp]                             # MCP servers (pi_notebook.mcp) and their tools
    allow = ["mcp-server-time", "uvx mcp-server-git *", "https://mcp.internal.example/"]
                                      # what may be started or reached: a stdio server's command line (program and
                                      # arguments, * and ?), an HTTP server's URL (as base_urls); others are
                                      # refused, and [] allows none
    disabled = ["mcp__*__git_push"]   # MCP tools the agent never gets, by the agent's name mcp__SERVER__TOOL
    ask = ["mcp__*"]                  # MCP tools that always ask, read-only ones too (no "Always")

Without ``base_urls``, an ``allow`` list also fixes where a vendor's model is sent: to its vendor's own server
(``openai:...`` to ``https://api.openai.com/v1``), never to another one a ``--base-url`` names; a
``*-compatible:...`` model names its server in its spec, and an allowed one may be reached wherever it is.

Where it binds: :class:`~pi_notebook.session.AgentSession` takes its settings through :meth:`Policy.enforce` (an
unset limit becomes the ceiling; a looser value raises :class:`PolicyError`), refuses a model or a tool the policy
does not allow, and its approval gate makes the ``ask`` tools ask (a session with nobody to ask does not run them); the
kernel's MCP servers (``pi_notebook.mcp``) are checked against ``[mcp] allow`` before one starts or is reached, and its
tools against ``[mcp] disabled`` and ``ask`` (which are patterns; ``[tools]`` names tools exactly).
Every provider request of the process is checked once more as it leaves (:meth:`Policy.check_request`, added to
``ai/_egress`` when this module is imported): the model and URL actually requested, so a ``stream_fn`` that relays
a faux-labelled model to a real server, or a resumed session's model, cannot send a key where the policy forbids.
The notebook's ``configure()``, ``%pi settings``, ``%pi model`` and ``%pi tools`` go through it and say "locked by
policy". A policy file that cannot be read is an error at every use, never a policy quietly off.

It is not a sandbox: code in the kernel (the user's, or the agent's ``python`` tool) runs as the user and can change
anything in the process, this object included. Tools are named by their names (a tool made under another name is
another tool), ``PI_NOTEBOOK_POLICY`` is read when the first session is made (a user's code that unsets it before
then drops that file; ``/etc/pi_notebook/policy.toml``, owned by root, is the file that binds), and a
``$JUPYTERHUB_USER`` in a fixed ``sessions.dir`` is the variable's value when the folder is used. Hard limits belong
where the user's code cannot reach: the model gateway's budgets and keys, network egress rules.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import sys
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ..ai import Model, UserError, add_request_check
from ..ai.models import provider_base_url
from ..ai.providers.faux import FAUX_API
from ._settings import Settings, SettingsError

__all__ = ["POLICY_ENV", "Policy", "PolicyError", "policy_files", "site_policy"]

POLICY_ENV = "PI_NOTEBOOK_POLICY"
_ZERO_IS_NO_LIMIT = frozenset({"timeouts.http_idle_ms", "timeouts.http_total_ms"})
_SECTIONS = {
    "tools": {"ask", "disabled"},
    "limits": None,
    "fixed": None,
    "models": {"allow", "base_urls"},
    "mcp": {"allow", "disabled", "ask"},
}


class PolicyError(UserError, ValueError):
    """The site policy forbids what was asked (the message names the rule and the file), or cannot be read."""


def policy_files(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Where a site policy is looked for: ``sys.prefix/etc/pi_notebook/policy.toml``, ``/etc/pi_notebook/policy.toml``,
    then ``$PI_NOTEBOOK_POLICY``."""
    paths = [Path(sys.prefix) / "etc" / "pi_notebook" / "policy.toml", Path("/etc/pi_notebook/policy.toml")]
    named = (os.environ if environ is None else environ).get(POLICY_ENV, "").strip()
    return [*paths, Path(named).expanduser()] if named else paths


@dataclass(frozen=True)
class Policy:
    """A site policy (see the module docstring); ``Policy()`` allows everything."""

    sources: tuple[Path, ...] = ()
    ask: frozenset[str] = frozenset()
    disabled: frozenset[str] = frozenset()
    limits: Mapping[str, float] = field(default_factory=dict)
    fixed: Mapping[str, Any] = field(default_factory=dict)
    models: tuple[tuple[str, ...], ...] = ()
    """One tuple of patterns per file that names models: a spec must match one pattern of each."""
    base_urls: tuple[tuple[str, ...], ...] = ()
    mcp_allow: tuple[tuple[str, ...], ...] = ()
    """One tuple of patterns per file that names MCP servers: a server must match one pattern of each."""
    mcp_disabled: frozenset[str] = frozenset()
    mcp_ask: frozenset[str] = frozenset()

    @property
    def active(self) -> bool:
        return bool(self.sources)

    @property
    def where(self) -> str:
        return ", ".join(str(path) for path in self.sources) or "no policy file"

    # -- settings -----------------------------------------------------------------------------------------
    def enforce(self, settings: Settings) -> Settings:
        """``settings`` as the policy makes them: fixed values set, unset limits at their ceiling. Raises
        :class:`PolicyError` for a value looser than the policy allows (a higher limit, another fixed value, ``auto``
        named for a tool that must ask). A blanket ``auto`` (``tools.approval=auto``, or for ``*``) is kept: the
        approval gate still asks for the tools that must ask."""
        if not self.active:
            return settings
        data = settings.model_dump()
        for path, ceiling in self.limits.items():
            value = _get(data, path)
            unlimited = value is None or (value == 0 and path in _ZERO_IS_NO_LIMIT)
            if not unlimited and value > ceiling:
                raise self.error(f"{path} is locked by policy: at most {ceiling:g} (asked for {value:g})")
            if unlimited:
                _set(data, path, ceiling)
        defaults = Settings().model_dump()
        for path, fixed in self.fixed.items():
            value = _get(data, path)
            if value not in (fixed, _get(defaults, path)):  # set by the user, to something else
                raise self.error(f"{path} is locked by policy: {fixed!r} (asked for {value!r})")
            _set(data, path, fixed)
        approval = data["tools"]["approval"]
        for tool in sorted(self.ask):
            if isinstance(approval, Mapping) and approval.get(tool) == "auto":
                raise self.error(f"tools.approval.{tool} is locked by policy: {tool} always asks (asked for auto)")
        return Settings(**data)

    def check_changes(self, changes: Mapping[str, Any], settings: Settings) -> None:
        """Raise :class:`PolicyError` if a ``%pi settings`` change loosens the policy: lifting a limit (``none``),
        changing a fixed value, or what :meth:`enforce` refuses. ``settings``: the settings with the changes made (so
        values are compared as validated: ``none`` and ``2`` mean what the setting makes of them)."""
        data = settings.model_dump()
        for path, _ in _flatten(changes):
            if path in self.limits:
                value = _get(data, path)
                if value is None or (value == 0 and path in _ZERO_IS_NO_LIMIT):
                    raise self.error(f"{path} is locked by policy: at most {self.limits[path]:g} (asked for none)")
            if path in self.fixed and (value := _get(data, path)) != self.fixed[path]:
                raise self.error(f"{path} is locked by policy: {self.fixed[path]!r} (asked for {value!r})")
        self.enforce(settings)

    # -- models and tools ---------------------------------------------------------------------------------
    def check_model(self, model: Model) -> None:
        """Raise :class:`PolicyError` unless the policy allows this model at its ``base_url``
        (:meth:`check_request`). A model of the offline faux API always is: it sends no request (what a
        ``stream_fn`` given with it sends is checked as it leaves)."""
        if model.api == FAUX_API:
            return
        self.check_request(model, model.base_url)

    def check_request(self, model: Model, url: str) -> None:
        """Raise :class:`PolicyError` unless a request of ``model`` may be sent to ``url``: the model is allowed,
        and so is its server (``base_urls``; without them, a vendor's model only goes to its vendor's server when an
        ``allow`` list applies: see the module docstring)."""
        spec = f"{model.provider}:{model.id}"
        for patterns in self.models:
            if not any(fnmatch.fnmatchcase(spec, pattern) for pattern in patterns):
                raise self.error(f"model {spec} is not allowed by policy (allowed: {', '.join(patterns)})")
        self.check_base_url(url)
        own = provider_base_url(model.provider)
        if self.models and not self.base_urls and own is not None and not _under(url, own):
            raise self.error(
                f"base URL {url} is not allowed by policy: {spec} goes to {own} (a [models] base_urls list allows "
                "other servers)"
            )

    def check_base_url(self, url: str) -> None:
        """Raise :class:`PolicyError` unless a server at ``url`` may be sent requests (and keys): the same scheme,
        host and port as an allowed base URL, and a path under its path in whole segments (so
        ``https://api.example.com`` allows neither ``https://api.example.com.evil.example`` nor ``http://...``)."""
        for prefixes in self.base_urls:
            if not any(_under(url, prefix) for prefix in prefixes):
                raise self.error(f"base URL {url} is not allowed by policy (allowed: {', '.join(prefixes)})")

    def check_tools(self, names: Iterable[str]) -> None:
        off = sorted(name for name in set(names) if self.is_disabled(name))
        if off:
            raise self.error(f"{', '.join(off)} {'is' if len(off) == 1 else 'are'} switched off by policy")

    def is_disabled(self, tool: str) -> bool:
        """Whether the agent may not have ``tool``: named in ``[tools] disabled``, or matched by ``[mcp] disabled``."""
        return tool in self.disabled or any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.mcp_disabled)

    def must_ask(self, tool: str) -> bool:
        """Whether every call of ``tool`` asks: named in ``[tools] ask``, or matched by ``[mcp] ask``."""
        return tool in self.ask or any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.mcp_ask)

    def check_mcp_server(self, name: str, target: str, *, url: bool) -> None:
        """Raise :class:`PolicyError` unless ``[mcp] allow`` lets the MCP server ``name`` start (``target``: its
        command line, program and arguments as a shell would read them) or be reached (``url=True``: its URL, under
        an allowed URL as for ``base_urls``; a pattern with ``://`` is a URL, any other a command line)."""
        for patterns in self.mcp_allow:
            if not any(_mcp_allows(pattern, target, url) for pattern in patterns):
                what, allowed = "URL" if url else "command", ", ".join(patterns)
                raise self.error(
                    f"MCP server {name!r}: its {what} {target} is not allowed by policy (allowed: {allowed})"
                )

    def error(self, text: str) -> PolicyError:
        return PolicyError(f"{text} ({self.where})")

    # -- reading ------------------------------------------------------------------------------------------
    @classmethod
    def read(cls, paths: Iterable[Path]) -> Policy:
        """The policy of every file in ``paths`` that exists, merged (the strictest wins). Raises
        :class:`PolicyError` for a file that cannot be read or holds what a policy cannot say."""
        policy = cls()
        for path in paths:
            if path.is_file():
                policy = policy.merged(cls._from_file(path))
        return policy

    @classmethod
    def _from_file(cls, path: Path) -> Policy:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise PolicyError(f"the site policy {path} cannot be read: {exc}") from None
        try:
            return _parse(path, data)
        except (SettingsError, TypeError, ValueError, KeyError) as exc:
            raise PolicyError(f"the site policy {path} is not valid: {exc}") from None

    def merged(self, other: Policy) -> Policy:
        limits = dict(self.limits)
        for path, ceiling in other.limits.items():
            limits[path] = min(ceiling, limits.get(path, ceiling))
        for path, value in other.fixed.items():
            if path in self.fixed and self.fixed[path] != value:
                raise PolicyError(f"the site policy files disagree on {path}: {self.where} and {other.where}")
        return Policy(
            sources=self.sources + other.sources,
            ask=self.ask | other.ask,
            disabled=self.disabled | other.disabled,
            limits=limits,
            fixed={**self.fixed, **other.fixed},
            models=self.models + other.models,
            base_urls=self.base_urls + other.base_urls,
            mcp_allow=self.mcp_allow + other.mcp_allow,
            mcp_disabled=self.mcp_disabled | other.mcp_disabled,
            mcp_ask=self.mcp_ask | other.mcp_ask,
        )


def _parse(path: Path, data: Mapping[str, Any]) -> Policy:
    for section, value in data.items():
        if section not in _SECTIONS or not isinstance(value, dict):
            raise ValueError(f"unknown section [{section}] (known: {', '.join(_SECTIONS)})")
        known = _SECTIONS[section]
        unknown = set(value) - known if known is not None else set()
        if unknown:
            raise ValueError(
                f"unknown key {sorted(unknown)[0]!r} in [{section}] (known: {', '.join(sorted(known or ()))})"
            )
    tools, models, mcp = data.get("tools", {}), data.get("models", {}), data.get("mcp", {})
    limits = dict(_flatten(data.get("limits", {})))
    fixed = dict(_flatten(data.get("fixed", {})))
    defaults = Settings().model_dump()
    for key, ceiling in limits.items():
        current = _get(defaults, key)  # a KeyError names an unknown setting
        if (
            isinstance(ceiling, bool)
            or not isinstance(ceiling, int | float)
            or (current is not None and not isinstance(current, int | float))
        ):
            raise ValueError(f"[limits] {key} must be a number and name a number setting")
    validated = Settings(**_nest({**fixed, **limits})).model_dump()  # every value is a valid setting
    fixed = {key: _get(validated, key) for key in fixed}  # as the setting holds it (2 -> 2.0, "NONE" -> ...)
    return Policy(
        sources=(path,),
        ask=frozenset(_names(tools.get("ask", []), "[tools] ask")),
        disabled=frozenset(_names(tools.get("disabled", []), "[tools] disabled")),
        limits={key: float(value) for key, value in limits.items()},
        fixed=fixed,
        models=(tuple(_names(models["allow"], "[models] allow")),) if "allow" in models else (),
        base_urls=(tuple(_names(models["base_urls"], "[models] base_urls")),) if "base_urls" in models else (),
        mcp_allow=(tuple(_names(mcp["allow"], "[mcp] allow")),) if "allow" in mcp else (),
        mcp_disabled=frozenset(_names(mcp.get("disabled", []), "[mcp] disabled")),
        mcp_ask=frozenset(_names(mcp.get("ask", []), "[mcp] ask")),
    )


def _mcp_allows(pattern: str, target: str, url: bool) -> bool:
    if "://" in pattern:
        return url and _under(target, pattern)
    return not url and fnmatch.fnmatchcase(target, pattern)


def _under(url: str, allowed: str) -> bool:
    try:
        target, base = httpx.URL(url), httpx.URL(allowed)
    except (httpx.InvalidURL, TypeError):
        return False
    if (target.scheme, target.host, target.port) != (base.scheme, base.host, base.port) or not target.host:
        return False
    root = base.path.rstrip("/")
    return not root or target.path == root or target.path.startswith(root + "/")


def _names(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise ValueError(f"{what} must be a list of names")
    return value


def _flatten(data: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and path != "tools.approval":
            yield from _flatten(value, path + ".")
        else:
            yield path, value


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for path, value in flat.items():
        node = nested
        *parents, last = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return nested


def _get(data: Mapping[str, Any], path: str) -> Any:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(f"no setting {path!r}")
        node = node[part]
    return node


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = data
    for part in parents:
        node = node[part]
    node[last] = value


@functools.cache
def site_policy() -> Policy:
    """This process's site policy, read once from :func:`policy_files` (an empty one when no file exists). Raises
    :class:`PolicyError` at every call while a policy file cannot be read."""
    return Policy.read(policy_files())


def _check_request(model: Model, url: str) -> None:
    site_policy().check_request(model, url)


add_request_check(_check_request)  # every provider request, as it leaves (see the module docstring)
