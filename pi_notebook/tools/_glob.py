"""``find``'s glob patterns, as fd reads them (Rust ``globset`` with ``literal_separator``).

``*`` and ``?`` never match ``/``; ``**`` as a whole path component matches any number of directories
(``**/x``, ``a/**``, ``a/**/b``), elsewhere it is two ``*``; ``[abc]``, ``[a-z]``, ``[!x]``/``[^x]`` are
classes; ``{a,b}`` is an alternation; ``\\`` escapes. The match is anchored at both ends. Like fd, matching is
case-insensitive unless the pattern has an upper-case letter (smart case), and case folding is ASCII only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..ai import PiNotebookError

__all__ = ["GlobError", "compile_glob"]


class GlobError(PiNotebookError, ValueError):
    """An invalid glob; the text is globset's (``unclosed character class; missing ']'``)."""


@dataclass(slots=True)
class _Parser:
    glob: str
    pos: int = 0
    branches: list[list[str]] = field(default_factory=lambda: [[]])
    alternates: list[int] = field(default_factory=list)

    def error(self, text: str) -> GlobError:
        return GlobError(f"error parsing glob '{self.glob}': {text}")

    def peek(self) -> str | None:
        return self.glob[self.pos] if self.pos < len(self.glob) else None

    def bump(self) -> str | None:
        ch = self.peek()
        if ch is not None:
            self.pos += 1
        return ch

    def push(self, token: str) -> None:
        self.branches[-1].append(token)

    def parse(self) -> str:
        while (ch := self.bump()) is not None:
            if ch == "?":
                self.push("[^/]")
            elif ch == "*":
                self.star()
            elif ch == "[":
                self.push(self.char_class())
            elif ch == "{":
                self.alternates.append(len(self.branches))
                self.branches.append([])
            elif ch == "}":
                self.close_alternates()
            elif ch == "," and self.alternates:
                self.branches.append([])
            elif ch == "\\":
                escaped = self.bump()
                if escaped is None:
                    raise self.error("dangling '\\'")
                self.push(re.escape(escaped))
            else:
                self.push(re.escape(ch))
        if self.alternates:
            raise self.error("unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)")
        return "".join(self.branches[0])

    def close_alternates(self) -> None:
        if not self.alternates:
            raise self.error("unopened alternate group; missing '{' (maybe escape '}' with '[}]'?)")
        start = self.alternates.pop()
        parts = ["".join(tokens) for tokens in self.branches[start:]]
        del self.branches[start:]
        parts = [part for part in parts if part]
        if parts:
            self.push(f"(?:{'|'.join(parts)})")

    def star(self) -> None:
        previous = self.glob[self.pos - 2] if self.pos >= 2 else None
        if self.peek() != "*":
            self.push("[^/]*")
            return
        self.bump()
        if not self.branches[-1]:
            if self.peek() not in (None, "/"):
                self.push("[^/]*[^/]*")
            else:
                self.bump()
                self.push("(?:/?|.*/)")
            return
        in_alternate = len(self.branches) > 1 and previous in (",", "{")
        if previous != "/" and not in_alternate:
            self.push("[^/]*[^/]*")
            return
        following = self.peek()
        if following is None or (following in (",", "}") and len(self.branches) >= 2):
            suffix = True
        elif following == "/":
            self.bump()
            suffix = False
        else:
            self.push("[^/]*[^/]*")
            return
        last = self.branches[-1].pop()
        if last in ("(?:/?|.*/)", "/.*"):
            self.push(last)
        elif last == "/":  # the separator before ``**`` belongs to the recursive token
            self.push("/.*" if suffix else "(?:/|/.*/)")
        else:
            self.push(last)
            self.push("/.*" if suffix else "(?:/|/.*/)")

    def char_class(self) -> str:
        negated = self.peek() in ("!", "^")
        if negated:
            self.bump()
        ranges: list[list[str]] = []
        first = True
        in_range = False
        while True:
            ch = self.bump()
            if ch is None:
                raise self.error("unclosed character class; missing ']'")
            if ch == "]" and not first:
                break
            if ch == "-" and not first and not in_range:
                in_range = True
            elif in_range:
                if ch < ranges[-1][0]:
                    raise self.error(f"invalid range; '{ranges[-1][0]}' > '{ch}'")
                ranges[-1][1] = ch
                in_range = False
            else:
                ranges.append([ch, ch])
            first = False
        if in_range:
            ranges.append(["-", "-"])
        body = "".join(re.escape(lo) if lo == hi else f"{re.escape(lo)}-{re.escape(hi)}" for lo, hi in ranges)
        return f"[{'^' if negated else ''}{body}]"


def compile_glob(glob: str) -> re.Pattern[str]:
    """The glob as an anchored regex (smart case); raises :class:`GlobError` with globset's texts."""
    if glob == "**":
        body = ".*"
    elif glob == "":
        body = ".*"  # fd: an empty pattern matches everything
    else:
        body = _Parser(glob).parse()
    flags = re.ASCII | (0 if any(ch.isupper() for ch in glob) else re.IGNORECASE)
    return re.compile(f"^{body}$", flags)
