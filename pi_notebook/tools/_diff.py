"""The ``edit`` tool's diffs, as Pi makes them with jsdiff 8 (``diffLines``, ``createTwoFilesPatch``).

``diff_lines`` ports jsdiff's Myers implementation step for step (same diagonal order, same tie-breaks, same
pruning), so the hunks are the ones Pi shows, not merely a valid diff: Python's ``difflib`` finds different
ones. ``generate_diff_string`` is Pi's numbered display diff (``details.diff``) and ``generate_unified_patch``
the unified patch (``details.patch``). ``stop.check()`` runs once per edit distance, so a huge rewrite can be
abandoned.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ._common import Stop

__all__ = ["Change", "diff_lines", "generate_diff_string", "generate_unified_patch"]

_LINE = re.compile(r"[^\n]*\n|[^\n]+")


@dataclass(slots=True)
class Change:
    value: str
    count: int
    added: bool
    removed: bool


class _Component:
    __slots__ = ("added", "count", "previous", "removed")

    def __init__(self, count: int, added: bool, removed: bool, previous: _Component | None) -> None:
        self.count = count
        self.added = added
        self.removed = removed
        self.previous = previous


class _Path:
    __slots__ = ("last", "old_pos")

    def __init__(self, old_pos: int, last: _Component | None) -> None:
        self.old_pos = old_pos
        self.last = last


def _tokenize(value: str) -> list[str]:
    """jsdiff's line tokens: each line with its ``\n`` (or ``\r\n``), the last one without if unterminated."""
    return _LINE.findall(value)


def _add_to_path(path: _Path, added: bool, removed: bool, old_pos_inc: int) -> _Path:
    last = path.last
    if last is not None and last.added == added and last.removed == removed:
        return _Path(path.old_pos + old_pos_inc, _Component(last.count + 1, added, removed, last.previous))
    return _Path(path.old_pos + old_pos_inc, _Component(1, added, removed, last))


def _common_run(old: list[str], old_start: int, new: list[str], new_start: int) -> int:
    """How many tokens from ``old[old_start:]`` and ``new[new_start:]`` are equal in a row (compared in blocks)."""
    limit = min(len(old) - old_start, len(new) - new_start)
    run = 0
    for step in (4096, 256, 16, 1):
        while (
            run + step <= limit
            and old[old_start + run : old_start + run + step] == new[new_start + run : new_start + run + step]
        ):
            run += step
    return run


def _extract_common(path: _Path, new: list[str], old: list[str], diagonal: int) -> int:
    old_pos = path.old_pos
    new_pos = old_pos - diagonal
    common = _common_run(old, old_pos + 1, new, new_pos + 1) if new_pos + 1 >= 0 else 0
    if common:
        path.last = _Component(common, False, False, path.last)
    path.old_pos = old_pos + common
    return new_pos + common


def _build(last: _Component | None, new: list[str], old: list[str]) -> list[Change]:
    components: list[_Component] = []
    while last is not None:
        components.append(last)
        last = last.previous
    components.reverse()
    changes: list[Change] = []
    new_pos = old_pos = 0
    for component in components:
        if not component.removed:
            value = "".join(new[new_pos : new_pos + component.count])
            new_pos += component.count
            if not component.added:
                old_pos += component.count
        else:
            value = "".join(old[old_pos : old_pos + component.count])
            old_pos += component.count
        changes.append(Change(value, component.count, component.added, component.removed))
    return changes


def _step(best: dict[int, _Path | None], diagonal: int, new: list[str], old: list[str]) -> _Path | None:
    """Extend the furthest path onto ``diagonal`` by one edit (jsdiff's choice); ``None`` if none can."""
    remove_path = best.get(diagonal - 1)
    add_path = best.get(diagonal + 1)
    if remove_path is not None:
        best[diagonal - 1] = None
    can_add = add_path is not None and 0 <= add_path.old_pos - diagonal < len(new)
    can_remove = remove_path is not None and remove_path.old_pos + 1 < len(old)
    if (
        add_path is not None
        and can_add
        and (remove_path is None or not can_remove or remove_path.old_pos < add_path.old_pos)
    ):
        return _add_to_path(add_path, True, False, 0)
    if remove_path is not None and can_remove:
        return _add_to_path(remove_path, False, True, 1)
    best[diagonal] = None
    return None


def diff_lines(old_text: str, new_text: str, stop: Stop | None = None) -> list[Change]:
    """jsdiff's ``diffLines(old, new)``: the changes turning ``old_text`` into ``new_text``, line by line."""
    old = _tokenize(old_text)
    new = _tokenize(new_text)
    new_len, old_len = len(new), len(old)
    best: dict[int, _Path | None] = {0: _Path(-1, None)}
    seed = best[0]
    assert seed is not None
    new_pos = _extract_common(seed, new, old, 0)
    if seed.old_pos + 1 >= old_len and new_pos + 1 >= new_len:
        return _build(seed.last, new, old)
    min_diagonal, max_diagonal = -math.inf, math.inf
    for edit_length in range(1, new_len + old_len + 1):
        if stop is not None:
            stop.check()
        diagonal = int(max(min_diagonal, -edit_length))
        while diagonal <= min(max_diagonal, edit_length):  # the bound moves inside the loop, as in jsdiff
            path = _step(best, diagonal, new, old)
            if path is not None:
                new_pos = _extract_common(path, new, old, diagonal)
                if path.old_pos + 1 >= old_len and new_pos + 1 >= new_len:
                    return _build(path.last, new, old)
                best[diagonal] = path
                if path.old_pos + 1 >= old_len:
                    max_diagonal = min(max_diagonal, diagonal - 1)
                if new_pos + 1 >= new_len:
                    min_diagonal = max(min_diagonal, diagonal + 1)
            diagonal += 2
    raise AssertionError("unreachable: the edit graph always has a path")  # pragma: no cover


def _numbered(sign: str, number: int | None, width: int, line: str) -> str:
    label = "" if number is None else str(number)
    return f"{sign}{label.rjust(width)} {line}"


def generate_diff_string(
    old_content: str,
    new_content: str,
    context_lines: int = 4,
    stop: Stop | None = None,
    changes: list[Change] | None = None,
) -> tuple[str, int | None]:
    """Pi's display diff (``+N line``, ``-N line``, `` N line``, `` ... `` for skipped context) and the first
    changed line number in the new file. ``changes``: ``diff_lines(old_content, new_content)`` if already made."""
    parts = diff_lines(old_content, new_content, stop) if changes is None else changes
    output: list[str] = []
    width = len(str(max(len(old_content.split("\n")), len(new_content.split("\n")))))
    old_line = new_line = 1
    last_was_change = False
    first_changed: int | None = None
    skipped = f" {''.rjust(width)} ..."
    for index, part in enumerate(parts):
        raw = part.value.split("\n")
        if raw[-1] == "":
            raw.pop()
        if part.added or part.removed:
            if first_changed is None:
                first_changed = new_line
            for line in raw:
                if part.added:
                    output.append(_numbered("+", new_line, width, line))
                    new_line += 1
                else:
                    output.append(_numbered("-", old_line, width, line))
                    old_line += 1
            last_was_change = True
            continue
        next_is_change = index < len(parts) - 1 and (parts[index + 1].added or parts[index + 1].removed)
        shown = _context_shown(raw, context_lines, last_was_change, next_is_change)
        if not last_was_change and not next_is_change:  # nothing shown of it, not even the ``...``
            old_line += len(raw)
            new_line += len(raw)
        hidden = len(raw) - sum(1 for line in shown if line is not None)
        for context_line in shown:
            if context_line is None:
                output.append(skipped)
                old_line += hidden
                new_line += hidden
            else:
                output.append(_numbered(" ", old_line, width, context_line))
                old_line += 1
                new_line += 1
        last_was_change = False
    return "\n".join(output), first_changed


def _context_shown(raw: list[str], context_lines: int, after_change: bool, before_change: bool) -> list[str | None]:
    """The lines of an unchanged stretch the diff shows: ``context_lines`` after a change and before the next,
    ``None`` where lines are skipped (one `` ... ``); none of a stretch next to no change."""
    if after_change and before_change and len(raw) <= context_lines * 2:
        return list(raw)
    if after_change and before_change:
        return [*raw[:context_lines], None, *raw[len(raw) - context_lines :]]
    if after_change:
        return [*raw[:context_lines], *([None] if len(raw) > context_lines else [])]
    if before_change:
        cut = max(0, len(raw) - context_lines)
        return [*([None] if cut > 0 else []), *raw[cut:]]
    return []


def _split_lines(text: str) -> list[str]:
    lines = [line + "\n" for line in text.split("\n")]
    if text.endswith("\n"):
        lines.pop()
    else:
        lines[-1] = lines[-1][:-1]
    return lines


@dataclass(slots=True)
class _Hunk:
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    lines: list[str]


def _hunks(changes: list[Change], context: int) -> list[_Hunk]:
    entries = [(change, _split_lines(change.value)) for change in changes]
    entries.append((Change("", 0, False, False), []))
    hunks: list[_Hunk] = []
    old_range_start = new_range_start = 0
    current: list[str] = []
    old_line = new_line = 1
    for index, (change, lines) in enumerate(entries):
        if change.added or change.removed:
            if not old_range_start:
                old_range_start, new_range_start = old_line, new_line
                if index > 0:
                    previous = entries[index - 1][1]
                    current = [" " + line for line in previous[-context:]] if context > 0 else []
                    old_range_start -= len(current)
                    new_range_start -= len(current)
            current.extend(("+" if change.added else "-") + line for line in lines)
            if change.added:
                new_line += len(lines)
            else:
                old_line += len(lines)
            continue
        if old_range_start:
            if len(lines) <= context * 2 and index < len(entries) - 2:
                current.extend(" " + line for line in lines)
            else:
                size = min(len(lines), context)
                current.extend(" " + line for line in lines[:size])
                hunks.append(
                    _Hunk(
                        old_range_start,
                        old_line - old_range_start + size,
                        new_range_start,
                        new_line - new_range_start + size,
                        current,
                    )
                )
                old_range_start = new_range_start = 0
                current = []
        old_line += len(lines)
        new_line += len(lines)
    return hunks


def _finish_lines(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line[:-1])
        else:
            out.extend((line, "\\ No newline at end of file"))
    return out


def generate_unified_patch(
    path: str, old_content: str, new_content: str, context_lines: int = 4, changes: list[Change] | None = None
) -> str:
    """jsdiff's ``createTwoFilesPatch(path, path, old, new, undefined, undefined, {context, FILE_HEADERS_ONLY})``."""
    out = [f"--- {path}", f"+++ {path}"]
    changes = diff_lines(old_content, new_content) if changes is None else changes
    for hunk in _hunks(changes, context_lines):
        old_start = hunk.old_start - 1 if hunk.old_lines == 0 else hunk.old_start
        new_start = hunk.new_start - 1 if hunk.new_lines == 0 else hunk.new_start
        out.append(f"@@ -{old_start},{hunk.old_lines} +{new_start},{hunk.new_lines} @@")
        out.extend(_finish_lines(hunk.lines))
    return "\n".join(out) + "\n"
