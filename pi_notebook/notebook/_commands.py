"""The ``%pi`` command line, read by one argparse parser: sub-commands, their arguments, and prompts.

    %pi [OPTIONS] COMMAND [ARGS]     a sub-command (``steer``, ``status``, ...; see :data:`USAGE`)
    %pi [OPTIONS] <prompt>           anything else is a prompt
    %pi [OPTIONS] -- <prompt>        a prompt that starts with a command word or a dash

A text argument may start with ``--`` too (``%pi steer -- -v is fine``); the ``--`` is dropped.

Options shared by every form go in :func:`_options` (``-s NAME``: the named session the line acts on; a flag
added there is accepted before the command word and after it); a sub-command's own flags go in :data:`_SPECS`.
Text arguments (prompts, steer
and follow-up texts, the compaction focus, settings) are taken verbatim from the line — quotes, ``?`` and
spacing kept — not re-joined from split words. Every parse error is a :class:`UsageError` with a one-line
message; argparse never prints or exits here.
"""

from __future__ import annotations

import argparse
import re
import shlex
import textwrap
from dataclasses import dataclass, field
from typing import Literal, NoReturn, TypeAlias, get_args

from ..ai import UserError
from ..ai.models import SPEC_HELP

__all__ = ["USAGE", "CommandName", "PiCommand", "UsageError", "parse_cell_line", "parse_line"]

_MODEL_SPECS = textwrap.fill(
    SPEC_HELP,
    width=112,
    initial_indent=" " * 28,
    subsequent_indent=" " * 28,
    break_on_hyphens=False,
    break_long_words=False,
)
"""The model specs, wrapped under ``%pi model`` (each line of the help fits a notebook's output)."""

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
  %pi model [SPEC]          show or set the model
{_MODEL_SPECS}
  %pi model SPEC [--context-window N] [--max-tokens N] [--key-env VAR] [--base-url URL] [--from-server]
                            the model's context window and output limit in tokens, the environment variable
                            holding its key, another server speaking the spec's API (e.g. a LiteLLM proxy's
                            /v1 for openai-responses:); --from-server reads the window from the server's /models
  %pi settings [KEY=VALUE]  show settings, or change some (e.g. retry.max_retries=5 budget.max_cost_usd=0.5)
  %pi tools                 the agent's tools and whether each asks before it runs (tools.approval=ask|auto)
  %pi interrupt on|off      make the kernel's interrupt button stop active runs while the kernel is idle
  %pi cassette PATH [--mode once|none|all|new] [--timing fast|real]
                            record runs' HTTP exchanges to PATH, or replay them from it (no key, no network)
  %pi cassette [off]        show the cassette in use, or stop using one
  %pi sessions              the saved sessions of this working directory, newest first
  %pi resume [latest|N|ID|PATH]
                            load a saved session (default: the newest not in use) and replay it
  %pi new                   start a fresh session (new file; the previous one is kept)
  %pi use [NAME]            make session NAME the default of %pi (created on first use); no NAME: list them
  %pi mcp add NAME [--env VAR[=VALUE]] [--cwd DIR] [--timeout-ms N] -- COMMAND [ARGS...]
                            start an MCP server (stdio); its tools are offered as mcp__NAME__TOOL
  %pi mcp add NAME URL [--header 'Name: Bearer ${{VAR}}'] [--timeout-ms N]
                            connect a streamable HTTP MCP server (keys as ${{VAR}}, from the environment)
  %pi mcp list|tools NAME|remove NAME|restart NAME
                            the MCP servers (state, tool count), a server's tools, stop one (its processes killed)
  %pi -s NAME ...           any command or prompt on session NAME (%%pi -s NAME for a cell)
  %pi help                  this text
A prompt that starts with one of these words (or a dash): %pi -- steer the ship"""

CommandName: TypeAlias = Literal[
    "prompt",
    "steer",
    "follow",
    "abort",
    "continue",
    "compact",
    "wait",
    "status",
    "events",
    "queue",
    "clear-queue",
    "model",
    "settings",
    "tools",
    "interrupt",
    "cassette",
    "sessions",
    "resume",
    "new",
    "use",
    "mcp",
    "help",
]


class UsageError(UserError):
    """Bad ``%pi`` arguments; the message is one line, meant to be printed with :data:`USAGE`."""


@dataclass(frozen=True, slots=True)
class PiCommand:
    """One parsed ``%pi`` line.

    ``text`` is the verbatim text argument: the prompt, the steer or follow-up text, the compaction focus, the
    model spec, the settings' ``KEY=VALUE`` list or the interrupt switch (``""`` when none was given).
    ``number`` is the run number of ``events``. ``flags`` holds a sub-command's own flags, by name, as strings
    (``cassette``'s ``mode`` and ``timing``; ``model``'s ``context_window``, ``max_tokens`` (validated positive
    integers), ``key_env``, ``base_url`` and ``from_server`` (``"true"`` when given)). ``session`` is the
    ``-s NAME`` option (``None``: the current session).
    """

    name: CommandName
    text: str = ""
    number: int | None = None
    flags: dict[str, str] = field(default_factory=dict)
    session: str | None = None


class _Parser(argparse.ArgumentParser):
    """argparse that raises :class:`UsageError` instead of printing and exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError((message or "").strip() or "bad arguments")


def _options(parser: argparse.ArgumentParser) -> None:
    """Flags every form of ``%pi`` takes (before the command word, or after it)."""
    parser.add_argument("-s", "--session", metavar="NAME", type=_session_name)


def _session_name(text: str) -> str:
    if not re.fullmatch(r"[\w.-]{1,64}", text):
        raise argparse.ArgumentTypeError(f"bad session name {text!r} (letters, digits, '_', '-', '.')")
    return text


# name -> how its arguments are read: "text" (the rest of the line, verbatim), "number" (an optional run
# number), "cassette" (an optional path and its flags), "model" (an optional spec and its flags) or "none".
_SPECS: dict[CommandName, Literal["text", "number", "cassette", "model", "none"]] = {
    "steer": "text",
    "follow": "text",
    "abort": "none",
    "continue": "none",
    "compact": "text",
    "wait": "none",
    "status": "none",
    "events": "number",
    "queue": "none",
    "clear-queue": "none",
    "model": "model",
    "settings": "text",
    "tools": "none",
    "interrupt": "text",
    "cassette": "cassette",
    "sessions": "none",
    "resume": "text",
    "new": "none",
    "use": "text",
    "mcp": "text",
    "help": "none",
}
assert set(_SPECS) == set(get_args(CommandName)) - {"prompt"}


def _build() -> tuple[_Parser, _Parser]:
    """The parser of the options and the words after them, and the parser of the sub-commands."""
    head = _Parser(prog="%pi", add_help=False)
    _options(head)
    head.add_argument("words", nargs=argparse.REMAINDER)
    commands = _Parser(prog="%pi", add_help=False)
    sub = commands.add_subparsers(dest="command", parser_class=_Parser)
    for name, kind in _SPECS.items():
        parser = sub.add_parser(name, add_help=False, prog=f"%pi {name}")
        _options(parser)
        if kind == "text":
            parser.add_argument("text", nargs=argparse.REMAINDER)
        elif kind == "number":
            parser.add_argument("number", nargs="?", type=int)
        elif kind == "cassette":
            parser.add_argument("path", nargs="?", default="")
            parser.add_argument("--mode", choices=("once", "none", "all", "new"))
            parser.add_argument("--timing", choices=("fast", "real"))
        elif kind == "model":
            parser.add_argument("spec", nargs="?", default="")
            parser.add_argument("--context-window", type=_tokens, metavar="N")
            parser.add_argument("--max-tokens", type=_tokens, metavar="N")
            parser.add_argument("--key-env", metavar="VAR")
            parser.add_argument("--base-url", metavar="URL")
            parser.add_argument("--from-server", action="store_true")
    return head, commands


_MODEL_FLAGS = ("context_window", "max_tokens", "key_env", "base_url", "from_server")


def _tokens(value: str) -> int:
    """A positive number of tokens (``2048``, ``2_048``), for argparse."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of tokens, got {value!r}")
    return number


_HEAD, _COMMANDS = _build()
_WORD = re.compile(r"\S+")


def parse_line(line: str) -> PiCommand:
    """Read a ``%pi`` line (see the module docstring). Raises :class:`UsageError`."""
    spans = [(match.start(), match.group()) for match in _WORD.finditer(line)]
    try:
        head = _HEAD.parse_args([word for _, word in spans])
        words: list[str] = head.words
    except UsageError as exc:
        raise UsageError(f"{exc} (a prompt that starts with a dash: %pi -- <prompt>)") from None
    if not words:
        raise UsageError("nothing to do")

    def verbatim(rest: list[str]) -> str:
        """The line from the first of ``rest`` (a tail of its words) on, as typed; a leading ``--`` dropped."""
        if rest and rest[0] == "--":
            rest = rest[1:]
        return line[spans[len(spans) - len(rest)][0] :].strip() if rest else ""

    first = words[0]
    if first not in _SPECS:
        return PiCommand("prompt", verbatim(words), session=head.session)
    if _SPECS[first] == "cassette":  # a path may be quoted, as in a shell: '%pi cassette "my runs.jsonl"'
        try:
            words = [first, *shlex.split(line[spans[len(spans) - len(words) + 1][0] :] if words[1:] else "")]
        except ValueError as exc:
            raise UsageError(f"{first}: {exc}") from None
    try:
        parsed, extra = _COMMANDS.parse_known_args(words)
    except UsageError as exc:
        raise UsageError(f"{first}: {exc}") from None
    name: CommandName = parsed.command
    if extra:
        kind = _SPECS[name]
        if kind == "none":
            raise UsageError(f"{name} takes no arguments")
        if kind == "number":
            raise UsageError(f"{name} takes at most one run number, got {' '.join(extra)!r}")
        if kind in ("cassette", "model"):
            raise UsageError(f"{name}: unrecognized arguments: {' '.join(extra)}")
        raise UsageError(f"{name}: unknown option {extra[0]!r} (a text that starts with a dash: %pi {name} -- <text>)")
    if _SPECS[name] == "cassette":
        flags = {flag: getattr(parsed, flag) for flag in ("mode", "timing") if getattr(parsed, flag) is not None}
        return PiCommand(name, parsed.path, flags=flags, session=parsed.session or head.session)
    if _SPECS[name] == "model":
        values = {flag: getattr(parsed, flag) for flag in _MODEL_FLAGS}
        flags = {flag: str(value).lower() if value is True else str(value) for flag, value in values.items() if value}
        return PiCommand(name, parsed.spec, flags=flags, session=parsed.session or head.session)
    text = verbatim(getattr(parsed, "text", []))
    return PiCommand(name, text, getattr(parsed, "number", None), session=parsed.session or head.session)


def parse_cell_line(line: str) -> str | None:
    """Read the line of a ``%%pi`` cell: options only (the cell body is the prompt); returns the ``-s NAME``
    session (``None``: the current one). Raises :class:`UsageError`."""
    try:
        head = _HEAD.parse_args(line.split())
    except UsageError as exc:
        raise UsageError(f"%%pi takes no arguments; the cell body is the prompt (only -s NAME) ({exc})") from None
    if head.words:
        raise UsageError("%%pi takes no arguments; the cell body is the prompt (only -s NAME)")
    session: str | None = head.session
    return session
