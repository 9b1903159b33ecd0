"""What a rewind of one or more runs does, worked out from their checkpoints, and its receipt.

:func:`plan` merges the checkpoints of the runs taken back (run N and every later one, oldest first) into one
:class:`RewindPlan`: per file and per variable, what it held before the *first* of them and what the *last* left; the
cell changes and objects changed in place of all of them, in order. :meth:`RewindPlan.conflicts` lists what the user
changed since (a file whose content, a variable whose object, a cell whose source, type or count is no longer what
the runs left); :meth:`RewindPlan.restore_files` and :meth:`RewindPlan.restore_variables` give back the rest (and the
conflicts too when the user chose to overwrite), noting each outcome on the :class:`RewindReceipt`. The cells and the
conversation are ``_rewind``'s (they need the page and the session).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Literal

from ..kernel import (
    ABSENT,
    CellChangeRecord,
    Checkpoint,
    FileBefore,
    InPlace,
    NotebookTarget,
    SizeChange,
    Stamp,
    file_holds,
    file_stamp,
    restore_file,
)

__all__ = ["Conflict", "RewindPlan", "RewindReceipt", "plan"]


@dataclass(frozen=True, slots=True)
class Conflict:
    """Something the user changed since the runs: ``kind`` ``file``, ``variable`` or ``cell``, its name, and how."""

    kind: Literal["file", "variable", "cell"]
    name: str
    how: str

    def line(self) -> str:
        return f"{self.kind} {self.name}: {self.how}"


@dataclass(slots=True)
class RewindReceipt:
    """What a rewind gave back and what it did not, and why (see :meth:`lines`)."""

    runs: list[int]
    restored: dict[str, list[str]] = field(default_factory=dict)
    """By kind of outcome (``files restored``, ``variables removed``, ...), the names, in order."""
    kept: list[str] = field(default_factory=list)
    """What the user changed since and kept (``file `x`: changed since the run``)."""
    not_restored: list[str] = field(default_factory=list)
    """What could not be given back, each with why."""
    conversation: str = ""

    def add(self, outcome: str, name: str) -> None:
        self.restored.setdefault(outcome, []).append(name)

    def lines(self) -> list[str]:
        runs = f"run {self.runs[0]}" if len(self.runs) == 1 else f"runs {self.runs[0]}–{self.runs[-1]}"
        lines = [f"rewound {runs}"]
        lines += [f"{outcome}: {', '.join(names)}" for outcome, names in self.restored.items()]
        if self.conversation:
            lines.append(f"conversation: {self.conversation}")
        lines += [f"kept yours, changed since the run: {item}" for item in self.kept]
        lines += [f"not restored: {item}" for item in self.not_restored]
        return lines

    @property
    def text(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return self.text


def shown_path(path: str) -> str:
    """A path as the receipt shows it: relative to the working directory when it is inside it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def q(name: str) -> str:
    """A name as the receipt quotes it."""
    return f"`{name}`"


@dataclass(eq=False, slots=True)
class _File:
    before: FileBefore
    after: Stamp | None


@dataclass(eq=False, slots=True)
class _Variable:
    namespace: dict[str, Any]
    name: str
    before: Any
    after: Any


@dataclass(eq=False)
class RewindPlan:
    """The merged checkpoints of the runs taken back (see the module docstring)."""

    runs: list[int]
    leaf_id: str | None
    notebook: NotebookTarget | None
    files: list[_File] = field(default_factory=list)
    variables: list[_Variable] = field(default_factory=list)
    in_place: list[InPlace] = field(default_factory=list)
    resized: list[SizeChange] = field(default_factory=list)
    cells: list[CellChangeRecord] = field(default_factory=list)
    untracked: list[tuple[str, str]] = field(default_factory=list)
    code_runs: int = 0

    # -- conflicts --------------------------------------------------------------------------------------------
    def conflicts(self, cells_now: dict[str, dict[str, Any] | None] | None) -> list[Conflict]:
        """What the user changed since the runs; ``cells_now``: the touched cells as the page has them now (``None``
        for a cell that is gone; no page: ``None``, the cells are not compared)."""
        found = [Conflict("file", q(shown_path(f.before.path)), "changed since the run") for f in self._changed_files()]
        for variable in self.variables:
            if variable.namespace.get(variable.name, ABSENT) is not variable.after:
                how = "deleted since the run" if variable.name not in variable.namespace else "rebound since the run"
                found.append(Conflict("variable", q(variable.name), how))
        if cells_now is not None:
            found += [Conflict("cell", q(cell_id), how) for cell_id, how in self.cell_conflicts(cells_now).items()]
        return found

    def _changed_files(self) -> list[_File]:
        return [f for f in self.files if f.after is not None and file_stamp(f.before.path) != f.after]

    def cell_conflicts(self, cells_now: dict[str, dict[str, Any] | None]) -> dict[str, str]:
        """Per touched cell the user changed since, how (a cell the runs deleted that is back is no conflict: the
        step that would insert it again is skipped)."""
        last: dict[str, CellChangeRecord] = {}
        for record in self.cells:
            last[record.cell_id] = record
        found = {}
        for cell_id, record in last.items():
            now, left = cells_now.get(cell_id), record.after
            if left is None or not record.answered:
                continue
            if now is None:
                found[cell_id] = "deleted since the run"
            elif any(now.get(key) != value for key, value in left.items()):
                found[cell_id] = "run again since the run" if now.get("source") == left["source"] else "edited since"
        return found

    # -- restoring --------------------------------------------------------------------------------------------
    def restore_files(self, receipt: RewindReceipt, *, overwrite: bool) -> None:
        changed = {id(f) for f in self._changed_files()}
        for item in self.files:
            before, name = item.before, q(shown_path(item.before.path))
            if before.too_large:
                receipt.not_restored.append(f"{name}: too large to keep ({before.too_large:,} bytes, past "
                                            "checkpoints.max_run_bytes)")  # fmt: skip
                continue
            if id(item) in changed and not overwrite:
                receipt.kept.append(f"file {name}")
                continue
            if file_holds(before.path, before.content):
                continue  # already as it was (a call that failed, or the user put it back)
            try:
                done = restore_file(before)
            except OSError as exc:
                receipt.not_restored.append(f"{name}: {exc.strerror or exc}")
                continue
            receipt.add("files restored" if done == "restored" else "files removed (the run created them)", name)

    def restore_variables(self, receipt: RewindReceipt, *, overwrite: bool) -> None:
        for variable in self.variables:
            namespace, name = variable.namespace, variable.name
            if namespace.get(name, ABSENT) is not variable.after and not overwrite:
                receipt.kept.append(f"variable {q(name)}")
                continue
            if variable.before is ABSENT:
                namespace.pop(name, None)
                receipt.add("variables removed (the run made them)", q(name))
            else:
                namespace[name] = variable.before
                receipt.add("variables given their objects back", q(name))
        for item in reversed(self.in_place):
            why = item.restore()
            if why:
                receipt.not_restored.append(f"{q(item.name)} changed in place ({item.how}): {why}")
            else:
                receipt.add("objects put back as they were (changed in place)", q(item.name))
        for change in self.resized:
            receipt.not_restored.append(
                f"{q(change.name)} changed in place ({change.before} → {change.after}) by code that did not name it"
            )

    def untracked_lines(self) -> list[str]:
        """What the runs did that nothing tracks: ``bash`` commands, the code's effects beyond its variables."""
        lines = []
        commands = [text for tool, text in self.untracked if tool == "bash"]
        if commands:
            shown = ", ".join(q(_short(command)) for command in commands[:5])
            more = f" and {len(commands) - 5} more" if len(commands) > 5 else ""
            lines.append(f"what bash changed is not tracked ({shown}{more})")
        if self.code_runs:
            lines.append("what the agent's code did beyond its variables (files it wrote, processes) is not tracked")
        return lines


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plan(checkpoints: list[Checkpoint]) -> RewindPlan:
    """Merge ``checkpoints`` (oldest first) into one plan; see the module docstring."""
    first = checkpoints[0]
    merged = RewindPlan([c.run for c in checkpoints], first.leaf_id, first.notebook)
    files: dict[str, _File] = {}
    variables: dict[tuple[int, str], _Variable] = {}
    for checkpoint in checkpoints:
        for key, before in checkpoint.files.files.items():
            item = files.setdefault(key, _File(before, None))
            if before.changed:
                item.after = before.after
        for name, binding in checkpoint.variables.bindings.items():
            new = _Variable(binding.namespace, binding.name, binding.before, binding.after)
            variables.setdefault(name, new).after = binding.after
        merged.in_place += checkpoint.variables.in_place
        merged.resized += checkpoint.variables.resized
        merged.cells += checkpoint.cells.changes
        merged.untracked += checkpoint.files.untracked_calls
        merged.code_runs += checkpoint.variables.code_runs
    merged.files = [item for item in files.values() if item.after is not None]
    merged.variables = [item for item in variables.values() if item.before is not item.after]
    first_held = {item.name: item.before for item in merged.variables}
    # Objects the runs made themselves go with their names: only changes to objects that were there are named.
    merged.in_place = [i for i in merged.in_place if first_held.get(i.name, i.value) is i.value]
    merged.resized = [change for change in merged.resized if change.name not in first_held]
    return merged
