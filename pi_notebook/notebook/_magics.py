"""``%pi`` and ``%%pi``: start runs on the kernel's event loop and control them.

Magics cannot be coroutines (ipython#11314), so a run is started as a task and the magic returns at once
with its :class:`Run`. ``%pi wait`` is rewritten (by an input transformer) into an ``await`` of the active run,
which IPython then runs as an async cell; the same transformer keeps a trailing ``?`` in a prompt from being
read as a help request. Every error becomes a short message; bad arguments print the
usage. Without a running loop (plain terminal IPython) runs complete before the magic returns.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shlex
from collections.abc import Callable
from typing import Any, NoReturn

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display

from ..ai import Cassette, CassetteError
from ..ai import stream as default_stream
from ..ai.models import SPEC_HELP, model_from_spec
from ..session import SettingsError
from ._controller import NotebookAgent, default_faux, get_agent
from ._run import Run

__all__ = ["USAGE", "PiMagics", "pi_transformer"]

USAGE = f"""\
usage:
  %pi <prompt>              start a run (while one is active: queue <prompt> as a follow-up)
  %%pi                      the cell body is the prompt
  %pi steer <text>          deliver <text> after the current turn
  %pi follow <text>         deliver <text> when the agent would stop
  %pi abort                 stop the active run (queued messages are handed back)
  %pi continue              continue from the transcript (queued messages first)
  %pi compact [FOCUS]       summarise the older transcript now (FOCUS: what the summary should keep)
  %pi wait                  wait for the active run to settle and show its report
  %pi status                session state, model, queue, budget
  %pi events [N]            the event log and transcript of run N (default: the last)
  %pi queue                 the queued steering and follow-up messages
  %pi clear-queue           take every queued message back
  %pi model [SPEC]          show or set the model ({SPEC_HELP})
  %pi settings [KEY=VALUE]  show settings, or change some (e.g. retry.max_retries=5 budget.max_cost_usd=0.5)
  %pi interrupt on|off      make the kernel's interrupt button stop active runs while the kernel is idle
  %pi cassette PATH [--mode once|none|all|new] [--timing fast|real]
                            record runs' HTTP exchanges to PATH, or replay them from it (no key, no network)
  %pi cassette [off]        show the cassette in use, or stop using one
  %pi help                  this text
A prompt that starts with one of these words: %pi -- steer the ship"""

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
        if rest == "wait":
            call = "await " + call
        out.append(f"{match['indent']}{match['assign'] or ''}{call}\n")
    return out


class _Ready:
    """An awaitable that is already done, so ``await %pi wait`` works with or without an active run."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Any:
        return self.value
        yield  # makes this a generator function


class UsageError(Exception):
    """Bad arguments: print the message and the usage."""


@magics_class
class PiMagics(Magics):
    # IPython 8.12 (what CI has) ships this decorator untyped; IPython 9 types it, hence unused-ignore.
    @line_cell_magic  # type: ignore[untyped-decorator, unused-ignore]
    def pi(self, line: str, cell: str | None = None) -> Any:
        """Run and control agent runs; ``%pi help`` lists the sub-commands."""
        try:
            if cell is not None:
                if line.strip():
                    raise UsageError("%%pi takes no arguments; the cell body is the prompt")
                return self._prompt(cell)
            return self._dispatch(line)
        except UsageError as exc:
            print(f"pi: {exc}\n\n{USAGE}")  # noqa: T201 - magics talk to the user through stdout
        except (ValueError, SettingsError, RuntimeError) as exc:
            print(f"pi: {exc}")  # noqa: T201
        except Exception as exc:  # never a bare traceback from a magic
            print(f"pi: internal error ({type(exc).__name__}): {exc}")  # noqa: T201
        return None

    def _dispatch(self, line: str) -> Any:
        text = line.strip()
        if not text:
            raise UsageError("nothing to do")
        word, _, rest = text.partition(" ")
        rest = rest.strip()
        if word == "--":
            return self._prompt(rest)
        command = self._commands().get(word)
        if command is None:
            return self._prompt(text)
        return command(rest)

    def _commands(self) -> dict[str, Callable[[str], Any]]:
        return {
            "steer": self._steer,
            "follow": self._follow,
            "abort": self._abort,
            "continue": self._continue,
            "compact": self._compact,
            "wait": self._wait,
            "status": self._status,
            "events": self._events,
            "queue": self._queue,
            "clear-queue": self._clear_queue,
            "model": self._model,
            "settings": self._settings,
            "interrupt": self._interrupt,
            "cassette": self._cassette,
            "help": lambda rest: print(USAGE),  # noqa: T201
        }

    # -- runs -------------------------------------------------------------------------------------------
    def _prompt(self, text: str) -> Run | None:
        text = text.strip()
        if not text:
            raise UsageError("empty prompt")
        agent = get_agent()
        if agent.busy:
            _await_now(agent.session.follow_up(text))
            print(f"pi: a run is active; queued as a follow-up: {text!r}")  # noqa: T201
            return None
        return _start(agent, text, lambda: agent.session.prompt(text))

    def _continue(self, rest: str) -> Run | None:
        _no_args("continue", rest)
        agent = get_agent()
        if agent.busy:
            raise RuntimeError("a run is active; it continues on its own")
        return _start(agent, "(continue)", agent.session.continue_)

    def _compact(self, rest: str) -> Run | None:
        agent = get_agent()
        if agent.busy:
            raise RuntimeError("a run is active; %pi abort it (or %pi wait) before compacting")
        session = agent.session
        if session.compaction_plan() is None:
            keep = session.settings.compaction.keep_recent_tokens
            print(f"pi: nothing to compact (the transcript fits in compaction.keep_recent_tokens = {keep})")  # noqa: T201
            return None
        focus = rest or None
        return _start(agent, "(compact)" + (f" {rest}" if rest else ""), lambda: session.compact(focus))

    def _steer(self, rest: str) -> None:
        if not rest:
            raise UsageError("steer needs the text to deliver")
        _await_now(get_agent().session.steer(rest))
        print(f"pi: steering queued: {rest!r}")  # noqa: T201

    def _follow(self, rest: str) -> None:
        if not rest:
            raise UsageError("follow needs the text to deliver")
        _await_now(get_agent().session.follow_up(rest))
        print(f"pi: follow-up queued: {rest!r}")  # noqa: T201

    def _abort(self, rest: str) -> None:
        _no_args("abort", rest)
        agent = get_agent()
        run = agent.active_run
        if run is None and agent.session.is_idle:
            print("pi: nothing to abort")  # noqa: T201
            return
        if run is not None:
            run.abort()
        else:
            _await_now(agent.session.abort())
        print("pi: stopping")  # noqa: T201

    def _wait(self, rest: str) -> Any:
        _no_args("wait", rest)
        agent = get_agent()
        run = agent.current_run
        if run is None:
            print("pi: no run yet")  # noqa: T201
            return _Ready(None)
        if run.done:
            return _Ready(run.report())
        return run  # awaited by the cell (see pi_transformer)

    # -- inspection -------------------------------------------------------------------------------------
    def _status(self, rest: str) -> None:
        _no_args("status", rest)
        agent = get_agent()
        session = agent.session
        run = agent.active_run
        state = "idle" if session.is_idle else ("retrying" if session.is_retrying else "running")
        queue = session.queue
        lines = [
            f"state: {state}" + (f" (run {run.number})" if run else ""),
            f"model: {agent.model_spec} ({session.model.api}, {session.model.id})",
            f"runs: {len(agent.runs)}; transcript: {len(session.messages)} messages",
            f"queue: {len(queue.steering)} steering, {len(queue.follow_up)} follow-up",
            f"interrupt hook: {'on' if agent.interrupt_hook else 'off'}",
        ]
        if run is not None:
            lines.append(f"usage: {run.usage_line()}")
        print("\n".join(lines))  # noqa: T201

    def _events(self, rest: str) -> None:
        agent = get_agent()
        if not agent.runs:
            print("pi: no run yet")  # noqa: T201
            return
        if rest:
            try:
                number = int(rest)
                run = agent.runs[number - 1]
            except (ValueError, IndexError):
                raise UsageError(f"no run {rest!r} (runs: 1..{len(agent.runs)})") from None
        else:
            run = agent.runs[-1]
        _show(run.report())

    def _queue(self, rest: str) -> None:
        _no_args("queue", rest)
        queue = get_agent().session.queue
        if not queue.steering and not queue.follow_up:
            print("pi: the queue is empty")  # noqa: T201
            return
        for text in queue.steering:
            print(f"steer: {text}")  # noqa: T201
        for text in queue.follow_up:
            print(f"follow-up: {text}")  # noqa: T201

    def _clear_queue(self, rest: str) -> None:
        _no_args("clear-queue", rest)
        snapshot = get_agent().session.clear_queue()
        taken = [*snapshot.steering, *snapshot.follow_up]
        print("pi: " + (f"took back {len(taken)}: " + "; ".join(map(repr, taken)) if taken else "the queue was empty"))  # noqa: T201

    # -- configuration ----------------------------------------------------------------------------------
    def _model(self, rest: str) -> None:
        agent = get_agent()
        if not rest:
            print(f"pi: model {agent.model_spec} ({agent.session.model.api}, {agent.session.model.id})")  # noqa: T201
            return
        if agent.busy:
            raise RuntimeError("a run is active; wait for it (or abort) before switching models")
        _set_model(agent, rest)
        print(f"pi: model set to {agent.model_spec}")  # noqa: T201

    def _settings(self, rest: str) -> None:
        agent = get_agent()
        if not rest:
            print(agent.session.settings.model_dump_json(indent=2))  # noqa: T201
            return
        changes: dict[str, Any] = {}
        for item in shlex.split(rest):
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise UsageError(f"expected KEY=VALUE, got {item!r}")
            node = changes
            parts = key.split(".")
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = None if value.lower() in ("none", "null") else value
        if agent.busy:
            raise RuntimeError("a run is active; change settings once it has settled")
        agent.session.settings = agent.session.settings.updated(**changes)
        print(f"pi: settings updated: {rest}")  # noqa: T201

    def _interrupt(self, rest: str) -> None:
        if rest not in ("on", "off"):
            raise UsageError("interrupt takes 'on' or 'off'")
        _require_loop("%pi interrupt")
        get_agent().set_interrupt_hook(rest == "on", kernel=getattr(self.shell, "kernel", None))
        print(f"pi: interrupt hook {rest}")  # noqa: T201

    def _cassette(self, rest: str) -> None:
        """``%pi cassette PATH [--mode M] [--timing T]``, ``%pi cassette off``, or ``%pi cassette`` (show)."""

        class Parser(argparse.ArgumentParser):
            def error(self, message: str) -> NoReturn:
                raise UsageError(f"cassette: {message}")

        parser = Parser(prog="%pi cassette", add_help=False)
        parser.add_argument("path")
        parser.add_argument("--mode", choices=("once", "none", "all", "new"), default="once")
        parser.add_argument("--timing", choices=("fast", "real"), default="fast")
        agent = get_agent()
        if not rest:
            print(f"pi: {agent.cassette.describe()}" if agent.cassette else "pi: no cassette (runs call out)")  # noqa: T201
            return
        if agent.busy:
            raise RuntimeError("a run is active; wait for it (or abort) before changing the cassette")
        if rest == "off":
            agent.cassette = None
            print("pi: cassette off (runs call out)")  # noqa: T201
            return
        args = parser.parse_args(shlex.split(rest))
        try:
            cassette = Cassette(args.path, mode=args.mode, timing=args.timing).load()
        except CassetteError as exc:
            raise RuntimeError(str(exc)) from None
        agent.cassette = cassette
        print(f"pi: {cassette.describe()}")  # noqa: T201


def _show(value: Any) -> None:
    display(value)  # type: ignore[no-untyped-call]


def _no_args(command: str, rest: str) -> None:
    if rest:
        raise UsageError(f"{command} takes no arguments")


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _require_loop(what: str) -> None:
    if _running_loop() is None:
        raise RuntimeError(f"{what} needs a running event loop (a Jupyter kernel)")


def _await_now(coroutine: Any) -> None:
    """Run a quick coroutine (queueing, abort) from a magic: scheduled on the kernel loop, or run to the end
    when there is no loop."""
    loop = _running_loop()
    if loop is None:
        asyncio.run(coroutine)
    else:
        task = loop.create_task(coroutine)
        _background.add(task)
        task.add_done_callback(_background.discard)


_background: set[asyncio.Task[Any]] = set()


def _start(agent: NotebookAgent, label: str, operation: Callable[[], Any]) -> Run | None:
    if _running_loop() is not None:
        return agent.start(label, operation)

    async def complete() -> Any:  # plain IPython: no loop outlives the cell, so run to the end here
        run = agent.start(label, operation, with_view=False)
        return await run

    report = asyncio.run(complete())
    _show(report)
    return None


def _set_model(agent: NotebookAgent, spec: str) -> None:
    spec = spec.strip()
    session = agent.session
    if spec == "faux":
        faux = agent.faux or default_faux()
        session.model, session.agent.stream_fn = faux.model, faux.stream
        agent.faux = faux
    else:
        model = model_from_spec(spec)
        session.model, session.agent.stream_fn = model, default_stream
    agent.model_spec = spec
