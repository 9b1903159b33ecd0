"""What a tool call will run, drawn so that nothing in it can hide: the approval box's preview.

A person approves what they see, so the preview must show what runs. Text from the model can hide code from a
reader in several ways, each made visible here (as escaped HTML for the approval box's ``<pre>``):

- **Distance.** 19,950 blank lines, or a line of 10,000 spaces, push the payload out of the scrolled box: a run of
  more than :data:`BLANK_LINES` blank lines becomes one ``[N blank lines]`` marker, a run of more than
  :data:`SPACES` spaces or tabs a ``[N spaces]`` marker.
- **Length.** Text over :data:`MAX_CHARS` characters shows its head and its tail (where a payload would be put),
  with ``[… N characters (M lines) not shown …]`` between them.
- **Invisible and reordering characters.** Bidi controls (U+202E and friends: the Trojan Source attack shows
  ``a = b /* ‮ } ⁦if (admin)⁩ ⁦ begin admins only */`` in a different order from the one that runs), zero-width
  characters, other format characters (Unicode category Cf), C0 and C1 controls (an ANSI escape's ESC, a bare
  carriage return that a terminal would use to overwrite a line), line and paragraph separators and the Hangul
  fillers that render blank each become a ``<U+202E>`` marker, drawn apart from the text.

Every marker has :data:`MARKER_CLASS` and an inline style (the approval box is an ipywidgets ``HTML`` widget: no
stylesheet of ours is sure to reach it). :func:`visible_html` also says what it marked, for a line above the box.

:func:`shown_json` is the same rule for a tool call's arguments shown as JSON (the widget's tool panels, the static
copy): those characters are written as ``\\uXXXX`` escapes, which read the same to JSON.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from dataclasses import dataclass, field

__all__ = [
    "BLANK_LINES",
    "MARKER_CLASS",
    "MAX_CHARS",
    "SPACES",
    "Visible",
    "shown_json",
    "visible_html",
    "visible_text",
]

MAX_CHARS = 20_000
"""Characters shown at most (head and tail together)."""
TAIL_CHARS = 4_000
"""Of :data:`MAX_CHARS`, how many come from the end of the text."""
BLANK_LINES = 2
"""Blank lines shown as they are; a longer run becomes one marker."""
SPACES = 40
"""Spaces or tabs in a row shown as they are; a longer run becomes one marker."""
MARKER_CLASS = "pi-hidden-mark"
_MARKER_STYLE = (
    "background: #fde68a; color: #7c2d12; border: 1px solid #d97706; border-radius: 3px; padding: 0 2px; "
    "font-size: 85%; font-style: normal"
)
_FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Letters that render as nothing (Hangul fillers, the blank Braille pattern)."""
_BLANK_RUN = re.compile(rf"(?:^[ \t]*\n){{{BLANK_LINES + 1},}}", re.MULTILINE)
_SPACE_RUN = re.compile(rf"[ \t]{{{SPACES + 1},}}")


@dataclass
class Visible:
    """A preview as HTML, and what was marked in it (``notes``: ``"3 invisible or control character(s) shown as
    <U+…>"``, ``"19,950 blank lines collapsed"``, ``"12,345 characters in the middle not shown"``)."""

    html: str
    notes: list[str] = field(default_factory=list)


@dataclass
class _Run:
    """A collapsed run: ``count`` blank lines or spaces, shown as one marker."""

    what: str  # "blank lines" or "spaces"
    count: int


_Segment = str | _Run


def _hidden(char: str) -> bool:
    if char in "\n\t":
        return False
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co") or char in _FILLERS


def _marker(text: str) -> str:
    return f'<span class="{MARKER_CLASS}" style="{_MARKER_STYLE}">{html.escape(text)}</span>'


def _segments(text: str) -> list[_Segment]:
    """``text`` with its long blank runs and space runs as :class:`_Run` (a blank run keeps one line break, so what
    follows it starts a line)."""
    segments: list[_Segment] = []
    at = 0
    for match in _BLANK_RUN.finditer(text):
        segments += _split(text[at : match.start()], _SPACE_RUN, "spaces")
        segments += [_Run("blank lines", match.group().count("\n")), "\n"]
        at = match.end()
    return segments + _split(text[at:], _SPACE_RUN, "spaces")


def _split(text: str, pattern: re.Pattern[str], what: str) -> list[_Segment]:
    segments: list[_Segment] = []
    at = 0
    for match in pattern.finditer(text):
        segments += [text[at : match.start()], _Run(what, len(match.group()))]
        at = match.end()
    return [*segments, text[at:]]


def _cut(segments: list[_Segment]) -> tuple[list[_Segment | None], str | None]:
    """At most :data:`MAX_CHARS` characters of text: the head and the tail; ``None`` in the list marks the middle
    that was left out, described by the returned label."""
    total = sum(len(segment) for segment in segments if isinstance(segment, str))
    if total <= MAX_CHARS:
        return list(segments), None
    head, skip = MAX_CHARS - TAIL_CHARS, total - MAX_CHARS
    kept: list[_Segment | None] = []
    dropped: list[str] = []
    for segment in segments:
        if isinstance(segment, _Run):
            if head or not skip:  # in the head or in the tail
                kept.append(segment)
            continue
        taken, segment = segment[:head], segment[head:]
        head -= len(taken)
        gone, segment = segment[:skip], segment[skip:]
        kept += [taken, None, segment] if gone and skip == len(gone) else [taken, segment]
        skip -= len(gone)
        dropped.append(gone)
    missing = "".join(dropped)
    return kept, f"[… {len(missing):,} characters ({missing.count(chr(10)):,} line breaks) not shown …]"


def _escaped(text: str, hidden: list[int]) -> str:
    out: list[str] = []
    at = 0
    for index, char in enumerate(text):
        if _hidden(char):
            out += [html.escape(text[at:index]), _marker(f"<U+{ord(char):04X}>")]
            at = index + 1
            hidden[0] += 1
    out.append(html.escape(text[at:]))
    return "".join(out)


def visible_html(text: str) -> Visible:
    """``text`` as the approval box shows it (see the module docstring)."""
    segments = _segments(text.replace("\r\n", "\n"))  # a lone carriage return is marked
    runs = [segment for segment in segments if isinstance(segment, _Run)]
    shown, cut = _cut(segments)
    hidden = [0]
    parts: list[str] = []
    for segment in shown:
        if segment is None:
            parts.append("\n" + _marker(cut or "") + "\n")
        elif isinstance(segment, _Run):
            parts.append(_marker(f"[{segment.count:,} {segment.what}]"))
        else:
            parts.append(_escaped(segment, hidden))
    notes = [cut[3:].split(" (")[0] + " in the middle not shown"] if cut else []
    if hidden[0]:
        notes.append(f"{hidden[0]:,} invisible or control character(s) shown as <U+…>")
    for what, label in (("blank lines", "blank lines collapsed"), ("spaces", "spaces or tabs in long runs collapsed")):
        count = sum(run.count for run in runs if run.what == what)
        if count:
            notes.append(f"{count:,} {label}")
    return Visible("".join(parts), notes)


def shown_json(value: object) -> str:
    """``value`` as indented JSON with every character :func:`visible_html` would mark written as a ``\\u`` escape
    (JSON escapes the C0 controls itself; bidi, zero-width, C1 and the like it leaves raw)."""
    text = json.dumps(value, ensure_ascii=False, indent=1, default=str)
    return "".join(_json_escape(char) if _hidden(char) else char for char in text)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def visible_text(text: str) -> str:
    """``text`` for a terminal or a ``text/plain`` output: each character :func:`visible_html` would mark written as
    ``<U+001B>`` (an ANSI escape from the model cannot move the cursor, clear the screen or set the clipboard)."""
    text = text.replace("\r\n", "\n")
    return "".join(f"<U+{ord(char):04X}>" if _hidden(char) else char for char in text)
