"""``%pi tree`` and ``%pi fork``: the session tree, and continuing from before any prompt in it (``_fork``).

Each handler takes the registry and the parsed line. ``%pi tree`` prints the tree (``_tree_view``). ``%pi fork``
checks what it was given first (a run active, no such prompt: one line, nothing starts), then starts the fork as a
run, through ``start`` (the magic's, which shows the run's widget, or runs it to the end without an event loop).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..session import SessionBusyError
from ._commands import PiCommand
from ._fork import Fork, find_prompt, fork_label
from ._registry import NotebookSession, SessionRegistry
from ._run import Run
from ._tree_view import tree_text
from ._volatile import show_with_entry_ids

__all__ = ["fork", "show_tree"]

Start = Callable[[NotebookSession, str, Callable[[], Any]], "Run | None"]


def show_tree(registry: SessionRegistry, command: PiCommand) -> None:
    show_with_entry_ids(tree_text(registry.get().session.tree()))


def fork(registry: SessionRegistry, command: PiCommand, start: Start) -> Run | None:
    entry = registry.get()
    if entry.busy:
        raise SessionBusyError("a run is active; %pi abort it (or %pi wait) before forking")
    target = find_prompt(entry.session, command.flags.get("entry", ""))
    operation = Fork(entry.session, target, command.text or None, summarize="no_summary" not in command.flags)
    run = start(entry, fork_label(target), operation)
    operation.run = run
    if run is None and operation.result is not None and not operation.result.cancelled and not command.text:
        print(f"pi: forked; the prompt was: {target.text}")  # noqa: T201 - no widget (plain IPython) to give it back in
    return run
