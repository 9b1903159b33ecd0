"""Session settings with Pi's defaults, loadable from a TOML file and the environment.

    settings = Settings.load("pi_notebook.toml")      # file, then PI_NOTEBOOK_* variables on top
    settings = Settings(retry={"max_retries": 5}, budget={"max_cost_usd": 0.5})

Fields are snake_case; Pi's camelCase spellings (``maxRetries``, ``baseDelayMs``) are accepted too, so a Pi
``settings.json`` section can be pasted in. Environment variables use ``__`` between levels:
``PI_NOTEBOOK_RETRY__MAX_RETRIES=5``. A bad value raises :class:`SettingsError` naming the field.

Every millisecond field is at most :data:`~pi_notebook.ai.retry.MAX_TIMER_MS` (2**31 - 1, about 24.8 days, as Node's
timers), so any valid value can arm a timer; ``max_cost_usd`` must be finite.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from ..ai import CacheRetention, UserError, default_cache_retention
from ..ai.retry import MAX_TIMER_MS, ProviderRetrySettings, RetryPolicy

__all__ = [
    "BudgetSettings",
    "CheckpointSettings",
    "CompactionSettings",
    "ProviderRetrySettings",
    "PythonSettings",
    "RetryPolicy",
    "SessionsSettings",
    "Settings",
    "SettingsError",
    "TimeoutSettings",
    "ToolSettings",
]

ENV_PREFIX = "PI_NOTEBOOK_"
DEFAULT_SESSIONS_DIR = "~/.pi_notebook/sessions"
SESSIONS_DIR_ENV = ENV_PREFIX + "SESSIONS__DIR"


class SettingsError(UserError, ValueError):
    """Raised by ``Settings`` constructors when a value is invalid; the message names each bad field."""


class _Section(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class CompactionSettings(_Section):
    enabled: bool = True
    reserve_tokens: int = Field(16_384, ge=0)
    """Compact when the context exceeds the window minus this many tokens. Also the summary's output budget
    (80%). When it is not below the model's context window (Pi's 16,384 against a 2,048-token server), a quarter
    of the window is used instead."""
    keep_recent_tokens: int = Field(20_000, ge=0)
    """Roughly how much recent conversation is kept verbatim. When it is not below the compaction threshold
    (window minus reserve), half the threshold is used instead, so that compacting frees something."""

    def for_window(self, window: int) -> tuple[int, int]:
        """``(reserve_tokens, keep_recent_tokens)`` as used with a model of ``window`` tokens (0: unknown, the
        settings as they are); see the two fields."""
        reserve, keep = self.reserve_tokens, self.keep_recent_tokens
        if window <= 0:
            return reserve, keep
        if reserve >= window:
            reserve = window // 4
        threshold = window - reserve
        if keep >= threshold:
            keep = threshold // 2
        return reserve, keep


class TimeoutSettings(_Section):
    """Timeouts, each bounding one thing. None of them covers time spent waiting in a queue."""

    tool_ms: int | None = Field(None, gt=0, le=MAX_TIMER_MS)
    """One tool ``execute`` (default for all tools; ``AgentTool.timeout_ms`` overrides per tool). On expiry
    the tool's signal aborts and the call becomes an error result; the run goes on."""
    turn_ms: int | None = Field(None, gt=0, le=MAX_TIMER_MS)
    """One turn: a model request plus its tool batch. On expiry the run is aborted with the reason."""
    http_idle_ms: int | None = Field(300_000, ge=0, le=MAX_TIMER_MS)
    """Longest gap between received bytes of a provider response (0 or None: no limit). Pi's default: long
    enough for a model that thinks before its first token; a server that drips a byte now and then defeats it."""
    http_total_ms: int | None = Field(1_800_000, ge=0, le=MAX_TIMER_MS)
    """Longest time one provider request may take, connect to last byte, however the bytes trickle in (0 or
    None: no limit). On expiry the turn ends with an error that is not retried. The default, 30 minutes, lets a
    reply of about 100k tokens stream at 60 tokens/s; it does not cover tools or retries between requests."""
    mcp_call_ms: int | None = Field(600_000, gt=0, le=MAX_TIMER_MS)
    """One call of an MCP server's tool (``pi_notebook.mcp``), unless the server's own ``timeout`` is set (None: no
    limit). On expiry the server is sent ``notifications/cancelled``, the call becomes an error result at once, and the
    run goes on. It does not cover the server's start (its ``startupTimeout``), the approval wait, nor a tool that is
    not an MCP server's (``tool_ms``); progress notifications do not extend it."""
    abort_grace_ms: int = Field(2000, ge=0, le=MAX_TIMER_MS)
    """After an abort or tool timeout, how long a tool may take to stop before its await is cancelled."""


class BudgetSettings(_Section):
    """Run budget from ``prompt()`` to ``agent_settled``, checked before every provider request and at each
    turn end (wall time also by a timer). A breach aborts the run: ``budget_exceeded`` event, reason in the
    final message. Retries and compaction count against it; waiting for the next prompt does not."""

    wall_time_ms: int | None = Field(None, gt=0, le=MAX_TIMER_MS)
    max_turns: int | None = Field(None, gt=0)
    max_input_tokens: int | None = Field(None, gt=0)
    max_output_tokens: int | None = Field(None, gt=0)
    max_cost_usd: float | None = Field(None, gt=0, allow_inf_nan=False)


ApprovalMode = Literal["ask", "auto"]


class ToolSettings(_Section):
    """How tools are allowed to run (see :mod:`pi_notebook.session._approval_gate`)."""

    approval: ApprovalMode | dict[str, ApprovalMode] = Field(default_factory=dict)
    """``"ask"`` (every tool asks before it runs; those that ask only for some calls, only for those), ``"auto"`` (none
asks) or a map by tool name (a tool not named follows the map's ``"*"`` entry, else its own default,
``AgentTool.approval``: the tools that run code or change files or cells ask, and the tools that only look at
files (``read``, ``ls``, ``grep``, ``find``) ask only for a path outside the working directory or a sensitive
file; ``updated()`` turns a plain value into the ``"*"`` entry when one tool is changed, so ``auto`` then
``bash=ask`` leaves the others ``auto``). ``notebook_read`` never asks. Asking needs a host that can ask (the
notebook's widget); a session without an approver runs every tool."""


class CheckpointSettings(_Section):
    """What the notebook keeps of each run so that ``%pi rewind`` (or a run's **Undo run**) can take it back: the files
    the ``write`` and ``edit`` tools change (their content before), the cells the cell tools change, the variables the
    agent's code binds (references to the objects they held, not copies). See ``pi_notebook.kernel._checkpoint``."""

    keep_runs: int = Field(20, ge=0)
    """How many of the latest runs keep their checkpoint (0: none). An older run's checkpoint is released: the objects
    and file contents it held are freed, and it can no longer be rewound."""
    max_run_bytes: int = Field(16 * 1024 * 1024, ge=0)
    """How many bytes of file content (and copies of objects the agent's code changes in place) one run's checkpoint
    may hold. A file past it is named as not restorable in the receipt of a rewind, never half-kept."""


class PythonSettings(_Section):
    """Where the ``python`` tool runs the agent's code."""

    namespace: Literal["user", "scratch"] = "user"
    """``user``: in the notebook's namespace (the variables it makes are the user's). ``scratch``: in a namespace of
    its own that reads the user's variables and keeps what it binds to itself; ``%pi adopt NAME`` copies one into the
    user's namespace. Objects are shared either way: code that changes one of the user's objects in place changes
    it."""


def _default_sessions_dir() -> str | None:
    """``PI_NOTEBOOK_SESSIONS__DIR`` if set (``none`` turns saving off), else :data:`DEFAULT_SESSIONS_DIR`.
    Read here, not only by :meth:`Settings.load`, so a plain ``Settings()`` (the notebook's default) honours it."""
    return _sessions_dir(os.environ.get(SESSIONS_DIR_ENV, DEFAULT_SESSIONS_DIR))


def _sessions_dir(value: object) -> str | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "null", "off")):
        return None
    if not isinstance(value, str | os.PathLike):
        raise ValueError("must be a folder path, or 'none' to turn saving off")
    return os.fspath(value)


class SessionsSettings(_Section):
    """Where the notebook saves its sessions (Pi's JSONL, one file per session)."""

    dir: str | None = Field(default_factory=_default_sessions_dir)
    """Root folder; each working directory gets a subfolder named as Pi names its own
    (``/home/me/proj`` -> ``--home-me-proj--``). ``~`` is expanded. ``None`` (``none`` in TOML, the
    environment or ``%pi settings``) turns saving off. Default: ``PI_NOTEBOOK_SESSIONS__DIR`` if set, else
    ``~/.pi_notebook/sessions``. Only sessions the notebook creates use it; an :class:`AgentSession` made in
    code saves only to the ``store`` it is given."""

    @field_validator("dir", mode="before")
    @classmethod
    def _check_dir(cls, value: object) -> str | None:
        return _sessions_dir(value)


class Settings(_Section):
    retry: RetryPolicy = RetryPolicy()
    """Layer 3 (the session retries a failed turn, PI-SPEC §4.3), layer 2 (compaction summaries) and, under
    ``provider``, layer 1: the one retry policy of :mod:`pi_notebook.ai.retry`."""
    compaction: CompactionSettings = CompactionSettings()
    timeouts: TimeoutSettings = TimeoutSettings()
    budget: BudgetSettings = BudgetSettings()
    tools: ToolSettings = ToolSettings()
    sessions: SessionsSettings = Field(default_factory=SessionsSettings)
    checkpoints: CheckpointSettings = CheckpointSettings()
    python: PythonSettings = PythonSettings()
    steering_mode: Literal["all", "one-at-a-time"] = "one-at-a-time"
    follow_up_mode: Literal["all", "one-at-a-time"] = "one-at-a-time"
    tool_execution: Literal["parallel", "sequential"] = "parallel"
    cache_retention: CacheRetention = Field(default_factory=default_cache_retention)
    """Prompt caching (Pi's ``cacheRetention``): ``"short"`` asks the provider to cache the conversation's prefix
    for about 5 minutes (Anthropic ``cache_control`` breakpoints, OpenAI ``prompt_cache_key``), ``"long"`` for an
    hour (Anthropic) or 24 hours (OpenAI), ``"none"`` asks for nothing. Cached input costs about a tenth; writing
    it costs a quarter more on Anthropic. Default: ``"short"``, or ``"long"`` when ``PI_CACHE_RETENTION=long``
    (Pi's variable); ``PI_NOTEBOOK_CACHE_RETENTION`` sets it like any setting."""

    @field_validator("cache_retention", mode="before")
    @classmethod
    def _none_is_a_value(cls, value: object) -> object:
        return "none" if value is None else value  # "none" in TOML, the environment or %pi settings reads as None

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise SettingsError(_describe(exc)) from None

    @classmethod
    def load(cls, path: str | Path | None = None, *, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from a TOML file (if given), with ``PI_NOTEBOOK_*`` environment variables on top."""
        data: dict[str, Any] = {}
        if path is not None:
            try:
                data = tomllib.loads(Path(path).read_text())
            except tomllib.TOMLDecodeError as exc:
                raise SettingsError(f"{path}: not valid TOML ({exc})") from None
            except OSError as exc:
                raise SettingsError(f"{path}: cannot read ({exc.strerror})") from None
        _merge(data, _from_environ(os.environ if environ is None else environ))
        return cls(**data)

    def updated(self, **changes: Any) -> Settings:
        """A copy with ``changes`` deep-merged in (``settings.updated(retry={"enabled": False})``)."""
        data = self.model_dump()
        _check_names(type(self), changes)
        changes = _by_name(type(self), changes)
        approval = (changes.get("tools") or {}).get("approval") if isinstance(changes.get("tools"), Mapping) else None
        if isinstance(approval, Mapping) and isinstance(data["tools"]["approval"], str):
            data["tools"]["approval"] = {"*": data["tools"]["approval"]}  # the others keep what they had
        _merge(data, changes)
        return Settings(**data)


NOT_SETTINGS = frozenset(
    {
        "PI_NOTEBOOK_POLICY",  # the site policy file (session._policy)
        "PI_NOTEBOOK_CASSETTE_MODE",  # every cassette's mode (ai.cassette)
        "PI_NOTEBOOK_CASSETTE_MISSES",  # where unmatched requests are reported (ai.cassette, the pytest plugin)
        "PI_NOTEBOOK_ACTIVITY_INTERVAL",  # the kernel's activity signal (notebook._activity)
        "PI_NOTEBOOK_MCP_CONFIG",  # the mcpServers file (mcp._server_config)
        "PI_NOTEBOOK_BASH_RUN",  # the marker of a tool's processes (tools._process)
        "PI_NOTEBOOK_PYTHON_CALL",  # the marker of the python tool's processes (kernel)
    }
)
"""``PI_NOTEBOOK_*`` variables that are not settings: :meth:`Settings.load` leaves them alone."""


def _from_environ(environ: Mapping[str, str]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX) or name in NOT_SETTINGS:
            continue
        path = name[len(ENV_PREFIX) :].lower().split("__")
        node = data
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = None if value.lower() in ("", "none", "null") else value
    return data


def _by_name(model: type[BaseModel], changes: Mapping[str, Any]) -> dict[str, Any]:
    """``changes`` with Pi's camelCase keys (``maxRetries``) renamed to the field names they alias, at every level,
    so they replace the dumped snake_case values instead of sitting beside them. Unknown keys are kept (and
    refused by name when validated)."""
    renamed: dict[str, Any] = {}
    for key, value in changes.items():
        name = next((name for name, info in model.model_fields.items() if key in (name, info.alias)), key)
        section = model.model_fields[name].annotation if name in model.model_fields else None
        if isinstance(value, Mapping) and isinstance(section, type) and issubclass(section, BaseModel):
            value = _by_name(section, value)
        renamed[name] = value
    return renamed


def _check_names(model: type[BaseModel], changes: Mapping[str, Any], prefix: str = "") -> None:
    """Raise :class:`SettingsError` for a change that names no setting (``no.such.setting``, with the closest
    name if one is close) or gives a group of settings (``retry``) one value."""
    for key, value in changes.items():
        path = f"{prefix}{key}"
        info = next((info for name, info in model.model_fields.items() if key in (name, info.alias)), None)
        if info is None:
            raise SettingsError(_unknown(path, value))
        section = info.annotation
        if not (isinstance(section, type) and issubclass(section, BaseModel)) or isinstance(value, BaseModel):
            continue
        if not isinstance(value, Mapping):
            names = ", ".join(f"{path}.{name}" for name in section.model_fields)
            raise SettingsError(f"{path} is a group of settings, not one: set one of {names}")
        _check_names(section, value, path + ".")


def _unknown(path: str, value: Any) -> str:
    """``unknown setting 'retry.max_retrie' (did you mean 'retry.max_retries'?)``."""
    while isinstance(value, Mapping) and len(value) == 1:  # the whole name given: no.such.setting=1
        key, value = next(iter(value.items()))
        path = f"{path}.{key}"
    close = difflib.get_close_matches(path, _setting_names(Settings), n=1, cutoff=0.6)
    groups = ", ".join(Settings.model_fields)
    hint = f" (did you mean {close[0]!r}?)" if close else f" (the settings are under {groups})"
    return f"unknown setting {path!r}{hint}"


def _setting_names(model: type[BaseModel], prefix: str = "") -> list[str]:
    names = []
    for name, info in model.model_fields.items():
        section = info.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            names += _setting_names(section, f"{prefix}{name}.")
        else:
            names.append(f"{prefix}{name}")
    return names


def _merge(into: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _describe(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"]) or "settings"
        if item["type"] == "extra_forbidden":
            lines.append(_unknown(field, item.get("input")))
            continue
        got = item.get("input")
        shown = "" if isinstance(got, dict) else f" (got {_short(repr(got))})"
        lines.append(f"settings.{field}: {item['msg']}{shown}")
    return "invalid settings: " + "; ".join(lines)


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else f"{text[: limit - 12]}… ({len(text):,} characters)"
