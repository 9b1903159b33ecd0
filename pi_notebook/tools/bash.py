"""Pi's built-in ``bash`` tool (PI-SPEC §8) for notebooks: run a shell command, stream its output tail.

``bash_tool()`` returns an :class:`~pi_notebook.agent.AgentTool` named ``bash`` taking ``command`` and an
optional per-call ``timeout`` in seconds. Behaviour follows Pi 0.83 (outcome texts, 2000-line / 50 KB tail
with the full output in ``<tempdir>/pi-bash-<16 hex>.log``, throttled progress, completion 100 ms after exit
once the pipe is quiet), with these differences:

- Abort and timeout kill the *whole* tree: SIGTERM, then SIGKILL after ``kill_grace_ms``, to the process
  group **and** to descendants that left it (``setsid``, double forks), found by parentage and by an
  environment marker (``_process`` explains how, and what it cannot find). Pi SIGKILLs the group only.
- The timeout also bounds the wait after the shell exits, so a detached descendant that keeps writing to the
  pipe cannot hang the tool past it (Pi #6787, kimchi#833).
- A shell killed by a signal is an error ("Command terminated by signal SIGKILL"); Pi reports success
  because Node gives it exit code ``null``.
- Cancelling the task that awaits ``execute`` (rather than aborting its signal) SIGKILLs the tree at once.

On normal completion, processes the command left running (``server &``, daemons) are kept, as in Pi: models
start servers that way and use them in later calls. ``kill_background=True`` kills them (same SIGTERM →
SIGKILL sequence) before the tool returns; use it when stray processes matter more than that workflow.
Kept processes are not tracked afterwards: they outlive the tool call and the kernel.

If the kernel dies while a command runs, the command's tree dies with it, however the kernel dies: a clean exit
kills it from an exit handler; SIGKILL, an OOM kill or ``shutdown_kernel(now=True)`` (restart included) run no
handler, so a small watchdog process (one per kernel, started at the first call, in its own session) sees the
death at once and kills the trees of the calls still running: SIGTERM, then SIGKILL after ``kill_grace_ms``
(about 0.2-0.3 s with the default grace when a process ignores SIGTERM; ``bench/bench_bash.py`` measures it).
It finds the processes the same ways as an abort (marker, process group, parentage); see ``_lifeline``.

The command's environment is ``os.environ`` without the variables that hold keys, plus ``env``, plus
``PI_NOTEBOOK_BASH_RUN=<random token>``, the marker by which escaped descendants are found. The variables left out
are ``pi_notebook.ai._keys.known_secrets().variables``: under an ``AgentSession``, the provider variables
(``OPENAI_API_KEY``, ...), the variable its model names with ``key_env`` whatever its name, and every variable whose
name says key/token/secret/password (``ai._secret.is_secret_name``); without a session, the same minus ``key_env``.
So a model that runs ``env`` does not put a key into its transcript. ``provider_keys=True`` passes those variables
through (for commands that call a provider themselves); a variable given in ``env`` is always passed. Either way,
an ``AgentSession`` redacts every key it knows from tool results, updates and errors (``session._redact``), so a
key a command prints shows as ``***``; a tool used without a session gets no redaction. The full-output temp log
is redacted too (see ``_output``).

What the timeout does not cover: the spawn itself; and once it fires, the kill (``kill_grace_ms`` plus a few
ms) and the drain of output already in the pipe (at most 250 ms) still run before the error is raised.
``timeout`` is per call; there is no default unless ``timeout_s`` is given.
"""

from __future__ import annotations

import math
import os
import shutil
import signal as signals
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agent import AgentTool, AgentToolResult, ToolPrompt
from ..ai import AbortSignal, ToolError, known_secrets
from ._common import js_number
from ._file_journal import file_journal, note_untracked
from ._output import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, OutputAccumulator, Progress, tail_text
from ._process import Outcome, run_shell

__all__ = ["MAX_TIMEOUT_S", "BashError", "bash_tool"]

MAX_TIMEOUT_S = 2_147_483.647


class BashError(ToolError):
    """Raised by the bash tool's ``execute``; the agent loop turns its text into an error tool result.

    ``reason`` is ``"aborted"``, ``"timeout"``, ``"exit"`` (non-zero code or signal), or ``"invalid"``
    (bad arguments, missing working directory or shell, spawn failure). ``details`` carries the truncation
    info when the output was truncated.
    """

    def __init__(self, text: str, reason: str, *, returncode: int | None = None, details: Any = None) -> None:
        super().__init__(text)
        self.reason = reason
        self.returncode = returncode
        self.details = details


def resolve_timeout(value: object, error: Callable[[str], Exception]) -> float | None:
    """A tool call's ``timeout`` argument in seconds (``None``: none given); a bad one raises ``error(text)`` with
    Pi's text. Shared by the ``bash`` and ``python`` tools."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise error("Invalid timeout: must be a finite number of seconds")
    if value * 1000 > 2_147_483_647:  # setTimeout's limit, as Pi
        raise error(f"Invalid timeout: maximum is {js_number(MAX_TIMEOUT_S)} seconds")
    return float(value)


def _resolve_timeout(value: object) -> float | None:
    return resolve_timeout(value, lambda text: BashError(text, "invalid"))


def _description(max_lines: int, max_bytes: int, timeout_s: float | None) -> str:
    text = (
        "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated "
        f"to last {max_lines} lines or {js_number(max_bytes / 1024)}KB (whichever is hit first). If truncated, full "
        "output is saved to a temp file. Optionally provide a timeout in seconds."
    )
    if timeout_s is not None:
        text += f" Without one, commands time out after {js_number(timeout_s)} seconds."
    return text


def _schema(timeout_s: float | None) -> dict[str, Any]:
    default = "no default timeout" if timeout_s is None else f"default {js_number(timeout_s)}"
    return {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "Bash command to execute"},
            "timeout": {"type": "number", "description": f"Timeout in seconds (optional, {default})"},
        },
        "required": ["command"],
    }


def _find_shell(shell: str | None, path: str | None) -> str:
    if shell is None:
        found = shutil.which("bash", path=path) or shutil.which("sh", path=path)
        if found is None:
            raise BashError("No shell found: neither bash nor sh is on PATH.\nCannot execute bash commands.", "invalid")
        return found
    found = shell if os.sep in shell and os.access(shell, os.X_OK) else shutil.which(shell, path=path)
    if found is None or not os.path.isfile(found):
        raise BashError(f"Shell not found: {shell}\nCannot execute bash commands.", "invalid")
    return found


def _status(outcome: Outcome, timeout: float | None) -> tuple[str, str] | None:
    code = outcome.returncode
    if outcome.kind == "aborted":
        return "aborted", "Command aborted"
    if outcome.kind == "timeout":
        return "timeout", f"Command timed out after {js_number(timeout or 0)} seconds"
    if code is not None and code < 0:
        try:
            name = signals.Signals(-code).name
        except ValueError:
            name = str(-code)
        return "exit", f"Command terminated by signal {name}"
    if code:
        return "exit", f"Command exited with code {code}"
    return None


@dataclass(frozen=True, slots=True)
class _Call:
    argv: list[str]
    cwd: str
    env: dict[str, str]
    timeout_s: float | None


class _Bash:
    def __init__(
        self,
        *,
        cwd: str | Path | None,
        shell: str | None,
        timeout_s: float | None,
        kill_grace_ms: int,
        env: Mapping[str, str] | None,
        max_lines: int,
        max_bytes: int,
        update_interval_ms: int,
        kill_background: bool,
        provider_keys: bool,
    ) -> None:
        self.cwd = None if cwd is None else os.fspath(cwd)
        self.shell = shell
        self.timeout_s = timeout_s
        self.grace_s = kill_grace_ms / 1000
        self.env = dict(env or {})
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.interval_s = update_interval_ms / 1000
        self.kill_background = kill_background
        self.provider_keys = provider_keys

    def environment(self) -> dict[str, str]:
        """``os.environ`` (read now) without the variables that hold keys unless ``provider_keys``, then ``env``
        on top."""
        base = dict(os.environ)
        if not self.provider_keys:
            for name in known_secrets().variables:
                base.pop(name, None)
        return {**base, **self.env}

    def prepare(self, args: Any, signal: AbortSignal | None) -> _Call:
        """Check everything Pi checks before spawning, in Pi's order; raise ``BashError`` with its texts."""
        command = args.get("command") if isinstance(args, Mapping) else None
        if not isinstance(command, str):
            raise BashError("Invalid command: must be a string", "invalid")
        timeout = _resolve_timeout(args.get("timeout"))
        if signal is not None and signal.aborted:
            raise BashError("Command aborted", "aborted")
        env = self.environment()
        shell = _find_shell(self.shell, env.get("PATH"))
        cwd = self.cwd if self.cwd is not None else os.getcwd()
        if not os.path.isdir(cwd):
            raise BashError(f"Working directory does not exist: {cwd}\nCannot execute bash commands.", "invalid")
        return _Call([shell, "-c", command], cwd, env, self.timeout_s if timeout is None else timeout)

    async def execute(
        self, tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: Any
    ) -> AgentToolResult:
        call = self.prepare(args, signal)
        note_untracked(file_journal.get(), "bash", str(args.get("command", "")))  # a rewind names what it cannot undo
        output = OutputAccumulator(self.max_lines, self.max_bytes, secrets=known_secrets().values)
        progress = Progress(on_update, output, self.interval_s)
        try:
            outcome = await self._run(call, output, progress, signal)
            output.finish()
            progress.close(flush=True)
            snapshot = output.snapshot()
        finally:
            progress.close(flush=False)
            output.close()
        status = _status(outcome, call.timeout_s)
        if status is None:
            text, details = tail_text(output, snapshot, "(no output)")
            return AgentToolResult(content=text, details=details)
        text, details = tail_text(output, snapshot, "")
        reason, line = status
        raise BashError(f"{text}\n\n{line}" if text else line, reason, returncode=outcome.returncode, details=details)

    async def _run(
        self, call: _Call, output: OutputAccumulator, progress: Progress, signal: AbortSignal | None
    ) -> Outcome:
        def on_data(data: bytes) -> None:
            output.append(data)
            progress.changed()

        progress.start()
        try:
            return await run_shell(
                call.argv,
                cwd=call.cwd,
                env=call.env,
                on_data=on_data,
                signal=signal,
                timeout_s=call.timeout_s,
                grace_s=self.grace_s,
                kill_background=self.kill_background,
            )
        except OSError as exc:
            raise BashError(f"Failed to start {call.argv[0]}: {exc.strerror or exc}", "invalid") from exc


def bash_tool(
    cwd: str | Path | None = None,
    *,
    shell: str | None = None,
    timeout_s: float | None = None,
    kill_grace_ms: int = 200,
    env: Mapping[str, str] | None = None,
    max_lines: int = DEFAULT_MAX_LINES,
    max_bytes: int = DEFAULT_MAX_BYTES,
    update_interval_ms: int = 100,
    kill_background: bool = False,
    provider_keys: bool = False,
) -> AgentTool:
    """Pi's ``bash`` tool; see the module docstring for behaviour and differences from Pi.

    - ``cwd``: where commands run; ``None`` means the process's working directory at each call.
    - ``shell``: a name looked up on ``PATH`` or a path; default ``bash``, else ``sh``. Run as ``<shell> -c``.
    - ``timeout_s``: timeout for calls that give none (``None``: no timeout, as in Pi).
    - ``kill_grace_ms``: time between SIGTERM and SIGKILL on abort, timeout and ``kill_background``.
    - ``env``: added to ``os.environ`` (read at each call) for the command.
    - ``provider_keys``: also pass the variables that hold keys (``OPENAI_API_KEY``, a model's ``key_env``,
      ``*_TOKEN``, ...) from ``os.environ``; by default they are left out.
    - ``max_lines`` / ``max_bytes``: the output tail kept in the result.
    - ``update_interval_ms``: least time between two ``on_update`` snapshots.
    - ``kill_background``: on normal completion, also kill what the command left running.

    Raises ``ValueError`` for invalid settings (a bad ``timeout_s`` with Pi's text).
    """
    if timeout_s is not None:
        try:
            timeout_s = _resolve_timeout(timeout_s)
        except BashError as exc:
            raise ValueError(str(exc)) from None
    for name, value, least in (
        ("kill_grace_ms", kill_grace_ms, 0),
        ("max_lines", max_lines, 1),
        ("max_bytes", max_bytes, 1),
        ("update_interval_ms", update_interval_ms, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    bash = _Bash(
        cwd=cwd,
        shell=shell,
        timeout_s=timeout_s,
        kill_grace_ms=kill_grace_ms,
        env=env,
        max_lines=max_lines,
        max_bytes=max_bytes,
        update_interval_ms=update_interval_ms,
        kill_background=kill_background,
        provider_keys=provider_keys,
    )
    return AgentTool(
        name="bash",
        label="bash",
        description=_description(max_lines, max_bytes, timeout_s),
        parameters=_schema(timeout_s),
        execute=bash.execute,
        approval="ask",
        preview=_preview,
        preview_syntax="shell",
        # Pi adds "Inspect PI_* environment variables..." when it exposes them; our bash does not.
        prompt=ToolPrompt("Execute bash commands (ls, grep, find, etc.)"),
    )


def _preview(args: Mapping[str, Any]) -> str:
    """What an approval question shows of a call: the command line."""
    command = args["command"]
    if not isinstance(command, str):
        raise TypeError("command is not text")
    return "$ " + command
