"""``notebook_read``, ``cell_insert``, ``cell_edit`` and ``cell_delete``: the agent reads and changes the notebook the
user sees, through its live model in the browser.

Every call asks the page that shows the run's notebook (``_frontend``) over the control comm; the page acts on
JupyterLab's notebook model, so a change shows at once, is one step of JupyterLab's undo, and the user's unsaved
edits stay (the kernel never writes the ``.ipynb``). Cells are addressed by their nbformat id. A cell the agent
inserts or edits is tagged ``pi-agent`` and its metadata ``pi_notebook`` records the run (``{"run": 3, "change":
"edited"}``); a cell tagged ``pi-protected`` is never edited or deleted (a tool error says so).

``cell_edit`` takes the ``edit`` tool's ``edits: [{oldText, newText}]`` and applies them with the same code
(``pi_notebook.tools._edits``: each ``oldText`` exact, then Pi's whitespace/quote-tolerant match, unique, not
overlapping; Pi's error texts with "cell <id>" where they name a file), or ``source`` for the whole new source. It
reads the cell, applies the edits, and asks the page to set the result *only if the cell still holds what was read*:
if the user typed meanwhile the edit is refused ("changed") and nothing of theirs is lost. The result carries Pi's
numbered diff (``details.diff``, ``details.patch``), also shown to the model.

``notebook_read`` never changes anything and never asks for approval; the others ask by default
(``tools.approval``), showing the diff or the source (each tool's ``preview``). A call the page would refuse (a
``pi-protected`` cell, one JupyterLab keeps from editing or deleting, a cell that is gone) or an edit that does not
apply is refused before the user is asked (each tool's ``refusal``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...agent import AgentTool, AgentToolResult, ToolPrompt
from ...ai import AbortSignal
from ...tools import FileToolError, apply_edits, generate_diff_string, generate_unified_patch, normalize_to_lf
from ...tools.edit import parse_edits, prepare_edit_arguments
from .._frontend import current_notebook
from ._cell_protocol import CellInfo
from ._shared import (
    CellToolError,
    ask,
    ask_changing,
    cell_call_text,
    cell_id_argument,
    cell_summary,
    page_refusal,
    record,
    source_preview,
)
from ._text import cell_details, read_text

__all__ = ["cell_delete_tool", "cell_edit_tool", "cell_insert_tool", "edit_preview", "notebook_read_tool"]

_PROMPTS: dict[str, ToolPrompt] = {
    "notebook_read": ToolPrompt(
        "Read the notebook's cells: ids, sources, execution counts and outputs",
        ("Use notebook_read to see the notebook before changing it; address cells by their id, never by position",),
    ),
    "cell_insert": ToolPrompt(
        "Insert a code or markdown cell into the notebook (after a given cell id)",
        ("Put code the user should keep in the notebook with cell_insert and cell_run; use python for quick looks",),
    ),
    "cell_edit": ToolPrompt(
        "Edit a notebook cell with exact text replacement (edits[].oldText/newText), or replace its source",
        ("Cells tagged pi-protected cannot be edited, deleted or run",),
    ),
    "cell_delete": ToolPrompt("Delete a notebook cell by id"),
}


def _insert_preview(args: Mapping[str, Any]) -> str:
    """What the approval question shows of a ``cell_insert`` call: where, and the new cell's source."""
    after = args.get("after")
    where = "at the end" if after is None else "at the top" if after == "" else f"after cell {after}"
    return f"new {args.get('cell_type', 'code')} cell {where}\n\n{args.get('source', '')}"


def _run_number() -> int:
    target = current_notebook.get()
    return target.run if target is not None else 0


# -- notebook_read -------------------------------------------------------------------------------------------
READ_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "start": {"type": "integer", "description": "Index of the first cell to read (0-based, default 0)"},
        "end": {"type": "integer", "description": "Index after the last cell to read (default: the end)"},
        "outputs": {"type": "boolean", "description": "Include the cells' outputs (default true)"},
    },
}


def _index(args: Mapping[str, Any], name: str) -> int | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CellToolError(f"Invalid notebook_read input: {name} must be a cell index (an integer >= 0)", "invalid")
    return value


async def _read(tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: Any) -> AgentToolResult:
    args = args if isinstance(args, Mapping) else {}
    start, end = _index(args, "start") or 0, _index(args, "end")
    outputs = args.get("outputs", True) is not False
    result = await ask({"op": "read", "start": start, "end": end}, signal)
    cells: list[CellInfo] = list(result.get("cells") or [])
    total = int(result.get("total") or 0)
    if not cells:
        text = f"The notebook has {total} cell(s); none from index {start}." if total else "The notebook is empty."
        return AgentToolResult(content=text, details={"path": result.get("path"), "total": total, "cells": []})
    text, shown = read_text(cells, total=total, outputs=outputs)
    details = {
        "path": result.get("path"),
        "total": total,
        "start": cells[0]["index"],
        "end": cells[shown - 1]["index"] + 1,
        "cells": [cell_details(cell, outputs=outputs) for cell in cells[:shown]],
    }
    return AgentToolResult(content=text, details=details)


def notebook_read_tool() -> AgentTool:
    """``notebook_read {start?, end?, outputs?}``: the notebook's cells as text (see ``_text``)."""
    return AgentTool(
        name="notebook_read",
        label="notebook_read",
        description=(
            "Read the cells of the notebook the user has open: each cell's id, index, type, source, execution count "
            "and outputs (text tail-truncated; images as [image/png WxH]). Long notebooks are shown in parts: the "
            "result says which start to read next. Use the ids with cell_edit, cell_run, cell_delete and "
            "cell_insert's after."
        ),
        parameters=READ_PARAMETERS,
        execute=_read,
        approval="never",
        prompt=_PROMPTS["notebook_read"],
    )


# -- cell_insert ---------------------------------------------------------------------------------------------
INSERT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["source"],
    "properties": {
        "source": {"type": "string", "description": "The new cell's source"},
        "cell_type": {"type": "string", "enum": ["code", "markdown"], "description": "Default: code"},
        "after": {
            "type": "string",
            "description": 'Id of the cell to insert after; "" inserts at the top; omit it to append at the end',
        },
    },
}


async def _insert(tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: Any) -> AgentToolResult:
    args = args if isinstance(args, Mapping) else {}
    source, cell_type, after = args.get("source"), args.get("cell_type", "code"), args.get("after")
    if not isinstance(source, str):
        raise CellToolError("Invalid cell_insert input: source must be a string", "invalid")
    if cell_type not in ("code", "markdown"):
        raise CellToolError('Invalid cell_insert input: cell_type must be "code" or "markdown"', "invalid")
    if after is not None and not isinstance(after, str):
        raise CellToolError("Invalid cell_insert input: after must be a cell id", "invalid")
    message = {"op": "insert", "source": source, "cell_type": cell_type, "after": after, "run": _run_number()}
    result = await ask_changing(message, signal, after or "")
    cell_id, index = str(result.get("cell_id")), int(result.get("index") or 0)
    record(tool_call_id, "inserted", cell_id)
    where = "at the end" if after is None else "at the top" if after == "" else f"after cell {after}"
    text = f"Inserted {cell_type} cell {cell_id} at index {index} ({where})."
    return AgentToolResult(content=text, details={"cell_id": cell_id, "index": index, "cell_type": cell_type})


def cell_insert_tool() -> AgentTool:
    return AgentTool(
        name="cell_insert",
        label="cell_insert",
        description=(
            'Insert a new cell into the notebook the user has open, after the cell with the given id ("" for the '
            "top; omit after to append). Returns the new cell's id. The cell is not run: use cell_run."
        ),
        parameters=INSERT_PARAMETERS,
        execute=_insert,
        execution_mode="sequential",
        approval="ask",
        preview=_insert_preview,
        prompt=_PROMPTS["cell_insert"],
    )


# -- cell_edit -----------------------------------------------------------------------------------------------
EDIT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["cell_id"],
    "properties": {
        "cell_id": {"type": "string", "description": "Id of the cell to edit"},
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["oldText", "newText"],
                "properties": {
                    "oldText": {
                        "type": "string",
                        "description": "Exact text for one replacement; unique in the cell, not overlapping others",
                    },
                    "newText": {"type": "string", "description": "Replacement text"},
                },
            },
            "description": "Targeted replacements, each matched against the cell's current source",
        },
        "source": {"type": "string", "description": "The whole new source (instead of edits)"},
    },
}


def _prepare_edit(raw: dict[str, Any]) -> dict[str, Any]:
    """The ``edit`` tool's argument repairs (``edits`` as a JSON string, top-level ``oldText``/``newText``)."""
    return prepare_edit_arguments(raw) if isinstance(raw, Mapping) and "source" not in raw else raw


def _new_source(args: Mapping[str, Any], cell_id: str, old: str) -> str:
    """The cell's source after the call's ``edits`` (the ``edit`` tool's rules) or its ``source``."""
    has_edits, has_source = args.get("edits") is not None, args.get("source") is not None
    if has_edits == has_source:
        raise CellToolError("Invalid cell_edit input: give either edits or source (one of them)", "invalid")
    if has_source:
        source = args["source"]
        if not isinstance(source, str):
            raise CellToolError("Invalid cell_edit input: source must be a string", "invalid")
        if source == old:
            raise CellToolError(f"No changes made to cell {cell_id}. The new source is the same.", "invalid")
        return source
    try:
        return apply_edits(normalize_to_lf(old), parse_edits(args), f"cell {cell_id}")[1]
    except FileToolError as exc:
        raise CellToolError(str(exc).replace("Edit tool input", "cell_edit input"), "invalid") from None


def _diff(cell_id: str, old: str, new: str) -> dict[str, Any]:
    base = normalize_to_lf(old)
    diff, first_changed = generate_diff_string(base, new)
    patch = generate_unified_patch(f"cell {cell_id}", base, new)
    return {"diff": diff, "patch": patch, "firstChangedLine": first_changed}


async def _get(cell_id: str, signal: AbortSignal | None) -> CellInfo:
    result = await ask({"op": "get", "cell_id": cell_id}, signal, cell_id)
    cell: CellInfo = result["cell"]
    return cell


async def _edit(tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: Any) -> AgentToolResult:
    cell_id = cell_id_argument(args, "cell_edit")
    cell = await _get(cell_id, signal)
    new = _new_source(args, cell_id, cell["source"])
    message = {"op": "edit", "cell_id": cell_id, "source": new, "expect": cell["source"], "run": _run_number()}
    await ask_changing(message, signal, cell_id)
    record(tool_call_id, "edited", cell_id)
    details = {**cell_summary(cell), **_diff(cell_id, cell["source"], new)}
    count = len(args["edits"]) if args.get("edits") is not None else 0
    what = f"Successfully replaced {count} block(s) in cell {cell_id}." if count else f"Replaced cell {cell_id}."
    return AgentToolResult(content=f"{what}\n\n{details['diff']}", details=details)


def cell_edit_tool() -> AgentTool:
    return AgentTool(
        name="cell_edit",
        label="cell_edit",
        description=(
            "Edit a cell of the notebook the user has open, by id, with exact text replacement: every "
            "edits[].oldText must match a unique, non-overlapping region of the cell's current source (as the edit "
            "tool does for files). Or give source to replace the whole cell. Returns a diff. The cell is not run."
        ),
        parameters=EDIT_PARAMETERS,
        execute=_edit,
        execution_mode="sequential",
        approval="ask",
        preview=lambda args: edit_preview(args, None),
        call_text=_edit_call_text,
        preview_syntax="diff",
        prompt=_PROMPTS["cell_edit"],
        prepare_arguments=_prepare_edit,
        refusal=edit_refusal,
    )


def _edit_call_text(args: Mapping[str, Any]) -> str:
    """A ``cell_edit`` call as its tool panel shows it: each replacement as removed and added lines (the approval
    question shows Pi's numbered diff of the cell as it is now)."""
    edits = _prepare_edit(dict(args)).get("edits")
    parts = [f"cell {args.get('cell_id', '')}"]
    if isinstance(args.get("source"), str):
        parts.append(_lines("+", args["source"]))
    for edit in edits if isinstance(edits, list) else []:
        if isinstance(edit, Mapping):
            parts.append(_lines("-", str(edit.get("oldText", ""))) + "\n" + _lines("+", str(edit.get("newText", ""))))
    return "\n\n".join(parts)


def _lines(sign: str, text: str) -> str:
    return "\n".join(f"{sign} {line}" for line in text.split("\n"))


async def edit_refusal(args: Any, signal: AbortSignal | None) -> str | None:
    """Why a ``cell_edit`` call would fail anyway, asked before the user approves it: the page refuses the cell
    (``pi-protected``, ``editable: false``, gone) or the edits do not apply to its source."""
    refused = await page_refusal("edit", args, signal, "cell_edit")
    if refused is not None:
        return refused
    try:
        cell_id = cell_id_argument(args, "cell_edit")
        _new_source(_prepare_edit(dict(args)), cell_id, (await _get(cell_id, signal))["source"])
    except CellToolError as exc:
        return str(exc) if exc.reason in ("refused", "invalid") else None
    return None


async def edit_preview(args: Any, signal: AbortSignal | None) -> str:
    """What a ``cell_edit`` call would change, as Pi's numbered diff (for the approval question); a call that
    would fail gives its error text instead."""
    try:
        cell_id = cell_id_argument(args, "cell_edit")
        cell = await _get(cell_id, signal)
        new = _new_source(_prepare_edit(dict(args)), cell_id, cell["source"])
    except CellToolError as exc:
        return f"(this edit would fail: {exc})"
    return f"cell {cell_id}\n\n" + str(_diff(cell_id, cell["source"], new)["diff"])


# -- cell_delete ---------------------------------------------------------------------------------------------
async def _delete(tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: Any) -> AgentToolResult:
    cell_id = cell_id_argument(args, "cell_delete")
    result = await ask_changing({"op": "delete", "cell_id": cell_id, "run": _run_number()}, signal, cell_id)
    cell: CellInfo = result["cell"]
    record(tool_call_id, "deleted", cell_id)
    text = f"Deleted {cell['cell_type']} cell {cell_id} (it was at index {cell['index']})."
    return AgentToolResult(content=text, details={**cell_summary(cell), "source": cell["source"]})


def cell_delete_tool() -> AgentTool:
    return AgentTool(
        name="cell_delete",
        label="cell_delete",
        description="Delete a cell, by id, from the notebook the user has open (the user can undo it).",
        parameters={
            "type": "object",
            "required": ["cell_id"],
            "properties": {"cell_id": {"type": "string", "description": "Id of the cell to delete"}},
        },
        execute=_delete,
        execution_mode="sequential",
        approval="ask",
        preview=lambda args: source_preview("delete", args, "cell_delete"),
        call_text=cell_call_text("delete"),
        prompt=_PROMPTS["cell_delete"],
        refusal=lambda args, signal: page_refusal("delete", args, signal, "cell_delete"),
    )
