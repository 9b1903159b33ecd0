"""What the five cell tools share: their error, how a page's refusal reads, asking the run's notebook page (and noting
a change in the run's checkpoint)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...ai import AbortSignal, ToolError
from ...session import AbortRun
from .._checkpoint import current_checkpoint
from .._checkpoint_cells import complete
from .._frontend import (
    CellChangeKind,
    FrontendRefused,
    NotebookUnavailable,
    current_notebook,
)
from .._kernel import KERNEL
from ._cell_protocol import PROTECTED_TAG, CellAction, CellInfo

__all__ = [
    "CellKernelInterrupt",
    "CellToolError",
    "ask",
    "ask_changing",
    "cell_call_text",
    "cell_id_argument",
    "note_ran",
    "page_refusal",
    "record",
    "refused_text",
]


class CellToolError(ToolError):
    """Raised by a cell tool's ``execute``; the agent loop turns its text into an error tool result.

    ``reason``: ``"invalid"`` (bad arguments), ``"unavailable"`` (no page shows the notebook), ``"refused"`` (the
    page refused: see ``refused_text``), ``"aborted"`` (the run was stopped first), and for ``cell_run``
    ``"error"`` (the cell raised), ``"interrupted"`` (a stop) or ``"timeout"`` (its own ``timeout``). ``details``
    as for a successful result.
    """

    def __init__(self, text: str, reason: str, details: Any = None) -> None:
        super().__init__(text)
        self.reason = reason
        self.details = details


class CellKernelInterrupt(CellToolError, AbortRun):
    """The kernel's interrupt ended the cell's code: an error result, and the session aborts the run."""


def refused_text(error: FrontendRefused, cell_id: str, message: str = "") -> str:
    """What the model reads when the page refused a request about ``cell_id``."""
    match error.error:
        case "not_found":
            return f"No cell with id {cell_id!r} in the notebook. Use notebook_read to see the cells and their ids."
        case "protected":
            return (
                f"Cell {cell_id} is tagged {PROTECTED_TAG}: the agent may not edit, delete or run it. Ask the user "
                f"to remove the tag if it should change."
            )
        case "changed":
            return (
                f"Cell {cell_id} changed while it was being edited (the user may be typing in it); it was left as "
                "the user has it. Read it again with notebook_read and retry."
            )
        case "not_code":
            return f"Cell {cell_id} is not a code cell: {message or 'only code cells can run'}."
        case _:
            return f"The notebook refused the request: {error}"


def cell_id_argument(args: Any, tool: str, name: str = "cell_id") -> str:
    value = args.get(name) if isinstance(args, Mapping) else None
    if not isinstance(value, str) or not value:
        raise CellToolError(f"Invalid {tool} input: {name} must be a cell id (a non-empty string)", "invalid")
    return value


async def ask(message: dict[str, Any], signal: AbortSignal | None, cell_id: str = "") -> dict[str, Any]:
    """Send ``message`` to the run's notebook page and return its result; a refusal, a missing page or an abort
    raise :class:`CellToolError` with the text the model reads."""
    if signal is not None and signal.aborted:
        raise CellToolError("Operation aborted", "aborted")
    try:
        return await KERNEL.frontends.request(current_notebook.get(), {"type": "cells", **message}, signal)
    except FrontendRefused as refusal:
        raise CellToolError(refused_text(refusal, cell_id, str(refusal)), "refused") from None
    except NotebookUnavailable as missing:
        reason = "aborted" if signal is not None and signal.aborted else "unavailable"
        raise CellToolError(str(missing), reason) from None


def cell_summary(cell: CellInfo) -> dict[str, Any]:
    """A cell's identity for a result's ``details`` (and the run's receipt)."""
    return {"cell_id": cell["id"], "index": cell["index"], "cell_type": cell["cell_type"]}


def record(call: str, kind: CellChangeKind, cell_id: str, reason: str = "") -> None:
    """Note what a tool did to the notebook on the run's ledger (``NotebookTarget.changes``)."""
    target = current_notebook.get()
    if target is not None:
        target.changes.record(call, kind, cell_id, reason)


async def page_refusal(action: CellAction, args: Any, signal: AbortSignal | None, tool: str) -> str | None:
    """The text the model reads when the page would refuse to ``action`` the call's cell (it is tagged
    ``pi-protected``, gone, or not code), asked before the user is (``AgentTool.refusal``); ``None`` when the page
    would let it, or cannot say (no page: the call is asked about, and fails when it runs)."""
    try:
        cell_id = cell_id_argument(args, tool)
        await ask({"op": "check", "cell_id": cell_id, "action": action}, signal, cell_id)
    except CellToolError as exc:
        return str(exc) if exc.reason in ("refused", "invalid") else None
    return None


async def source_preview(verb: str, args: Any, tool: str) -> str:
    """What an approval question shows of a call that deletes or runs a cell: the cell's source, read from the
    live notebook; a call that would fail says so instead."""
    try:
        cell_id = cell_id_argument(args, tool)
        cell = (await ask({"op": "get", "cell_id": cell_id}, None, cell_id))["cell"]
    except CellToolError as exc:
        return f"(this call would fail: {exc})"
    return f"{verb} {cell['cell_type']} cell {cell_id} (index {cell['index']})\n\n{cell['source']}"


def cell_call_text(verb: str) -> Callable[[Mapping[str, Any]], str]:
    """A tool panel's line for a call on one cell (``run cell 3f1a``): its source is in the approval question,
    read from the live notebook, and in the cell itself."""
    return lambda args: f"{verb} cell {args.get('cell_id', '')}"


async def ask_changing(message: dict[str, Any], signal: AbortSignal | None, cell_id: str = "") -> dict[str, Any]:
    """``ask`` for a request that changes a cell (``insert``, ``edit``, ``delete``, ``run_begin``), noted in the run's
    checkpoint before it is sent and completed from the page's answer (``_checkpoint_cells``)."""
    checkpoint = current_checkpoint.get()
    if checkpoint is None or (signal is not None and signal.aborted):
        return await ask(message, signal, cell_id)
    record = checkpoint.cells.begin(message["op"], cell_id)
    try:
        result = await ask(message, signal, cell_id)
    except CellToolError as exc:
        if exc.reason in ("refused", "invalid"):
            checkpoint.cells.refused(record)
        raise
    complete(record, message, result)
    return result


def note_ran(cell_id: str, count: int | None) -> None:
    """``cell_run``'s cell ended with execution count ``count``."""
    checkpoint = current_checkpoint.get()
    if checkpoint is not None:
        checkpoint.cells.ran(cell_id, count)
