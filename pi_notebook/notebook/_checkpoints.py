"""The checkpoints of a notebook session's runs: one per run, the latest ``checkpoints.keep_runs`` kept.

A checkpoint (``pi_notebook.kernel._checkpoint``) refers to the objects the run's code replaced, so it keeps them
alive; it also holds the bytes of the files the run changed. So only the latest runs keep theirs: when a run starts,
the oldest beyond ``checkpoints.keep_runs`` is released (its objects may be freed; it can no longer be rewound), and
all are released with the session (``NotebookSession.dispose``, ``%pi new``, ``configure()``). ``%pi status`` shows
what they hold (:meth:`RunCheckpoints.describe`). A rewound run's checkpoint is released too: what it held is back
where it was.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..ai import UserError
from ..kernel import Checkpoint, CheckpointBudget, NotebookTarget
from ..session import AgentSession

__all__ = ["RewindRefused", "RunCheckpoints", "with_checkpoint"]


class RewindRefused(UserError, ValueError):
    """``%pi rewind``: nothing (or not that run) can be rewound; the message is one line for the user."""


class RunCheckpoints:
    """A notebook session's run checkpoints, by run number (see the module docstring)."""

    def __init__(self) -> None:
        self._kept: dict[int, Checkpoint] = {}
        self._rewound: set[int] = set()
        self._released: set[int] = set()
        self._taking = False

    def start(self, number: int, session: AgentSession, notebook: NotebookTarget | None) -> Checkpoint | None:
        """A new checkpoint for run ``number`` (``None`` when ``checkpoints.keep_runs`` is 0), releasing the oldest
        beyond ``keep_runs``."""
        settings = session.settings.checkpoints
        if settings.keep_runs <= 0:
            self.release_all()
            return None
        budget = CheckpointBudget(settings.max_run_bytes)
        checkpoint = Checkpoint(number, session.leaf_id, budget, notebook)
        self._kept[number] = checkpoint
        while len(self._kept) > settings.keep_runs:
            oldest = min(self._kept)
            self._kept.pop(oldest).release()
            self._released.add(oldest)
        return checkpoint

    def get(self, number: int) -> Checkpoint | None:
        return self._kept.get(number)

    def latest(self) -> int | None:
        """The latest run that can be rewound."""
        return max(self._kept) if self._kept else None

    @contextmanager
    def taking(self, number: int | None, runs: int) -> Iterator[list[Checkpoint]]:
        """The checkpoints of run ``number`` (default: the latest that can be rewound) and every later one, oldest
        first, for the ``with`` body to rewind. They are released (and the runs count as rewound) when it ends; if it
        is interrupted first (a cell interrupted while the page's box waits) they stay, for a rewind again. One
        rewind at a time. Raises :class:`RewindRefused`."""
        if self._taking:
            raise RewindRefused("a rewind is already under way")
        numbers = self._numbers(number, runs)
        self._taking = True
        try:
            yield [self._kept[n] for n in numbers]
        except BaseException as error:
            if not isinstance(error, Exception):  # cancelled: nothing was given back yet, it can be asked again
                raise
            self._done(numbers)  # it failed midway: part may be back, so no second try from stale checkpoints
            raise
        else:
            self._done(numbers)
        finally:
            self._taking = False

    def _numbers(self, number: int | None, runs: int) -> list[int]:
        if number is None:
            number = self.latest()
            if number is None:
                raise RewindRefused(self._nothing(runs))
        if number < 1 or number > runs:
            raise RewindRefused(f"no run {number} (runs: 1..{runs})" if runs else "no run yet")
        if number in self._rewound:
            raise RewindRefused(f"run {number} was already rewound")
        if number not in self._kept:
            kept = f"runs {min(self._kept)}..{max(self._kept)} can be" if self._kept else "no run can be"
            why = "released (checkpoints.keep_runs)" if number in self._released else "not kept"
            raise RewindRefused(f"run {number}'s checkpoint was {why}; {kept} rewound")
        return sorted(n for n in self._kept if n >= number)

    def _done(self, numbers: list[int]) -> None:
        self._rewound.update(numbers)
        for number in numbers:
            self._kept.pop(number).release()

    def _nothing(self, runs: int) -> str:
        if not runs:
            return "no run yet: nothing to rewind"
        if self._rewound and not self._kept:
            return "every kept run was rewound already: nothing to rewind"
        return "no run's checkpoint is kept (checkpoints.keep_runs): nothing to rewind"

    def describe(self) -> str:
        """One line for ``%pi status``: how many runs keep a checkpoint and what they hold."""
        if not self._kept:
            return "checkpoints: none kept"
        kept = list(self._kept.values())
        files = sum(len(c.files.files) for c in kept)
        cells = len({cell for c in kept for cell in c.cells.touched()})
        names = sum(len(c.variables.bindings) for c in kept)
        copies = sum(len(c.variables.in_place) for c in kept)
        held = sum(c.bytes_held for c in kept)
        runs = f"run {kept[0].run}" if len(kept) == 1 else f"runs {min(self._kept)}..{max(self._kept)}"
        return (
            f"checkpoints: {runs} ({files} files, {cells} cells, {names} variables by reference, {copies} copies; "
            f"{held / 1_000_000:.1f} MB held); %pi rewind undoes the last run"
        )

    def release_all(self) -> None:
        """Release every checkpoint (the session ends, or checkpoints were turned off)."""
        for number, checkpoint in self._kept.items():
            checkpoint.release()
            self._released.add(number)
        self._kept = {}


def with_checkpoint(checkpoint: Checkpoint | None, operation: Callable[[], Awaitable[Any]]) -> Callable[[], Any]:
    """``operation`` with ``checkpoint`` filled by the tools it calls (its task's, and their tasks')."""
    if checkpoint is None:
        return operation

    async def run() -> Any:
        checkpoint.activate()
        return await operation()

    return run
