"""Pi's ``grep`` tool: matching lines under a directory (or in one file), pure Python, no ripgrep needed.

``grep_tool(cwd)`` returns an :class:`~pi_notebook.agent.AgentTool` named ``grep`` with Pi 0.83's parameters
(``pattern``; optional ``path``, ``glob``, ``ignoreCase``, ``literal``, ``context``, ``limit``), description,
texts and result shape:

- Lines read ``src/app.py:12: text`` (paths relative to the searched directory; the file's name when a file
  was given), context lines ``src/app.py-11- text``; each match gets its own block, as in Pi. Lines over 500
  characters are cut (``... [truncated]``).
- At ``limit`` matches (default 100) the search stops; past 50 KB the output is cut at a whole line. Notices
  follow Pi's: ``[100 matches limit reached. Use limit=200 for more, or refine pattern]``,
  ``[50.0KB limit reached]``, ``[Some lines truncated to 500 chars. Use read tool to see full lines]``, with
  ``details`` ``{"matchLimitReached": 100, "truncation": {...}, "linesTruncated": true}`` (the parts that apply).
- No match: ``No matches found``. A missing path: ``Path not found: <abs>``.

What ripgrep does that this keeps: hidden files are searched, symlinks are not followed, binary files (a NUL
byte) are skipped, ``.gitignore`` / ``.ignore`` / ``.rgignore`` are honoured with ripgrep's rules (``_ignore``;
``.gitignore`` only inside a git repository), ``glob`` works like ``rg --glob`` (matched against the path
relative to the tool's ``cwd``, or the name alone when it has no ``/``; ``!`` excludes; it overrides ignore
files), each line counts once however often it matches, matches never span lines (``_search``).

Differences: the pattern is a Python ``regex`` pattern, not Rust's (the usual syntax is the same; look-around
and back-references work here, ``rg`` rejects them), and an invalid one reads ``regex parse error: ...`` with
Python's explanation; a pattern that names a newline reads ``the literal "\\n" is not allowed in a regex (grep
matches within one line)`` (ripgrep's first line; its advice to use ``--multiline`` does not apply). Files are
searched one by one in a fixed order (sorted by path, depth first) where
ripgrep searches in parallel and its order varies. A search slower than 10 s on one block (catastrophic
backtracking) fails with an error. A device, pipe or socket given as ``path`` is refused (ripgrep would read
it and may never finish), and so is a file whose read can block forever (``/proc/kmsg``; under a directory such
a file is skipped). The abort signal is checked between files and blocks; the tool returns at once on
abort.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

from ..agent import AgentTool, AgentToolResult, ToolPrompt
from ..ai import AbortSignal, TextContent
from ._common import (
    FileToolError,
    Stop,
    in_thread,
    js_number,
    not_regular,
    optional_number,
    optional_string,
    required_string,
)
from ._ignore import IgnoreRules, PatternSet
from ._output import DEFAULT_MAX_BYTES, format_size
from ._paths import display_name, resolve_to_cwd
from ._search import LineMatch, file_lines, search_file
from ._sensitive import looking_tool
from ._truncate import GREP_MAX_LINE_LENGTH, MAX_SAFE_INTEGER, truncate_head, truncate_line
from ._walk import walk

__all__ = ["grep_tool"]

DEFAULT_LIMIT = 100
SEARCH_TIMEOUT_S = 10.0
DESCRIPTION = (
    "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects "
    f".gitignore. Output is truncated to {DEFAULT_LIMIT} matches or {DEFAULT_MAX_BYTES // 1024}KB (whichever is "
    f"hit first). Long lines are truncated to {GREP_MAX_LINE_LENGTH} chars."
)
PROMPT = ToolPrompt("Search file contents for patterns (respects .gitignore)", ())
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["pattern"],
    "properties": {
        "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
        "path": {"type": "string", "description": "Directory or file to search (default: current directory)"},
        "glob": {"type": "string", "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'"},
        "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
        "literal": {
            "type": "boolean",
            "description": "Treat pattern as literal string instead of regex (default: false)",
        },
        "context": {
            "type": "number",
            "description": "Number of lines to show before and after each match (default: 0)",
        },
        "limit": {"type": "number", "description": "Maximum number of matches to return (default: 100)"},
    },
}


@dataclass(frozen=True, slots=True)
class _Query:
    cwd: str
    pattern: str
    path: str | None
    glob: str | None
    ignore_case: bool
    literal: bool
    context: int
    limit: float


@dataclass(frozen=True, slots=True)
class _FileMatches:
    path: str
    shown_as: str
    matches: list[LineMatch]


_NEWLINE_ESCAPE = regex.compile(r"(?<!\\)(?:\\\\)*\\(?:n|x0[aA]|x\{0*[aA]\}|u000[aA])")
NEWLINE_REFUSED = 'the literal "\\n" is not allowed in a regex (grep matches within one line)'


def _compile(query: _Query) -> regex.Pattern[str]:
    if "\n" in query.pattern or (not query.literal and _NEWLINE_ESCAPE.search(query.pattern)):
        raise FileToolError(NEWLINE_REFUSED)  # ripgrep refuses these too: lines are searched one by one
    source = regex.escape(query.pattern) if query.literal else query.pattern
    flags = regex.MULTILINE | regex.V0 | (regex.IGNORECASE if query.ignore_case else 0)
    try:
        return regex.compile(source, flags)
    except (regex.error, ValueError, OverflowError) as exc:
        raise FileToolError(f"regex parse error:\n    {query.pattern}\nerror: {exc}") from None


def _override(glob: str, root: str, cwd: str) -> Callable[[str, bool], bool | None]:
    """``rg --glob``: a whitelist (or ``!`` exclusion) matched against paths relative to ``cwd``."""
    patterns = PatternSet([glob])
    whitelist = not glob.startswith("!")
    inside = os.path.relpath(root, cwd).replace(os.sep, "/")
    if inside == ".":
        prefix = ""
    elif inside == ".." or inside.startswith("../"):
        prefix = root.rstrip("/") + "/"  # outside cwd: ripgrep matches the absolute path
    else:
        prefix = inside + "/"

    def decide(rel: str, is_dir: bool) -> bool | None:
        found = patterns.match(prefix + rel, is_dir)
        if found is not None:
            return not found  # gitignore "ignored" means "listed" here: keep it, skipping the ignore files
        return True if whitelist and not is_dir else None

    return decide


def _collect(query: _Query, root: str, is_dir: bool, compiled: regex.Pattern[str], stop: Stop) -> list[_FileMatches]:
    limit = max(1, int(-(-query.limit // 1)))  # ripgrep stops at the first count >= limit
    found: list[_FileMatches] = []
    total = 0

    def search(path: str, shown_as: str, explicit: bool) -> None:
        nonlocal total
        try:
            matches = search_file(
                path, compiled, stop, limit=limit - total, binary_quit=not explicit, timeout_s=SEARCH_TIMEOUT_S
            )
        except TimeoutError:  # before OSError, its base class
            raise FileToolError(
                f"Search timed out in {shown_as}: the pattern is too slow on this file (catastrophic backtracking?). "
                "Simplify the pattern or use literal=true."
            ) from None
        except OSError:
            return  # unreadable files are skipped, as ripgrep does (it reports them on stderr)
        except FileToolError as refused:  # a file whose read could block forever (or the stop)
            if explicit or refused.aborted:
                raise FileToolError(str(refused).replace(path, query.path or path), refused.code) from None
            return
        if matches:
            found.append(_FileMatches(path, display_name(shown_as), matches))
            total += len(matches)

    if not is_dir:
        if not os.path.isfile(root):
            raise not_regular("search", query.path or root)
        search(root, os.path.basename(root), explicit=True)
        return found
    rules = IgnoreRules.for_root(root, "grep", require_git=True)
    override = _override(query.glob, root, query.cwd) if query.glob else None
    for entry in walk(root, rules, stop, override):
        if entry.is_file:
            search(entry.path, entry.rel, explicit=False)
            if total >= limit:
                break
    return found


def _format(found: list[_FileMatches], context: int, stop: Stop) -> tuple[list[str], bool]:
    out: list[str] = []
    cut = False
    for item in found:
        stop.check()
        lines: list[str] | None = None
        for match in item.matches:
            if context == 0:
                text, was_cut = truncate_line(match.text.replace("\r", ""))
                cut = cut or was_cut
                out.append(f"{item.shown_as}:{match.line_number}: {text}")
                continue
            if lines is None:
                try:
                    lines = file_lines(item.path)
                except OSError:
                    lines = []
            if not lines:
                out.append(f"{item.shown_as}:{match.line_number}: (unable to read file)")
                continue
            for number in range(max(1, match.line_number - context), min(len(lines), match.line_number + context) + 1):
                text, was_cut = truncate_line(lines[number - 1].replace("\r", "") if number <= len(lines) else "")
                cut = cut or was_cut
                sep = ":" if number == match.line_number else "-"
                out.append(f"{item.shown_as}{sep}{number}{sep} {text}")
    return out, cut


def _grep(query: _Query, stop: Stop) -> AgentToolResult:
    root = resolve_to_cwd(query.path or ".", query.cwd)
    try:
        is_dir = os.path.isdir(root) if os.path.exists(root) else None
    except OSError:
        is_dir = None
    if is_dir is None:
        raise FileToolError(f"Path not found: {root}", "ENOENT")
    compiled = _compile(query)
    found = _collect(query, root, is_dir, compiled, stop)
    if not found:
        return AgentToolResult(content=[TextContent(text="No matches found")], details=None)
    lines, lines_cut = _format(found, query.context, stop)
    limit = max(1.0, float(query.limit))
    limit_reached = sum(len(item.matches) for item in found) >= limit
    truncation = truncate_head("\n".join(lines), max_lines=MAX_SAFE_INTEGER)
    details: dict[str, Any] = {}
    notices = []
    if limit_reached:
        notices.append(
            f"{js_number(limit)} matches limit reached. Use limit={js_number(limit * 2)} for more, or refine pattern"
        )
        details["matchLimitReached"] = int(limit) if limit.is_integer() else limit
    if truncation.truncated:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = truncation.details()
    if lines_cut:
        notices.append(f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines")
        details["linesTruncated"] = True
    text = truncation.content + (f"\n\n[{'. '.join(notices)}]" if notices else "")
    return AgentToolResult(content=[TextContent(text=text)], details=details or None)


def grep_tool(cwd: str | Path | None = None) -> AgentTool:
    """Pi's ``grep`` tool resolving relative paths against ``cwd`` (``None``: the process's working directory at
    each call). See the module docstring; ``execute`` raises :class:`FileToolError` with Pi's texts.
    """
    root = None if cwd is None else os.fspath(cwd)

    async def execute(tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: Any) -> AgentToolResult:
        pattern = required_string(args, "pattern", "grep")
        context = optional_number(args, "context", "grep")
        limit = optional_number(args, "limit", "grep")
        query = _Query(
            cwd=root if root is not None else os.getcwd(),
            pattern=pattern,
            path=optional_string(args, "path", "grep"),
            glob=optional_string(args, "glob", "grep"),
            ignore_case=bool(args.get("ignoreCase")),
            literal=bool(args.get("literal")),
            context=int(context // 1) if context is not None and context > 0 else 0,
            limit=DEFAULT_LIMIT if limit is None else limit,
        )
        return await in_thread(lambda stop: _grep(query, stop), signal, abandon_on_abort=True)

    return looking_tool("grep", root, description=DESCRIPTION, parameters=PARAMETERS, prompt=PROMPT, execute=execute)
