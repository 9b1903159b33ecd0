"""``%pi`` and ``%%pi``: start runs on the kernel's event loop and control them.

Magics cannot be coroutines (ipython#11314), so a run is started as a task and the magic returns at once
with its :class:`Run`, having displayed the run's live widget (once: ``run = %pi ...`` shows it as a bare
``%pi ...`` does; see ``_display``). ``%pi wait`` is rewritten (by an input transformer) into an ``await`` of
the active run, which IPython then runs as an async cell; the same transformer keeps a trailing ``?`` in a
prompt from being read as a help request. The line is read by one parser (``_commands``); every error becomes
a short message, and bad arguments one line and a pointer to ``%pi help``. Without a running loop (plain terminal
IPython) runs complete before the magic returns.

A ``%pi`` line is taken literally, as a ``%%pi`` cell is: IPython does not expand ``{expr}`` or ``$name`` in it
(pasted text never runs code, and the prompt is sent as typed). A ``%pi`` line or ``%%pi`` cell body longer than
:data:`MAX_PROMPT_CHARS` characters is refused with a one-line error before it is read (pass longer texts from
Python: ``get_session().prompt(text)``).

``%pi continue`` with nothing to continue (an empty transcript, or the assistant's reply last and nothing queued)
says so and starts no run. A prompt or follow-up queued while ``%pi compact`` runs is run as soon as the compaction
succeeds, in the same run (Pi's interactive mode sends what was queued during a compaction at ``compaction_end``);
after a stopped or failed compaction it stays queued (``%pi queue``, ``%pi continue``), since Stop means stop here.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Callable, Coroutine
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.display import display

from ..ai import Cassette, CassetteError
from ..kernel import current_shell
from ..session import SessionBusyError, SettingsError
from ._approval import describe_tools
from ._cell_link import cells_left_out, notebook_of_cell
from ._checkpoints import RewindRefused
from ._commands import USAGE, CommandName, PiCommand, UsageError, parse_cell_line, parse_line
from ._mcp_magics import mcp_command
from ._model_line import model_limits
from ._policy_view import describe_policy
from ._registry import REGISTRY, NotebookSession
from ._rewind import STOP_FIRST, rewind
from ._rewind_plan import RewindReceipt
from ._run import Run
from ._session_magics import new_session, resume_session, show_sessions, use_session
from ._tree_magics import fork, show_tree
from ._volatile import show_volatile

__all__ = ["MAX_PROMPT_CHARS", "USAGE", "PiMagics", "pi_transformer"]

HELP_POINTER = "pi: %pi help lists the commands and their options"
"""What follows a bad ``%pi`` line's one-line error (the whole usage is ``%pi help``'s)."""
MAX_PROMPT_CHARS = 1_000_000
"""Longest ``%pi`` line or ``%%pi`` cell body accepted (about 250k tokens, more than most context windows)."""

_LINE = re.compile(r"^(?P<indent>\s*)(?P<assign>[A-Za-z_][\w.]*\s*=\s*)?%pi(?P<rest>\s.*)?$")


def pi_transformer(lines: list[str]) -> list[str]:
    """Rewrite ``%pi`` lines before IPython reads them.

    ``%pi wait`` becomes an ``await`` of the active run, so the cell runs async and really waits. Other ``%pi``
    lines become plain ``run_line_magic`` calls, so a prompt ending in ``?`` ("What can you do?") is a prompt,
    not an IPython help request. ``%%pi`` cells are left alone (their body is the prompt).
    """
    if lines and lines[0].lstrip().startswith("%%"):
        return lines
    out = []
    for line in lines:
        match = _LINE.match(line.rstrip("\n"))
        if match is None:
            out.append(line)
            continue
        rest = (match["rest"] or "").strip()
        call = f"get_ipython().run_line_magic('pi', {rest!r})"
        if _awaited(rest):
            call = "await " + call
        out.append(f"{match['indent']}{match['assign'] or ''}{call}\n")
    return out


_AWAITED: frozenset[CommandName] = frozenset({"wait", "rewind", "mcp"})
"""The sub-commands a cell awaits: they end later than the magic returns (a run settling, a rewind through the
page, an MCP server starting or stopping: see ``_mcp_magics``). The magic returns an awaitable for these, errors too."""


def _awaited(rest: str) -> bool:
    try:
        return parse_line(rest).name in _AWAITED
    except UsageError:
        return False


class _Ready:
    """An awaitable that is already done, so ``await %pi wait`` works with or without an active run."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Any:
        return self.value
        yield  # makes this a generator function


@magics_class
class PiMagics(Magics):
    # IPython 8.12 (what CI has) ships this decorator untyped; IPython 9 types it, hence unused-ignore.
    @line_cell_magic  # type: ignore[untyped-decorator, unused-ignore]
    @no_var_expand  # type: ignore[untyped-decorator, unused-ignore]
    def pi(self, line: str, cell: str | None = None) -> Any:
        """Run and control agent runs; ``%pi help`` lists the sub-commands."""
        awaited = False  # the cell awaits what this returns (see pi_transformer): never None then
        try:
            _check_size(line if cell is None else cell, "%pi line" if cell is None else "%%pi cell")
            if cell is not None:
                _check_thread("prompt")
                name = parse_cell_line(line)
                with REGISTRY.using(name):
                    return self._prompt(PiCommand("prompt", cell, session=name))
            command = parse_line(line)
            awaited = command.name in _AWAITED
            _check_thread(command.name)
            with REGISTRY.using(command.session):  # -s NAME: this line acts on session NAME
                return self._handlers()[command.name](command)
        except UsageError as exc:
            print(f"pi: {exc}\n{HELP_POINTER}")  # noqa: T201 - magics talk to the user through stdout
        except (ValueError, SettingsError, RuntimeError) as exc:
            print(f"pi: {exc}")  # noqa: T201
        except Exception as exc:  # never a bare traceback from a magic
            print(f"pi: internal error ({type(exc).__name__}): {exc}")  # noqa: T201
        return _Ready(None) if awaited else None

    def _handlers(self) -> dict[CommandName, Callable[[PiCommand], Any]]:
        return {
            "prompt": self._prompt,
            "steer": self._steer,
            "follow": self._follow,
            "abort": self._abort,
            "continue": self._continue,
            "compact": self._compact,
            "wait": self._wait,
            "status": self._status,
            "rewind": self._rewind,
            "adopt": self._adopt,
            "events": self._events,
            "queue": self._queue,
            "clear-queue": self._clear_queue,
            "model": self._model,
            "settings": self._settings,
            "tools": self._tools,
            "interrupt": self._interrupt,
            "cassette": self._cassette,
            "sessions": lambda command: show_sessions(REGISTRY, command),
            "resume": lambda command: resume_session(REGISTRY, command),
            "new": lambda command: new_session(REGISTRY, command),
            "use": lambda command: use_session(REGISTRY, command),
            "tree": lambda command: show_tree(REGISTRY, command),
            "fork": lambda command: fork(REGISTRY, command, _start),
            "mcp": lambda command: mcp_command(REGISTRY, command),
            "help": lambda command: print(USAGE),  # noqa: T201
        }

    # -- runs -------------------------------------------------------------------------------------------
    def _prompt(self, command: PiCommand) -> Run | None:
        text = command.text.strip()
        if not text:
            raise UsageError("empty prompt")
        entry = REGISTRY.get()
        if entry.busy:
            _await_now(entry.session.follow_up(text))
            print(f"pi: a run is active; queued as a follow-up: {text!r}")  # noqa: T201
            return None
        return _start(entry, text, lambda: entry.session.prompt(text))

    def _continue(self, command: PiCommand) -> Run | None:
        entry = REGISTRY.get()
        if entry.busy:
            raise SessionBusyError("a run is active; it continues on its own")
        session = entry.session
        messages, queue = session.messages, session.queue
        if not messages or (messages[-1].role == "assistant" and not queue.steering and not queue.follow_up):
            why = "the transcript is empty" if not messages else "the assistant had the last word and nothing is queued"
            print(f"pi: nothing to continue ({why}); %pi <prompt> starts a run")  # noqa: T201
            return None
        return _start(entry, "(continue)", session.continue_)

    def _compact(self, command: PiCommand) -> Run | None:
        entry = REGISTRY.get()
        if entry.busy:
            raise SessionBusyError("a run is active; %pi abort it (or %pi wait) before compacting")
        session = entry.session
        if session.compaction_plan() is None:
            _, keep = session.settings.compaction.for_window(session.model.context_window)
            keeps = f"the {keep} tokens kept verbatim, compaction.keep_recent_tokens"
            print(f"pi: nothing to compact (the transcript fits in {keeps})")  # noqa: T201
            return None
        focus = command.text or None

        async def compact() -> None:
            await session.compact(focus)
            queue = session.queue
            if queue.steering or queue.follow_up:  # queued during the compaction: run now, as Pi's interactive mode
                await session.continue_()

        return _start(entry, "(compact)" + (f" {focus}" if focus else ""), compact)

    def _steer(self, command: PiCommand) -> None:
        if not command.text:
            raise UsageError("steer needs the text to deliver")
        _await_now(REGISTRY.get().session.steer(command.text))
        print(f"pi: steering queued: {command.text!r}")  # noqa: T201

    def _follow(self, command: PiCommand) -> None:
        if not command.text:
            raise UsageError("follow needs the text to deliver")
        _await_now(REGISTRY.get().session.follow_up(command.text))
        print(f"pi: follow-up queued: {command.text!r}")  # noqa: T201

    def _abort(self, command: PiCommand) -> None:
        elsewhere = REGISTRY.control.in_other_thread()  # a subshell console: the agent's code may hold the loop
        entry = REGISTRY.find() if elsewhere else REGISTRY.get()
        run = entry.active_run if entry is not None else None
        if entry is None or (run is None and entry.session.is_idle):
            print("pi: nothing to abort")  # noqa: T201
            return
        if elsewhere:
            REGISTRY.control.stop([run] if run is not None else [], entry.session)
        elif run is not None:
            run.abort()
        else:
            _await_now(entry.session.abort())
        print("pi: stopping")  # noqa: T201

    def _wait(self, command: PiCommand) -> Any:
        run = REGISTRY.get().current_run
        if run is None:
            print("pi: no run yet")  # noqa: T201
            return _Ready(None)
        if run.done:
            return _Ready(run.report())
        return run  # awaited by the cell (see pi_transformer)

    def _rewind(self, command: PiCommand) -> Any:
        """``%pi rewind [N]``: awaited by the cell (``pi_transformer``), which shows the receipt (``_rewind``)."""
        entry = REGISTRY.get()
        if REGISTRY.active_runs() or entry.busy:
            raise SessionBusyError(STOP_FIRST)
        if _running_loop() is None:
            return _Ready(asyncio.run(_rewound(entry, command.number)))
        return _rewound(entry, command.number)

    def _adopt(self, command: PiCommand) -> None:
        name = command.text.strip()
        if not name.isidentifier():
            raise UsageError("adopt needs the name of a variable of the agent's scratch namespace")
        entry, shell = REGISTRY.get(), current_shell()
        if shell is None:
            raise RuntimeError("%pi adopt needs IPython")
        try:
            value = entry.scratch.adopt(name, shell.user_ns)
        except KeyError:
            own = entry.scratch.own
            has = f"it has: {', '.join(own)}" if own else "it is empty (%pi settings python.namespace=scratch)"
            raise ValueError(f"no variable {name!r} in the agent's scratch namespace ({has})") from None
        print(f"pi: adopted {name} ({type(value).__name__}), the scratch namespace's very object")  # noqa: T201

    # -- inspection -------------------------------------------------------------------------------------
    def _status(self, command: PiCommand) -> None:
        entry = REGISTRY.get()
        session = entry.session
        run = entry.active_run
        state = "idle" if session.is_idle else ("retrying" if session.is_retrying else "running")
        queue = session.queue
        lines = [
            f"state: {state}" + (f" (run {run.number})" if run else ""),
            f"model: {entry.model_spec} ({session.model.api}, {session.model.id})",
            f"runs: {len(entry.runs)}; transcript: {len(session.messages)} messages",
            f"queue: {len(queue.steering)} steering, {len(queue.follow_up)} follow-up",
            f"interrupt hook: {'on' if REGISTRY.interrupt.on else 'off'}",
            REGISTRY.control.activity.describe(),
            entry.checkpoints.describe(),
        ]
        if session.settings.python.namespace == "scratch":
            own = entry.scratch.own
            lines.append(f"python namespace: scratch ({', '.join(own) if own else 'nothing bound yet'})")
        if run is not None:
            lines.append(f"usage: {run.usage_line()}")
        print("\n".join(lines))  # noqa: T201

    def _events(self, command: PiCommand) -> None:
        runs = REGISTRY.get().runs
        if not runs:
            print("pi: no run yet")  # noqa: T201
            return
        number = command.number
        if number is None:
            run = runs[-1]
        elif 1 <= number <= len(runs):
            run = runs[number - 1]
        else:
            raise UsageError(f"no run '{number}' (runs: 1..{len(runs)})")
        _show(run.report())

    def _queue(self, command: PiCommand) -> None:
        queue = REGISTRY.get().session.queue
        if not queue.steering and not queue.follow_up:
            print("pi: the queue is empty")  # noqa: T201
            return
        for text in queue.steering:
            print(f"steer: {text}")  # noqa: T201
        for text in queue.follow_up:
            print(f"follow-up: {text}")  # noqa: T201

    def _clear_queue(self, command: PiCommand) -> None:
        snapshot = REGISTRY.get().session.clear_queue()
        taken = [*snapshot.steering, *snapshot.follow_up]
        print("pi: " + (f"took back {len(taken)}: " + "; ".join(map(repr, taken)) if taken else "the queue was empty"))  # noqa: T201

    # -- configuration ----------------------------------------------------------------------------------
    def _model(self, command: PiCommand) -> None:
        entry = REGISTRY.get()
        if not command.text:
            if command.flags:
                raise UsageError("model: the options need a SPEC (%pi model SPEC --context-window N ...)")
            print(f"pi: model {entry.model_spec} ({model_limits(entry.session.model)})")  # noqa: T201
            return
        if entry.busy:
            raise SessionBusyError("a run is active; wait for it (or abort) before switching models")
        flags = command.flags
        entry.set_model(
            command.text,
            context_window=int(flags["context_window"]) if "context_window" in flags else None,
            max_tokens=int(flags["max_tokens"]) if "max_tokens" in flags else None,
            key_env=flags.get("key_env"),
            from_server="from_server" in flags,
            base_url=flags.get("base_url"),
        )
        print(f"pi: model set to {entry.model_spec} ({model_limits(entry.session.model)})")  # noqa: T201

    def _settings(self, command: PiCommand) -> None:
        entry = REGISTRY.get()
        session = entry.session
        if not command.text:
            print(session.settings.model_dump_json(indent=2) + describe_policy(session.policy, session.settings))  # noqa: T201
            return
        changes = _assignments(command.text)
        if entry.busy:
            raise SessionBusyError("a run is active; change settings once it has settled")
        updated = session.settings.updated(**changes)
        session.policy.check_changes(changes, updated)  # one line, and nothing changes, if it loosens the policy
        session.settings = updated
        entry.settings_changed()  # sessions.dir
        print(f"pi: settings updated: {command.text}")  # noqa: T201

    def _tools(self, command: PiCommand) -> None:
        entry = REGISTRY.get()
        here = notebook_of_cell(len(entry.runs) + 1, entry.notebook)
        print(describe_tools(entry.session, cells_left_out(entry.session, here)))  # noqa: T201

    def _cassette(self, command: PiCommand) -> None:
        """``%pi cassette PATH [--mode M] [--timing T]``, ``%pi cassette off``, or ``%pi cassette`` (show). The
        cassette's state (recording or replaying, counts) is shown as a line a check of the saved notebook leaves
        out: it is recording when the notebook is executed first and replaying when it is checked."""
        entry = REGISTRY.get()
        if not command.text:
            if command.flags:
                raise UsageError("cassette: --mode and --timing need a PATH")
            if entry.cassette is None:
                print("pi: no cassette (runs call out)")  # noqa: T201
            else:
                show_volatile(f"pi: {entry.cassette.describe()}")
            return
        if entry.busy:
            raise SessionBusyError("a run is active; wait for it (or abort) before changing the cassette")
        if command.text == "off":
            entry.cassette = None
            print("pi: cassette off (runs call out)")  # noqa: T201
            return
        mode, timing = command.flags.get("mode", "once"), command.flags.get("timing", "fast")
        try:
            cassette = Cassette(command.text, mode=mode, timing=timing).load()  # type: ignore[arg-type]
        except CassetteError as exc:
            raise RuntimeError(str(exc)) from None
        entry.cassette = cassette
        show_volatile(f"pi: {cassette.describe()}")

    def _interrupt(self, command: PiCommand) -> None:
        if command.text not in ("on", "off"):
            raise UsageError("interrupt takes 'on' or 'off'")
        _require_loop("%pi interrupt")
        REGISTRY.interrupt.set(command.text == "on", kernel=getattr(self.shell, "kernel", None))
        print(f"pi: interrupt hook {command.text}")  # noqa: T201


_ANY_THREAD: frozenset[CommandName] = frozenset({"abort", "status", "events", "queue", "help"})
"""What ``%pi`` does on a kernel subshell (JupyterLab's subshell console), whose thread is not the event loop's:
stop, and look. Everything else changes run state, which only the loop touches."""


def _check_thread(name: CommandName) -> None:
    if name not in _ANY_THREAD and REGISTRY.control.in_other_thread():
        allowed = ", ".join(sorted(_ANY_THREAD))
        raise RuntimeError(f"%pi {name} runs on the kernel's main shell; on a subshell %pi does only: {allowed}")


def _check_size(text: str, what: str) -> None:
    if len(text) > MAX_PROMPT_CHARS:
        raise ValueError(
            f"the {what} has {len(text):,} characters, more than the limit of {MAX_PROMPT_CHARS:,}"
            " (send a longer text from Python: await get_session().prompt(text))"
        )


def _assignments(text: str) -> dict[str, Any]:
    """``retry.max_retries=5 budget.max_cost_usd=0.5`` as nested changes for ``Settings.updated``."""
    changes: dict[str, Any] = {}
    seen: list[str] = []
    try:
        items = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"cannot read {text!r}: {exc}") from None
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"expected KEY=VALUE, got {item!r}")
        for earlier in seen:
            if key.startswith(earlier + ".") or earlier.startswith(key + "."):
                raise UsageError(f"cannot set both {earlier!r} and {key!r}: one is inside the other")
        seen.append(key)
        node = changes
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = None if value.lower() in ("none", "null") else value
    return changes


async def _rewound(entry: NotebookSession, number: int | None) -> RewindReceipt | None:
    """The rewind's receipt, or ``None`` after saying in one line why nothing was rewound."""
    try:
        return await rewind(entry, number, busy=lambda: bool(REGISTRY.active_runs()))
    except (RewindRefused, SessionBusyError) as exc:
        print(f"pi: {exc}")  # noqa: T201
    except Exception as exc:  # never a bare traceback from a magic
        print(f"pi: internal error ({type(exc).__name__}): {exc}")  # noqa: T201
    return None


def _show(value: Any) -> None:
    display(value)  # type: ignore[no-untyped-call]


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _require_loop(what: str) -> None:
    if _running_loop() is None:
        raise RuntimeError(f"{what} needs a running event loop (a Jupyter kernel)")


def _await_now(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run a quick coroutine (queueing, abort) from a magic: scheduled on the kernel loop, or run to the end
    when there is no loop."""
    loop = _running_loop()
    if loop is None:
        asyncio.run(coroutine)
    else:
        task = loop.create_task(coroutine)
        _background.add(task)
        task.add_done_callback(_background.discard)


_background: set[asyncio.Task[None]] = set()


def _start(entry: NotebookSession, label: str, operation: Callable[[], Any]) -> Run | None:
    if _running_loop() is not None:
        run = entry.start(label, operation)
        run.show()  # the live widget, once, whether or not the cell assigns or displays the run
        return run

    async def complete() -> Any:  # plain IPython: no loop outlives the cell, so run to the end here
        run = entry.start(label, operation, with_view=False)
        return await run

    report = asyncio.run(complete())
    _show(report)
    return None
