"""A run's checkpoint of the notebook cells its cell tools inserted, edited, deleted and ran.

The cell a tool changes is in the browser, so what it held before is taken there: the page answers ``edit``,
``delete`` and ``run_begin`` with the cell as it was the moment before it acted (``before``: its nbformat JSON,
source, type, metadata, outputs and count, its index and the id of the cell above it), in the same step as the change,
so nothing the user types in between can slip through. The kernel notes the call *before* it asks
(``_checkpoint.ask_changing``): a change whose answer never came (the page went away, the run was stopped
mid-request) stays in the checkpoint as one that cannot be given back, and a rewind names it.

A rewind (``pi_notebook.notebook._rewind``) undoes the changes in reverse order, each by its inverse
(:meth:`CellChangeRecord.inverse`): an inserted cell is deleted, a deleted cell is inserted again where it was (after
the same cell, else at the same index), an edited or run cell gets its JSON back; all in one transaction of the
notebook, so it is one step of JupyterLab's undo. ``after`` is what the run left in the cell (its source and type,
and its count when the run ran it), against which the page's current cell is compared: a cell the user changed since
is a conflict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ._frontend import CellChangeKind

__all__ = ["OPS", "CellChangeRecord", "CellJournal", "complete"]

OPS: dict[str, CellChangeKind] = {"insert": "inserted", "edit": "edited", "delete": "deleted", "run_begin": "ran"}


@dataclass(eq=False, slots=True)
class CellChangeRecord:
    """One change a cell tool made (or may have made: ``answered`` False) to cell ``cell_id``."""

    kind: CellChangeKind
    cell_id: str
    before: dict[str, Any] | None = None
    """The cell's nbformat JSON before (``None``: it did not exist, or the page did not say)."""
    index: int = 0
    anchor: str | None = None
    """The id of the cell above it then (``""``: it was the first)."""
    after: dict[str, Any] | None = None
    """``{"source", "cell_type"[, "execution_count"]}`` the run left (``None``: the cell is gone)."""
    answered: bool = False

    def inverse(self) -> dict[str, Any] | None:
        """The step that undoes it (a :class:`~._cell_protocol.RewindStep`), ``None`` when it cannot be undone."""
        if not self.answered:
            return None
        if self.kind == "inserted":
            return {"action": "delete", "cell_id": self.cell_id}
        if self.before is None:
            return None
        action: Literal["insert", "restore"] = "insert" if self.kind == "deleted" else "restore"
        step = {"action": action, "cell_id": self.cell_id, "cell": self.before, "index": self.index}
        return {**step, "anchor": self.anchor}


@dataclass(eq=False)
class CellJournal:
    """The cell changes of one run, in order."""

    changes: list[CellChangeRecord] = field(default_factory=list)

    @property
    def bytes_held(self) -> int:
        return sum(len(str(change.before)) for change in self.changes if change.before is not None)

    def touched(self) -> list[str]:
        return list(dict.fromkeys(change.cell_id for change in self.changes))

    def release(self) -> None:
        self.changes = []

    def begin(self, op: str, cell_id: str) -> CellChangeRecord:
        """Note a change about to be asked of the page (see the module docstring)."""
        record = CellChangeRecord(OPS[op], cell_id)
        self.changes.append(record)
        return record

    def refused(self, record: CellChangeRecord) -> None:
        """The page refused the change: nothing changed."""
        self.changes.remove(record)

    def ran(self, cell_id: str, count: int | None) -> None:
        """The cell ``cell_run`` ran ended with ``count``: what the run left in it (a user's later run changes it)."""
        for record in reversed(self.changes):
            if record.cell_id == cell_id and record.kind == "ran" and record.after is not None:
                record.after["execution_count"] = count
                return


def complete(record: CellChangeRecord, message: dict[str, Any], result: dict[str, Any]) -> None:
    """Fill ``record`` from the page's answer to ``message``."""
    before = result.get("before") if isinstance(result.get("before"), dict) else None
    if before is not None:
        record.before, record.index = before.get("cell"), int(before.get("index") or 0)
        record.anchor = before.get("anchor")
    cell = record.before or {}
    match record.kind:
        case "inserted":
            record.cell_id = str(result.get("cell_id"))
            record.after = {"source": message["source"], "cell_type": message["cell_type"]}
        case "edited":
            record.after = {"source": message["source"], "cell_type": cell.get("cell_type", "code")}
        case "ran":
            record.after = {"source": result.get("source", ""), "cell_type": "code"}
        case _:
            record.after = None
    record.answered = record.kind == "inserted" or record.before is not None
