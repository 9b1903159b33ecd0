"""Walking a tree for ``grep`` and ``find``: depth first, names in code-point order, ignore rules applied.

Symbolic links are reported but not followed (ripgrep and fd without ``--follow``). Hidden entries and ``.git``
are walked (Pi passes ``--hidden``; neither tool skips ``.git`` then). ``stop.check()`` runs before every
directory read and every 64 entries, so an abort ends a walk within milliseconds. Directories that cannot be
read are skipped silently, as the Rust tools do.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ._common import Stop
from ._ignore import IgnoreRules

__all__ = ["Entry", "walk"]


@dataclass(frozen=True, slots=True)
class Entry:
    path: str
    """Absolute path."""
    rel: str
    """Path relative to the walk's root, ``/``-separated."""
    is_dir: bool
    is_file: bool
    is_symlink: bool


Override = Callable[[str, bool], bool | None]
"""``(rel, is_dir) -> True`` (skip), ``False`` (keep whatever the ignore files say), ``None`` (no opinion)."""


def _skipped(rules: IgnoreRules, override: Override | None, rel: str, is_dir: bool) -> bool:
    if override is not None:
        decision = override(rel, is_dir)
        if decision is not None:
            return decision
    return rules.matched(rel, is_dir) is True


def _children(directory: str, stop: Stop) -> Iterator[os.DirEntry[str]]:
    stop.check()
    try:
        with os.scandir(directory) as listing:
            return iter(sorted(listing, key=lambda e: e.name))
    except OSError:
        return iter(())


def walk(root: str, rules: IgnoreRules, stop: Stop, override: Override | None = None) -> Iterator[Entry]:
    """Every entry below ``root`` (not ``root`` itself) that the rules keep, depth first (no recursion limit)."""
    stack: list[tuple[str, Iterator[os.DirEntry[str]], bool]] = [("", _children(root, stop), False)]
    counter = 0
    while stack:
        rel_dir, children, pushed = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            if pushed:
                rules.levels.pop()
            continue
        counter += 1
        if counter % 64 == 0:
            stop.check()
        rel = f"{rel_dir}/{child.name}" if rel_dir else child.name
        try:
            is_symlink = child.is_symlink()
            is_dir = not is_symlink and child.is_dir(follow_symlinks=False)
            is_file = not is_symlink and child.is_file(follow_symlinks=False)
        except OSError:
            continue
        if _skipped(rules, override, rel, is_dir):
            continue
        yield Entry(child.path, rel, is_dir, is_file, is_symlink)
        if is_dir:
            stack.append((rel, _children(child.path, stop), rules.enter(child.path, rel)))
