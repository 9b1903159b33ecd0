"""A run's checkpoint: what its changing tool calls found before they acted, so that the run can be taken back.

One :class:`Checkpoint` per run of the notebook (``pi_notebook.notebook._checkpoints`` makes it and keeps the latest
``checkpoints.keep_runs``). The run sets it for its task (:meth:`Checkpoint.activate`), and each changing call fills
it *before it acts*:

- ``write`` and ``edit``: the file's bytes before, or that it did not exist (``_checkpoint_files``, through the
  tools' journal ``pi_notebook.tools._file_journal``); ``bash``: its command, named by a rewind as not undone;
- ``cell_insert``, ``cell_edit``, ``cell_delete``, ``cell_run``: the cell before, taken by the page in the same step
  as the change (``_checkpoint_cells``; ``cells/_shared.ask_changing``);
- the ``python`` tool's code and the cells ``cell_run`` runs: the variables' objects before, by reference, and copies
  of objects the code may change in place (``_checkpoint_vars``, ``_in_place``; :func:`watch_code`).

It also records where the conversation was when the run started (``leaf_id``: the session's last entry), which a
rewind moves the session back to. What it holds is bounded by ``checkpoints.max_run_bytes`` (file contents and
copies) and released with :meth:`Checkpoint.release` (an old run's, a rewound run's, the session's at its end).
Rewinding is the notebook's (``pi_notebook.notebook._rewind``).
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Any

from ..tools import file_journal
from ._checkpoint_cells import CellJournal
from ._checkpoint_files import CheckpointBudget, FileCheckpoint
from ._checkpoint_vars import VariableCheckpoint, Watch
from ._frontend import NotebookTarget

__all__ = ["Checkpoint", "current_checkpoint", "watch_code"]


@dataclass(eq=False)
class Checkpoint:
    """What run ``run`` found before it changed things (see the module docstring)."""

    run: int
    leaf_id: str | None
    """The session's leaf when the run started (``None``: the session was empty), where a rewind moves it back."""
    budget: CheckpointBudget
    notebook: NotebookTarget | None = None
    files: FileCheckpoint = field(init=False)
    variables: VariableCheckpoint = field(init=False)
    cells: CellJournal = field(default_factory=CellJournal)
    released: bool = False

    def __post_init__(self) -> None:
        self.files = FileCheckpoint(self.budget)
        self.variables = VariableCheckpoint(self.budget)

    def activate(self) -> None:
        """Make it the checkpoint of the calling task (the run's; the tools it calls inherit it)."""
        current_checkpoint.set(self)
        file_journal.set(self.files)

    @property
    def bytes_held(self) -> int:
        """File contents, object copies and cell JSON it holds (not the variables' objects, which it only refers to)."""
        return self.files.bytes_held + self.variables.bytes_held + self.cells.bytes_held

    @property
    def empty(self) -> bool:
        """It recorded no change (the run may still have moved the conversation on)."""
        variables = self.variables
        changed = variables.bindings or variables.in_place or variables.resized or self.files.untracked_calls
        return not (self.files.files or self.cells.changes or changed)

    def release(self) -> None:
        """Forget everything it holds (the objects it referred to may be freed)."""
        self.files.release()
        self.variables.release()
        self.cells.release()
        self.released = True


current_checkpoint: contextvars.ContextVar[Checkpoint | None] = contextvars.ContextVar(
    "pi_notebook_current_checkpoint", default=None
)
"""The checkpoint of the run whose task is running (``None``: none is kept)."""


def watch_code(namespace: dict[str, Any], code: str, shell: Any) -> Watch | None:
    """Watch ``code`` about to run in ``namespace`` for the run's checkpoint (``None``: no checkpoint is kept)."""
    checkpoint = current_checkpoint.get()
    return checkpoint.variables.watch(namespace, code, shell) if checkpoint is not None else None
