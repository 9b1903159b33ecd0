"""``%pi rewind [N]`` and a settled run's **Undo run** button: take runs back, as far as their checkpoints allow.

A rewind takes back run N (default: the latest run that can be) and every later run, from their checkpoints
(``pi_notebook.kernel._checkpoint``, kept by ``_checkpoints``), in this order:

1. **Stop first.** While a run is active nothing is rewound: one line says to stop it first.
2. **What the user changed since.** A file whose content, a variable whose object, a cell whose source, type or
   execution count is no longer what the runs left is a conflict (``_rewind_plan``). In JupyterLab the page asks in a
   dialog, **Overwrite** or **Keep mine**; without a page (nbclient, nbval, plain IPython, a closed tab) the user's
   version is kept. Either way the receipt names each one.
3. **Cells**, through the live notebook: the page undoes the cell tools' changes in reverse order in one transaction,
   so the whole rewind is one step of JupyterLab's undo (``labextension/src/rewind.ts``). A cell changed between the
   question and the change is left alone and named.
4. **Files** (their bytes, written atomically; a file the runs created is removed with the empty folders made for
   it) and **variables** (each name gets its very object back; names the runs made go; objects changed in place get
   their copies back where one was kept).
5. **The conversation** moves back to where it was before run N, as a fork: the session's leaf goes back to that
   entry, and the abandoned branch stays in the session file (and in ``%pi tree``).

Every rewind returns (``%pi rewind`` shows) a :class:`~._rewind_plan.RewindReceipt`: what was given back, what was kept
because the user changed it, and what could not be given back and why (a file too large to keep, a change inside an
object it could not copy, what ``bash`` and the code did beyond the files and variables the tools tracked). The runs'
checkpoints are released afterwards: their state is back where it was. The same lines end the event log of each run
taken back, whose widget then reads **Undone**.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..kernel import KERNEL, FrontendRefused, NotebookUnavailable
from ..session import AgentSession, SessionBusyError
from ._checkpoints import RunCheckpoints
from ._rewind_plan import RewindPlan, RewindReceipt, plan, q
from ._run import Run

__all__ = ["CONFIRM_WAIT_S", "STOP_FIRST", "rewind"]

STOP_FIRST = "a run is active: stop it first (its Stop button, or %pi abort), then rewind"
CONFIRM_WAIT_S = 1800.0
"""How long the page's Overwrite / Keep mine dialog may wait for the user before the rewind keeps theirs."""


class _Entry(Protocol):
    """What a rewind needs of a notebook session (``NotebookSession``)."""

    @property
    def session(self) -> AgentSession: ...

    @property
    def busy(self) -> bool: ...

    @property
    def runs(self) -> list[Run]: ...

    @property
    def checkpoints(self) -> RunCheckpoints: ...

    def show_trees(self) -> None: ...


async def rewind(entry: _Entry, number: int | None = None, *, busy: Callable[[], bool] | None = None) -> RewindReceipt:
    """Take back run ``number`` (default: the latest that can be) and every later run; see the module docstring.
    ``busy``: whether a run of another session is active (they share the namespace and the files: stop it first too).
    Raises :class:`~pi_notebook.session.SessionBusyError` while a run is active and
    :class:`~._checkpoints.RewindRefused` when there is nothing to take back (each with a one-line message)."""
    if entry.busy or (busy is not None and busy()):
        raise SessionBusyError(STOP_FIRST)
    with entry.checkpoints.taking(number, len(entry.runs)) as checkpoints:
        merged = plan(checkpoints)
        receipt = RewindReceipt(merged.runs)
        overwrite = await _cells(merged, receipt)
        merged.restore_files(receipt, overwrite=overwrite)
        merged.restore_variables(receipt, overwrite=overwrite)
        receipt.conversation = _move_conversation(entry.session, merged)
        receipt.not_restored += merged.untracked_lines()
    entry.show_trees()  # the run widgets' session trees: the current branch moved
    for run in entry.runs:
        if run.number in merged.runs:
            _mark(run, receipt)
    return receipt


def _mark(run: Run, receipt: RewindReceipt) -> None:
    """The receipt ends the run's event log; its widget's **Undo run** reads **Undone**."""
    for line in receipt.lines():
        run.note("rewind", line)
    if run.presenter is not None:
        runs = receipt.runs
        which = f"run {runs[0]}" if len(runs) == 1 else f"runs {runs[0]}–{runs[-1]}"
        run.presenter.undone(f"Undone ({which}): what was given back and what was not is in the event log")


async def _cells(merged: RewindPlan, receipt: RewindReceipt) -> bool:
    """Ask about conflicts (in the page, if any) and take the cells back there; returns whether the user chose to
    overwrite what they changed since."""
    touched = list(dict.fromkeys(record.cell_id for record in merged.cells))
    page = KERNEL.frontends.find(merged.notebook)
    if page is None:
        if touched:
            shown = ", ".join(q(cell) for cell in touched)
            receipt.not_restored.append(f"cells {shown}: no JupyterLab page shows the notebook now")
        return False  # nobody to ask: what the user changed since is kept (and named by the restore)
    try:
        now = await _ask(merged, {"op": "state", "cell_ids": touched}) if touched else {"cells": {}}
        cells_now: dict[str, dict[str, Any] | None] = now.get("cells") or {}
        conflicts = merged.conflicts(cells_now)
        overwrite = False
        if conflicts:
            question = {"op": "confirm", "title": _title(merged), "items": [c.line() for c in conflicts]}
            answer = await _ask(merged, question, CONFIRM_WAIT_S)
            overwrite = answer.get("answer") == "overwrite"
        if touched:
            await _restore_cells(merged, cells_now, overwrite, receipt)
    except (NotebookUnavailable, FrontendRefused) as exc:
        receipt.not_restored.append(f"cells: the page did not take them back ({exc})")
        return False
    return overwrite


def _title(merged: RewindPlan) -> str:
    runs = merged.runs
    which = f"run {runs[0]}" if len(runs) == 1 else f"runs {runs[0]}–{runs[-1]}"
    return f"Undo {which}: you changed these since. Overwrite them with what they were before?"


async def _ask(merged: RewindPlan, message: dict[str, Any], within: float = 5.0) -> dict[str, Any]:
    request = {"type": "cells", **message}
    return await KERNEL.frontends.request(merged.notebook, request, None, wait=0, reply_within=within)


async def _restore_cells(
    merged: RewindPlan, now: dict[str, dict[str, Any] | None], overwrite: bool, receipt: RewindReceipt
) -> None:
    conflicts = merged.cell_conflicts(now)
    steps: list[dict[str, Any]] = []
    seen: set[str] = set()
    for record in reversed(merged.cells):
        cell_id = record.cell_id
        if cell_id in conflicts and not overwrite:
            if cell_id not in seen:
                receipt.kept.append(f"cell {q(cell_id)}")
            seen.add(cell_id)
            continue
        step = record.inverse()
        if step is None:
            receipt.not_restored.append(f"cell {q(cell_id)}: the page did not say what it held before the run")
            continue
        if cell_id not in seen:  # its first step: the cell must still be as the page showed it a moment ago
            current = now.get(cell_id)
            step["expect"] = None if current is None else {k: current.get(k) for k in ("source", "cell_type")}
            seen.add(cell_id)
        steps.append(step)
    if not steps:
        return
    result = await _ask(merged, {"op": "rewind", "run": merged.runs[0], "steps": steps})
    for outcome in result.get("results") or []:
        name = q(str(outcome.get("cell_id")))
        if outcome.get("done"):
            receipt.add(_CELL_OUTCOMES.get(str(outcome.get("action")), "cells restored"), name)
        elif outcome.get("why"):
            receipt.not_restored.append(f"cell {name}: {outcome.get('why')}")


_CELL_OUTCOMES = {
    "delete": "cells deleted (the run inserted them)",
    "insert": "cells put back (the run deleted them)",
    "restore": "cells restored",
}


def _move_conversation(session: AgentSession, merged: RewindPlan) -> str:
    """Move the conversation back to before the first run taken back, as a fork (``AgentSession.branch_to``): the
    abandoned branch stays in the session file and in ``%pi tree``."""
    if session.leaf_id == merged.leaf_id:
        return f"as it was before run {merged.runs[0]} (the run added nothing to it)"
    session.branch_to(merged.leaf_id)
    return f"back to before run {merged.runs[0]} (the abandoned branch stays in the session file and in %pi tree)"
