"""Which files ``grep`` and ``find`` skip: ``.gitignore`` and friends, as ripgrep and fd (Rust ``ignore`` crate).

Rules come from, in order of precedence (the first kind with a matching pattern decides; within a kind the
deepest directory's file wins, and within a file the last matching pattern, ``!pattern`` re-including):

1. the tool's own file, ``.rgignore`` (grep) or ``.fdignore`` (find), in any directory;
2. ``.ignore`` in any directory;
3. ``.gitignore``, and the repository's ``.git/info/exclude``, only from the search directory's repository:
   rules above the nearest directory holding ``.git`` (or ``.jj``) do not apply. Outside any repository, grep
   applies none (ripgrep's default) while find applies them all the way up (Pi passes ``--no-require-git`` to
   fd outside repositories);
4. the global git ignore file (``$XDG_CONFIG_HOME/git/ignore``, ``~/.config/git/ignore``, or ``core.excludesFile``
   from ``~/.gitconfig``), where ``.gitignore`` rules apply; find also reads fd's own ``~/.config/fd/ignore``.

Files in the search directory's parents count, as in ripgrep and fd. A pattern matches the path itself, never
through an ignored parent: an ignored directory is not entered at all, and a search rooted inside an ignored
directory still searches it. Patterns are parsed and compiled by ``pathspec`` (git's wildmatch rules); hidden
files and ``.git`` itself are not skipped (Pi runs both tools with ``--hidden``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from pathspec import GitIgnoreSpec

__all__ = ["IgnoreLevel", "IgnoreRules", "PatternSet", "global_ignore_files"]

_DIR_MARK = "ps_d"  # pathspec's group for "matched through a directory separator"


class PatternSet:
    """One ignore file's patterns. :meth:`match` is ``True`` (ignored), ``False`` (re-included) or ``None``."""

    __slots__ = ("_patterns",)

    def __init__(self, lines: Iterable[str]) -> None:
        spec = GitIgnoreSpec.from_lines(list(lines))
        compiled = [(p.regex, bool(p.include)) for p in spec.patterns if p.include is not None and p.regex]
        self._patterns = compiled[::-1]  # last pattern first: the last match wins

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def match(self, path: str, is_dir: bool) -> bool | None:
        """Whether ``path`` (relative, ``/``-separated) itself is matched; a match through a parent is not one."""
        slashed = path + "/"
        for regex, include in self._patterns:
            found = regex.match(path)
            if found is not None and found.groupdict().get(_DIR_MARK) is None:
                return include
            if is_dir:
                found = regex.match(slashed)
                if found is not None and found.end() == len(slashed) and found.groupdict().get(_DIR_MARK):
                    return include
        return None


def _read_patterns(path: str) -> PatternSet | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            patterns = PatternSet(file.read().splitlines())
    except (OSError, ValueError):
        return None  # an unreadable or unparsable ignore file is skipped, as the ignore crate does
    return patterns or None


def _git_dir(directory: str) -> str | None:
    """The repository's common git directory when ``directory`` holds ``.git`` (a directory or a gitdir file)."""
    dot_git = os.path.join(directory, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    try:
        with open(dot_git, encoding="utf-8") as file:
            line = file.readline().strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    git_dir = os.path.join(directory, line[len("gitdir:") :].strip())
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as file:
            return os.path.normpath(os.path.join(git_dir, file.read().strip()))
    except OSError:
        return git_dir


@dataclass(slots=True)
class IgnoreLevel:
    """The rules one directory contributes. ``prefix`` turns a walk-relative path into one relative to it."""

    prefix: str
    above_root: bool
    custom: PatternSet | None = None
    ignore: PatternSet | None = None
    git: PatternSet | None = None
    git_exclude: PatternSet | None = None
    has_git: bool = False

    def relative(self, rel: str) -> str:
        if self.above_root:
            return f"{self.prefix}/{rel}" if self.prefix else rel
        return rel[len(self.prefix) + 1 :] if self.prefix else rel


def load_level(directory: str, prefix: str, above_root: bool, custom_name: str, require_git: bool) -> IgnoreLevel:
    level = IgnoreLevel(prefix, above_root)
    level.custom = _read_patterns(os.path.join(directory, custom_name))
    level.ignore = _read_patterns(os.path.join(directory, ".ignore"))
    level.git = _read_patterns(os.path.join(directory, ".gitignore"))
    git_dir = _git_dir(directory)
    if git_dir is not None:
        level.git_exclude = _read_patterns(os.path.join(git_dir, "info", "exclude"))
    level.has_git = require_git and any(os.path.exists(os.path.join(directory, name)) for name in (".git", ".jj"))
    return level


def _useful(level: IgnoreLevel) -> bool:
    return bool(level.custom or level.ignore or level.git or level.git_exclude or level.has_git)


def _excludes_file_from_gitconfig(home: str) -> str | None:
    try:
        with open(os.path.join(home, ".gitconfig"), encoding="utf-8") as file:
            text = file.read()
    except OSError:
        return None
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[]").strip().lower()
            continue
        found = re.match(r"excludesfile\s*=\s*(.+)", line, re.IGNORECASE)
        if section == "core" and found:
            value = found.group(1).strip().strip('"')
            return os.path.join(home, value[2:]) if value.startswith("~/") else value
    return None


def global_ignore_files(tool: Literal["grep", "find"]) -> tuple[str | None, str | None]:
    """``(git global ignore file, fd's global ignore file)`` paths to try."""
    home = os.path.expanduser("~")
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    git_global = _excludes_file_from_gitconfig(home) or os.path.join(config, "git", "ignore")
    return git_global, (os.path.join(config, "fd", "ignore") if tool == "find" else None)


@dataclass(slots=True)
class IgnoreRules:
    """The stack of levels from ``/`` down to the directory being walked; see the module docstring."""

    custom_name: str
    require_git: bool
    levels: list[IgnoreLevel] = field(default_factory=list)
    git_global: PatternSet | None = None
    explicit: PatternSet | None = None

    @classmethod
    def for_root(cls, root: str, tool: Literal["grep", "find"], require_git: bool) -> IgnoreRules:
        rules = cls(".rgignore" if tool == "grep" else ".fdignore", require_git)
        git_global, explicit = global_ignore_files(tool)
        rules.git_global = _read_patterns(git_global) if git_global else None
        rules.explicit = _read_patterns(explicit) if explicit else None
        parents = []
        current = os.path.dirname(root)
        while True:
            parents.append(current)
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for parent in reversed(parents):
            prefix = os.path.relpath(root, parent).replace(os.sep, "/")
            rules.push(load_level(parent, prefix, True, rules.custom_name, require_git))
        rules.push(load_level(root, "", False, rules.custom_name, require_git))
        return rules

    def push(self, level: IgnoreLevel) -> bool:
        """Add ``level`` if it has any rule; tell whether it was added (so the walker can pop it later)."""
        if _useful(level):
            self.levels.append(level)
            return True
        return False

    def enter(self, directory: str, rel: str) -> bool:
        return self.push(load_level(directory, rel, False, self.custom_name, self.require_git))

    def matched(self, rel: str, is_dir: bool) -> bool | None:
        """``True`` if ``rel`` (relative to the walk root) is ignored, ``False`` if re-included, else ``None``."""
        custom = ignore = git = git_exclude = None
        any_git = not self.require_git or any(level.has_git for level in self.levels)
        saw_git = False
        for level in reversed(self.levels):
            path = level.relative(rel)
            if custom is None and level.custom is not None:
                custom = level.custom.match(path, is_dir)
            if ignore is None and level.ignore is not None:
                ignore = level.ignore.match(path, is_dir)
            if any_git and not saw_git:
                if git is None and level.git is not None:
                    git = level.git.match(path, is_dir)
                if git_exclude is None and level.git_exclude is not None:
                    git_exclude = level.git_exclude.match(path, is_dir)
            saw_git = saw_git or level.has_git
        for found in (custom, ignore, git, git_exclude):
            if found is not None:
                return found
        if any_git and self.git_global is not None:
            found = self.git_global.match(rel, is_dir)
            if found is not None:
                return found
        return self.explicit.match(rel, is_dir) if self.explicit is not None else None
