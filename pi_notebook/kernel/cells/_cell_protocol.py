"""What the kernel and the JupyterLab extension say to each other about a notebook's cells.

The messages travel on the control comm (``pi_notebook.notebook._control_comm``, ``labextension/src/control.ts``),
beside the run-state messages. The kernel asks, the page that shows the notebook acts on its live model
(``labextension/src/cells.ts``) and answers:

* kernel -> page: ``{"type": "cells", "request": N, "op": ..., ...}``, one :data:`CellOp` and its fields (one
  ``TypedDict`` per op below). ``request`` numbers the question (``0``: a notification, no answer: the outputs
  of a running cell).
* page -> kernel: ``{"action": "cells", "request": N, "ok": true, "result": {...}}`` or
  ``{"action": "cells", "request": N, "ok": false, "error": <CellError>, "message": "..."}``.

A request that changes a cell (``insert`` aside) is answered with the cell as it was the moment before the change
(``before``: a :class:`CellBefore`), which the run's checkpoint keeps (``_checkpoint_cells``); ``state``, ``confirm``
and ``rewind`` take a run back (``pi_notebook.notebook._rewind``).

The page enforces the rules that must hold at the moment of the change (a cell tagged :data:`PROTECTED_TAG` is
neither edited, deleted nor run; an edit applies only if the cell's source is still the one the kernel read,
:data:`CellError` ``changed``), so a user typing meanwhile never loses a keystroke. Everything else (matching
``oldText``, the texts the model reads, limits) is the kernel's.

The TypeScript side declares the same unions (``CellOp``, ``CellError``, ``CellType``) and one interface per message
(``ICellsReadRequest`` for :class:`ReadRequest`, ...); ``tests/test_protocol.py`` fails when a name or a field is on
one side only. This module is the one definition; ``pi_notebook.notebook.widget._protocol`` re-exports it.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

__all__ = [
    "AGENT_TAG",
    "CELL_MESSAGES",
    "METADATA_KEY",
    "PROTECTED_TAG",
    "CellAction",
    "CellBefore",
    "CellError",
    "CellInfo",
    "CellOp",
    "CellType",
    "CellsReply",
    "CheckRequest",
    "ConfirmRequest",
    "DeleteRequest",
    "EditRequest",
    "GetRequest",
    "InsertRequest",
    "ReadRequest",
    "RewindRequest",
    "RewindStep",
    "RunBeginRequest",
    "RunEndRequest",
    "RunOutputRequest",
    "StateRequest",
]

AGENT_TAG = "pi-agent"
"""The tag a cell the agent inserted or edited carries (shown in JupyterLab's property inspector, and as a mark
on the cell by the extension)."""
PROTECTED_TAG = "pi-protected"
"""A cell with this tag is never edited, deleted or run by the agent."""
METADATA_KEY = "pi_notebook"
"""Cell metadata the agent's changes leave: ``{"run": N, "change": "inserted" | "edited"}``."""

CellOp: TypeAlias = Literal[
    "read",
    "get",
    "check",
    "insert",
    "edit",
    "delete",
    "run_begin",
    "run_output",
    "run_end",
    "state",
    "confirm",
    "rewind",
]
CellError: TypeAlias = Literal["not_found", "protected", "changed", "not_code", "invalid"]
"""Why the page refused: no cell with that id; the cell is tagged ``pi-protected``; its source is no longer the one
the kernel read (the user typed); the cell is not a code cell (``run_begin``); a malformed request."""
CellType: TypeAlias = Literal["code", "markdown", "raw"]
CellAction: TypeAlias = Literal["edit", "delete", "run"]
"""What a ``check`` asks about (``edit`` also stands for the ``editable`` metadata, ``delete`` for ``deletable``)."""


class CellInfo(TypedDict):
    """One cell as the page reports it: ``outputs`` are nbformat outputs (``[]`` for other than code cells),
    ``execution_count`` ``None`` when it has not run."""

    id: str
    index: int
    cell_type: CellType
    source: str
    execution_count: int | None
    outputs: list[dict[str, Any]]
    tags: list[str]


class ReadRequest(TypedDict):
    """Cells ``start`` to ``end`` (exclusive, clamped) -> ``{"cells": [CellInfo], "total": n, "path": str}``."""

    type: Literal["cells"]
    request: int
    op: Literal["read"]
    start: int
    end: int | None


class GetRequest(TypedDict):
    """One cell -> ``{"cell": CellInfo}``."""

    type: Literal["cells"]
    request: int
    op: Literal["get"]
    cell_id: str


class CheckRequest(TypedDict):
    """Would the page let the agent ``action`` this cell now? -> ``{}``, or the refusal the change itself would get
    (``not_found``, ``protected``, ``not_code``). Changes nothing (asked before the user is asked to approve)."""

    type: Literal["cells"]
    request: int
    op: Literal["check"]
    cell_id: str
    action: CellAction


class InsertRequest(TypedDict):
    """A new cell after ``after`` (``None``: at the end; ``""``: at the top), tagged and marked with ``run``
    -> ``{"cell_id": str, "index": int}``."""

    type: Literal["cells"]
    request: int
    op: Literal["insert"]
    source: str
    cell_type: CellType
    after: str | None
    run: int


class CellBefore(TypedDict):
    """A cell the moment before a change: its nbformat JSON (``id``, ``cell_type``, ``source``, ``metadata`` and, for
    code, ``outputs`` and ``execution_count``), its ``index`` and the id of the cell above it (``anchor``, ``""``
    for the first cell)."""

    cell: dict[str, Any]
    index: int
    anchor: str


class EditRequest(TypedDict):
    """Set the cell's source to ``source`` if it is still ``expect`` (one undo step; tagged and marked with ``run``)
    -> ``{"index": int, "before": CellBefore}``."""

    type: Literal["cells"]
    request: int
    op: Literal["edit"]
    cell_id: str
    source: str
    expect: str
    run: int


class DeleteRequest(TypedDict):
    """Delete the cell (one undo step) -> ``{"cell": CellInfo, "before": CellBefore}`` (the cell as it was)."""

    type: Literal["cells"]
    request: int
    op: Literal["delete"]
    cell_id: str
    run: int


class RunBeginRequest(TypedDict):
    """The kernel is about to run this code cell: clear its outputs and count, show it running
    -> ``{"index": int, "source": str, "before": CellBefore}`` (the source the kernel then runs)."""

    type: Literal["cells"]
    request: int
    op: Literal["run_begin"]
    cell_id: str
    run: int


class RunOutputRequest(TypedDict):
    """Outputs the running cell produced since the last message (notification, ``request`` 0): ``clear`` first
    (``clear_output()``), then add ``outputs`` (consecutive streams merge)."""

    type: Literal["cells"]
    request: int
    op: Literal["run_output"]
    cell_id: str
    clear: bool
    outputs: list[dict[str, Any]]


class RunEndRequest(TypedDict):
    """The cell's code ended (notification): its outputs are exactly ``outputs``, its count ``execution_count``; it
    is idle again. ``ran`` false: the run was stopped before the code started; the page puts back the outputs and
    count it cleared at ``run_begin`` (if it saw it)."""

    type: Literal["cells"]
    request: int
    op: Literal["run_end"]
    cell_id: str
    ran: bool
    execution_count: int | None
    outputs: list[dict[str, Any]]


class StateRequest(TypedDict):
    """The cells ``cell_ids`` as they are now -> ``{"cells": {id: {"source", "cell_type", "execution_count",
    "index"} | None}}`` (``None``: no such cell)."""

    type: Literal["cells"]
    request: int
    op: Literal["state"]
    cell_ids: list[str]


class ConfirmRequest(TypedDict):
    """Ask the user, in a dialog, whether a rewind overwrites what they changed since the run (``items``: one line
    each) -> ``{"answer": "overwrite" | "keep"}`` (closing the dialog keeps theirs)."""

    type: Literal["cells"]
    request: int
    op: Literal["confirm"]
    title: str
    items: list[str]


class RewindStep(TypedDict):
    """One step of a rewind: ``delete`` the cell, ``insert`` ``cell`` (nbformat JSON) after ``anchor`` (else at
    ``index``), or ``restore`` the cell's content to ``cell``. ``expect``: what the cell must hold for the step to be
    taken (``{"source", "cell_type"}``, ``None``: it must not exist; absent: no check); a step refused leaves the
    cell's later steps out too."""

    action: Literal["delete", "insert", "restore"]
    cell_id: str
    cell: NotRequired[dict[str, Any]]
    index: NotRequired[int]
    anchor: NotRequired[str | None]
    expect: NotRequired[dict[str, Any] | None]


class RewindRequest(TypedDict):
    """Take the cells back, in one transaction of the notebook (one step of JupyterLab's undo) -> ``{"results":
    [{"cell_id", "action", "done": bool, "why": str}]}``, one per step, in order."""

    type: Literal["cells"]
    request: int
    op: Literal["rewind"]
    run: int
    steps: list[RewindStep]


class CellsReply(TypedDict, total=False):
    """The page's answer to a request (``result`` when ``ok``, else ``error`` and ``message``)."""

    action: Literal["cells"]
    request: int
    ok: bool
    result: dict[str, Any]
    error: CellError
    message: str


CELL_MESSAGES: dict[str, type] = {
    "ICellInfo": CellInfo,
    "ICellsReadRequest": ReadRequest,
    "ICellsGetRequest": GetRequest,
    "ICellsCheckRequest": CheckRequest,
    "ICellsInsertRequest": InsertRequest,
    "ICellsEditRequest": EditRequest,
    "ICellsDeleteRequest": DeleteRequest,
    "ICellsRunBeginRequest": RunBeginRequest,
    "ICellsRunOutputRequest": RunOutputRequest,
    "ICellsRunEndRequest": RunEndRequest,
    "ICellBefore": CellBefore,
    "ICellsStateRequest": StateRequest,
    "ICellsConfirmRequest": ConfirmRequest,
    "IRewindStep": RewindStep,
    "ICellsRewindRequest": RewindRequest,
    "ICellsReply": CellsReply,
}
"""Each message by the name of its TypeScript interface (``labextension/src/cellProtocol.ts``)."""
