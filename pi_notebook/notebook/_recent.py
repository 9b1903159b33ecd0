"""``RecentRuns``: the kernel keeps the views of its most recent runs open and closes older ones.

Every open run view is some 25 ipywidgets (the widget, its buttons and boxes, their layouts and styles) plus its
operation log; a notebook that ran hundreds of runs would keep them all. So the registry admits each new run here,
and once more than ``keep`` settled runs are open, the oldest settled ones are closed (:meth:`Run.close_view`): each
of their outputs turns into the static rendering (transcript and event log as markdown) and only the compact record
stays in memory. Active runs are never closed; a run of a session that ``configure()`` replaces is closed as soon as
it settles.
"""

from __future__ import annotations

from collections import deque

from ._run import Run

__all__ = ["KEEP_OPEN", "RecentRuns"]

KEEP_OPEN = 10
"""How many settled runs keep their live widget by default (``REGISTRY.recent.keep`` changes it)."""


class RecentRuns:
    """The runs whose views are still open, oldest first."""

    def __init__(self, keep: int = KEEP_OPEN) -> None:
        self.keep = keep
        self._open: deque[Run] = deque()

    def __len__(self) -> int:
        return len(self._open)

    def admit(self, run: Run) -> None:
        """A run starts: remember it, then close the oldest settled runs beyond ``keep``."""
        self._open.append(run)
        self.trim()

    def trim(self) -> None:
        """Close the oldest settled runs until at most ``keep`` settled runs are open (active ones stay)."""
        settled = [run for run in self._open if run.done]
        for run in settled[: max(0, len(settled) - max(self.keep, 0))]:
            self._open.remove(run)
            run.close_view()

    def close(self, runs: list[Run]) -> None:
        """Close these runs (now, or when each settles) and forget them: their session is being replaced."""
        for run in runs:
            if run in self._open:
                self._open.remove(run)
            run.close_view()
