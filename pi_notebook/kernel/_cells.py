"""The five cell tools as one set: their names, prompts, and how an approval question shows a call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..agent import AgentTool
from ..ai import AbortSignal
from ..tools import ToolPrompt
from . import _cell_run, _cell_tools
from ._cell_common import CellToolError, ask, cell_id_argument
from ._cell_run import cell_run_tool
from ._cell_tools import cell_delete_tool, cell_edit_tool, cell_insert_tool, edit_preview, notebook_read_tool

__all__ = ["CELL_PROMPTS", "CELL_TOOL_NAMES", "cell_preview", "cell_tools"]

CELL_TOOL_NAMES = ("notebook_read", "cell_insert", "cell_edit", "cell_delete", "cell_run")
"""The cell tools, in the order the tool set lists them."""
CELL_PROMPTS: Mapping[str, ToolPrompt] = {**_cell_tools.PROMPTS, "cell_run": _cell_run.PROMPT}
"""Each cell tool's system-prompt snippet and guidelines."""


def cell_tools() -> list[AgentTool]:
    """``notebook_read``, ``cell_insert``, ``cell_edit``, ``cell_delete``, ``cell_run``: they act on the notebook
    whose cell started the run, through its page in JupyterLab (see ``_frontend``); without such a page a call
    fails at once with an error saying so (the notebook leaves them out of a run's tool set then)."""
    return [notebook_read_tool(), cell_insert_tool(), cell_edit_tool(), cell_delete_tool(), cell_run_tool()]


async def cell_preview(name: str, args: Any, signal: AbortSignal | None) -> str:
    """What an approval question shows for a cell tool's call: the new cell, the edit's diff, or the source of the
    cell it would delete or run (read from the live notebook). A call that would fail says so instead."""
    args = args if isinstance(args, Mapping) else {}
    if name == "cell_insert":
        after = args.get("after")
        where = "at the end" if after is None else "at the top" if after == "" else f"after cell {after}"
        return f"new {args.get('cell_type', 'code')} cell {where}\n\n{args.get('source', '')}"
    if name == "cell_edit":
        return await edit_preview(args, signal)
    verb = {"cell_delete": "delete", "cell_run": "run"}.get(name, name)
    try:
        cell_id = cell_id_argument(args, name)
        cell = (await ask({"op": "get", "cell_id": cell_id}, signal, cell_id))["cell"]
    except CellToolError as exc:
        return f"(this call would fail: {exc})"
    return f"{verb} {cell['cell_type']} cell {cell_id} (index {cell['index']})\n\n{cell['source']}"
