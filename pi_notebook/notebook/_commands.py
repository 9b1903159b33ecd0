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
message; argparse never prints or exits here. A first word one slip away from a command (``%pi stauts``, ``%pi
modle openai:gpt-4o``) is not sent to the model: it is an error asking "did you mean" (:func:`near_command`), and a
misspelt flag of ``model`` or ``cassette`` names the flag it is close to.
"""

from __future__ import annotations

import argparse
import difflib
import re
import shlex
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, NoReturn, TypeAlias, get_args

from ..ai import UserError
from ..ai.models import SPEC_HELP

__all__ = ["USAGE", "CommandName", "PiCommand", "UsageError", "near_command", "parse_cell_line", "parse_line"]

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
  %pi status                session state, model, queue, budget, what the runs' checkpoints hold
  %pi rewind [N]            undo the last run (or run N and every later one): files, cells, variables and the
                            conversation go back to before it; the receipt says what could not, and why
  %pi events [N]            the event log and transcript of run N (default: the last)
  %pi tree                  the session tree: its prompts (numbered, with their ids), where branches part, the
                            current branch
  %pi fork N [--no-summary] [PROMPT]
                            continue from before prompt N (its number in %pi tree, or its id); the branch left
                            behind is summarised, as Pi does (--no-summary: not); then PROMPT is sent, or the old
                            prompt comes back in the run's box to edit and send
  %pi queue                 the queued steering and follow-up messages
  %pi clear-queue           take every queued message back
  %pi model [SPEC]          show or set the model
{_MODEL_SPECS}
  %pi model SPEC [--context-window N] [--max-tokens N] [--key-env VAR] [--base-url URL] [--from-server]
                            the model's context window and output limit in tokens, the environment variable
                            holding its key, another server speaking the spec's API (e.g. a LiteLLM proxy's
                            /v1 for openai-responses:); --from-server reads the window from the server's /models
  %pi settings [KEY=VALUE]  show settings, or change some (e.g. retry.max_retries=5 budget.max_cost_usd=0.5)
  %pi adopt NAME            copy variable NAME from the agent's scratch namespace (python.namespace=scratch) to yours
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
    "rewind",
    "adopt",
    "events",
    "tree",
    "fork",
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
    """Bad ``%pi`` arguments; the message is one line (the magic adds a pointer to ``%pi help``)."""


@dataclass(frozen=True, slots=True)
class PiCommand:
    """One parsed ``%pi`` line.

    ``text`` is the verbatim text argument: the prompt, the steer or follow-up text, the compaction focus, the
    model spec, the settings' ``KEY=VALUE`` list or the interrupt switch (``""`` when none was given).
    ``number`` is the run number of ``events`` and ``rewind``. ``flags`` holds a sub-command's own flags, by name, as
    strings (``cassette``'s ``mode`` and ``timing``; ``model``'s ``context_window``, ``max_tokens`` (validated positive
    integers), ``key_env``, ``base_url`` and ``from_server`` (``"true"`` when given); ``fork``'s ``entry`` and
    ``no_summary``; its ``text`` is the prompt to send after it). ``session`` is the
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
# number), "cassette" (an optional path and its flags), "model" (an optional spec and its flags), "fork" (an entry id,
# a flag and a prompt: _fork_command) or "none".
_SPECS: dict[CommandName, Literal["text", "number", "cassette", "model", "fork", "none"]] = {
    "steer": "text",
    "follow": "text",
    "abort": "none",
    "continue": "none",
    "compact": "text",
    "wait": "none",
    "status": "none",
    "rewind": "number",
    "adopt": "text",
    "events": "number",
    "tree": "none",
    "fork": "fork",
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


_SUBPARSERS: dict[CommandName, argparse.ArgumentParser] = {}


def _build() -> tuple[_Parser, _Parser]:
    """The parser of the options and the words after them, and the parser of the sub-commands."""
    head = _Parser(prog="%pi", add_help=False)
    _options(head)
    head.add_argument("words", nargs=argparse.REMAINDER)
    commands = _Parser(prog="%pi", add_help=False)
    sub = commands.add_subparsers(dest="command", parser_class=_Parser)
    for name, kind in _SPECS.items():
        parser = _SUBPARSERS[name] = sub.add_parser(name, add_help=False, prog=f"%pi {name}")
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
        if (meant := near_command(first, words[1:])) is not None:
            prompt = f"{first} ..." if words[1:] else first
            raise UsageError(
                f"did you mean %pi {meant}? ({first!r} is not a command; to send it to the model: %pi -- {prompt})"
            )
        return PiCommand("prompt", verbatim(words), session=head.session)
    if first == "fork":
        return _fork_command(words[1:], verbatim, head.session)
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
        raise _extra_words(name, extra)
    if _SPECS[name] == "cassette":
        flags = {flag: getattr(parsed, flag) for flag in ("mode", "timing") if getattr(parsed, flag) is not None}
        return PiCommand(name, parsed.path, flags=flags, session=parsed.session or head.session)
    if _SPECS[name] == "model":
        values = {flag: getattr(parsed, flag) for flag in _MODEL_FLAGS}
        flags = {flag: str(value).lower() if value is True else str(value) for flag, value in values.items() if value}
        return PiCommand(name, parsed.spec, flags=flags, session=parsed.session or head.session)
    text = verbatim(getattr(parsed, "text", []))
    return PiCommand(name, text, getattr(parsed, "number", None), session=parsed.session or head.session)


def _extra_words(name: CommandName, extra: list[str]) -> UsageError:
    """What to say of words ``name`` does not take, by the kind of its arguments."""
    kind = _SPECS[name]
    if kind == "none":
        return UsageError(f"{name} takes no arguments")
    if kind == "number":
        return UsageError(f"{name} takes at most one run number, got {' '.join(extra)!r}")
    if kind in ("cassette", "model"):
        return UsageError(f"{name}: unrecognized arguments: {' '.join(extra)}{_flag_hint(name, extra)}")
    return UsageError(f"{name}: unknown option {extra[0]!r} (a text that starts with a dash: %pi {name} -- <text>)")


_ARGUMENTS: dict[CommandName, Callable[[list[str]], bool]] = {
    "model": lambda rest: ":" in rest[0] or rest[0].startswith("--") or rest[0] == "faux",
    "settings": lambda rest: all("=" in word for word in rest),
    "events": lambda rest: len(rest) == 1 and rest[0].isdigit(),
    "interrupt": lambda rest: rest in (["on"], ["off"]),
    "cassette": lambda rest: rest[0] == "off" or rest[0].endswith(".jsonl") or rest[0].startswith("--"),
    "resume": lambda rest: len(rest) == 1 and bool(re.fullmatch(r"latest|\d+|[0-9a-f]{4,}|\S+\.jsonl", rest[0])),
}
"""For a near-miss of a command word followed by more words: whether those words read as that command's
arguments (``%pi modle openai:gpt-4o``), not as the rest of a sentence (``%pi about the data``)."""


def near_command(word: str, rest: list[str]) -> CommandName | None:
    """The sub-command ``word`` is one slip away from (a letter missing, extra, wrong, or two swapped:
    ``stauts``, ``setings``, ``modle``), when the line reads as that command: ``word`` alone, or followed by what
    the command takes. Words of under four letters are never taken for one (``now``, ``us`` are words)."""
    if len(word) < 4:
        return None
    for name in _SPECS:  # (a length more than one apart is more than one edit away: a long prompt costs nothing)
        if len(name) < 4 or abs(len(word) - len(name)) > 1 or _distance(word.lower(), name) != 1:
            continue
        fits = _ARGUMENTS.get(name)
        if not rest or (fits is not None and fits(rest)):
            return name
    return None


def _distance(a: str, b: str) -> int:
    """Edits (insert, delete, replace, swap two neighbours) that make ``a`` into ``b`` (optimal string alignment)."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        row = [i]
        for j, y in enumerate(b, 1):
            cost = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (x != y))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                cost = min(cost, previous2[j - 2] + 1)
            row.append(cost)
        previous2, previous = previous, row
    return previous[-1]


def _flag_hint(name: CommandName, extra: list[str]) -> str:
    """`` (did you mean --context-window?)`` for a misspelt flag of ``model`` or ``cassette``."""
    flags = [flag for action in _SUBPARSERS[name]._actions for flag in action.option_strings]
    for word in extra:
        if word.startswith("--"):
            close = difflib.get_close_matches(word.split("=", 1)[0], flags, n=1, cutoff=0.7)
            if close:
                return f" (did you mean {close[0]}?)"
    return ""


def _fork_command(words: list[str], verbatim: Callable[[list[str]], str], session: str | None) -> PiCommand:
    """``fork [--no-summary] [-s NAME] N [--no-summary] [--] [PROMPT]``: the options may come before or after the
    prompt's number (or id); the prompt to send is the rest of the line, verbatim."""
    flags: dict[str, str] = {}
    rest = list(words)
    while rest:
        word = rest[0]
        if word == "--no-summary":
            flags["no_summary"] = "true"
        elif word in ("-s", "--session") and len(rest) > 1:
            session = _session_name_or_usage(rest[1])
            rest = rest[1:]
        elif word.startswith("-") and word != "--":
            raise UsageError(
                f"fork: unknown option {word!r} (a prompt that starts with a dash: %pi fork ID -- <prompt>)"
            )
        elif "entry" not in flags and word != "--":
            flags["entry"] = word
        else:
            break
        rest = rest[1:]
    if "entry" not in flags:
        raise UsageError("fork needs the number or id of a prompt (%pi tree lists them)")
    return PiCommand("fork", verbatim(rest), flags=flags, session=session)


def _session_name_or_usage(text: str) -> str:
    try:
        return _session_name(text)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(str(exc)) from None


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
