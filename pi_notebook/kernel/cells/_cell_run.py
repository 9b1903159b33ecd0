"""``cell_run``: the agent runs a notebook cell as the user would, and every stop path stops it.

``cell_run {"cell_id", "timeout"?}`` runs the cell's code, shows its outputs and execution count in the cell (in
the notebook, live, while it runs), waits for it, and returns its outputs bounded as ``notebook_read`` shows them
(``_text``; 2000 lines / 50 KB of tail, as ``bash``).

How the cell's code runs, and why
---------------------------------
**The kernel runs the cell's source itself, on its main thread, with the python tool's executor and stop machinery
(``pi_notebook.kernel.python_tool.run_stoppable``), inside the run's task; the page only shows it.** In order:

1. ``run_begin`` to the page that shows the run's notebook (``_frontend``): it checks the cell (exists, is code,
   is not tagged ``pi-protected``), clears its outputs and count, shows it running (``[*]``), and answers with
   the cell's source as it is now in the live model (unsaved edits included).
2. The kernel takes the next execution count and records the source in IPython's history (``In``, ``_i``), as a
   cell does, then runs it as a cell would (magics, the last expression's value, ``display()``, the figures
   matplotlib's inline backend would show), in the user's namespace. Prints and displays go to the page every
   50 ms as ``run_output`` notifications from a flusher thread (``_live_outputs``), since the code blocks the
   event loop; they also show in the run widget's panel for the call, as the python tool's do.
3. ``run_end`` gives the page the cell's complete outputs (the value as ``execute_result`` with its count, or the
   error with its traceback, ``KeyboardInterrupt`` after a stop) and its count; the value is also ``Out[n]``.

The alternatives, and why not:

- **The page's own execute request** (what Shift+Enter does). An ``execute_request`` goes to the kernel's main
  shell, which runs one request at a time: while a cell of the user's ``await``\\ s the run (``await run``, ``%pi
  wait``), the request would queue behind that cell, which waits for the run, which waits for the request: a
  deadlock. The outputs and the reply go to the page that sent the request, so after a reload nobody receives
  them and the tool could not tell when the cell ended. Stop could only interrupt the whole kernel (the
  interrupt button's SIGINT), which would also cancel an awaiting cell, and "no later cell starts" would depend on
  the page's queue of pending executes.
- **An execute request on a kernel subshell** (ipykernel 7). No deadlock, but the code would run on the
  subshell's thread: no SIGINT there, so ``time.sleep(1000)`` or a socket read cannot be interrupted (only pure
  Python can, through ``PyThreadState_SetAsyncExc``), matplotlib and other main-thread libraries misbehave, it
  races the user's next cell on the same namespace, and it needs JupyterLab >= 4.4 to send it.
- **This design.** The run's task is an ordinary task on the kernel's event loop, which is free while a cell
  ``await``\\ s (no deadlock, whatever the main shell is doing), and the code runs on the main thread exactly as the
  ``python`` tool's does, so every stop path ends it the same way, within milliseconds: the run widget's Stop, the
  toolbar Stop and Accel+. (the control comm, on a subshell thread, sends SIGINT to the main thread and holds the
  interrupt until the run settled), the kernel's interrupt (the run is then aborted: ``CellKernelInterrupt``),
  the call's ``timeout`` and ``timeouts.tool_ms`` (an error result; the run goes on), ``timeouts.turn_ms`` and the
  wall-time budget (the run is aborted). ``KeyboardInterrupt`` lands in the cell's output. The outputs are the
  kernel's to send, to whichever page shows the notebook at that moment, so a reload midway loses nothing that
  matters: the reloaded page gets the rest, and ``run_end`` carries everything. The price: the page does not run the
  code, so JupyterLab's own execution hooks (its ``executed`` signal, execution timing metadata) do not fire, and
  IPython's ``pre_run_cell``/``post_run_cell`` events are not triggered (the python tool's code does not trigger
  them either); the ``%pi`` magic's own hooks rely on them being per user cell. And a cell with top-level
  ``await`` cannot run this way (its code would have to run on the event loop, where SIGINT cannot end it safely):
  its error says so and asks the model to leave it to the user (:data:`CELL_AWAIT_HINT`).

"No later cell the agent asked to run ever starts" after a Stop: cell tools are sequential, so the agent loop runs
the next call only after this one and stops the batch once the run's signal aborts; this tool waits for that abort
before it returns (``CodeRun.let_abort_land``), checks the signal before it asks the page, and the control comm's
held interrupt ends any code that still starts before the run has settled.

Execution counts: the cell takes the kernel's next count, its source becomes ``In[n]`` and its value ``Out[n]``, and
the count moves on, as for a cell. While a cell of the user's is itself running (awaiting the run) it has already
stored its input under the current count, which IPython gives it only when it ends: the agent's cell takes that
count and goes before it in ``In``, and the user's cell ends with the next count, so the numbers stay unique and
``In``/``Out`` match them (the history database, which already has the user's cell under that number, does not get
the agent's cell then).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ...agent import AgentTool, AgentToolResult, ToolPrompt
from ...ai import AbortSignal, Deadline, known_secrets
from ...tools import OutputAccumulator
from ...tools.bash import resolve_timeout
from .._exec import AWAIT_HINT, current_shell
from .._frontend import current_notebook
from .._kernel import KERNEL
from ..python_tool import CodeEnding, CodeRun, run_stoppable
from ._live_outputs import CellOutputs
from ._shared import (
    CellKernelInterrupt,
    CellToolError,
    ask_changing,
    cell_call_text,
    cell_id_argument,
    note_ran,
    page_refusal,
    record,
    source_preview,
)
from ._text import RUN_OUTPUT_BYTES, RUN_OUTPUT_LINES, outputs_text

__all__ = ["CELL_AWAIT_HINT", "PROMPT", "cell_run_tool"]

PROMPT = ToolPrompt(
    "Run a notebook cell by id, as the user would (its outputs show in the cell), and read its output",
    ("cell_run runs the cell's current source; edit it first with cell_edit if it needs to change",),
)

CELL_AWAIT_HINT = (
    "The agent runs a cell's code synchronously on the kernel's main thread, so a cell with top-level await cannot be "
    "run by cell_run; ask the user to run it, or put the awaited work in a coroutine started with "
    "asyncio.ensure_future(...)."
)
"""Replaces the python tool's hint about top-level ``await`` in a cell's error (see the module docstring)."""

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["cell_id"],
    "properties": {
        "cell_id": {"type": "string", "description": "Id of the code cell to run"},
        "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"},
    },
}


def _take_count(shell: Any, source: str) -> int | None:
    """The cell's execution count, with its source in IPython's history (``In[n]``, ``_i<n>``), as a cell's (see
    the module docstring for a cell of the user's running meanwhile)."""
    if shell is None:
        return None
    manager = shell.history_manager
    try:
        parsed = shell.transform_cell(source)
    except Exception:  # a broken transform fails again, visibly, when the code runs
        parsed = source
    running: Any = getattr(getattr(shell, "displayhook", None), "exec_result", None)  # a cell of the user's runs
    count = getattr(running, "execution_count", None)
    if isinstance(count, int) and len(manager.input_hist_parsed) == count + 1:
        # That cell stored its input under its count: ours goes before it in ``In`` and takes that count, that
        # cell ends with the next (its result, its reply and its ``Out`` read the shell's count when it ends:
        # IPython 8 counts a cell when it ends, 9 when it starts, so one more either way). Not in the history
        # database, where that cell already has this line number.
        manager.input_hist_parsed.insert(count, parsed)
        manager.input_hist_raw.insert(count, source)
        shell.user_ns[f"_i{count + 1}"] = manager.input_hist_raw[count + 1]
        shell.user_ns[f"_i{count}"] = source
        running.execution_count = count + 1
        shell.execution_count += 1
        return count
    count = int(shell.execution_count)
    manager.store_inputs(count, parsed, source)
    shell.execution_count = count + 1
    return count


def _final_outputs(ran: CodeRun, count: int | None, outputs: list[dict[str, Any]], shell: Any) -> None:
    """The value (as ``Out[n]``) or the error, after what the code wrote, as a cell shows them."""
    result = ran.result
    if result.has_value:
        data, metadata = result.bundle.get("data", {}), result.bundle.get("metadata", {})
        outputs.append({"output_type": "execute_result", "execution_count": count, "data": data, "metadata": metadata})
        if shell is not None and count is not None:
            value = shell.user_ns.get("_")
            shell.user_ns.get("_oh", {})[count] = value
            shell.user_ns[f"_{count}"] = value
    if result.error is not None:
        error = result.error
        traceback = result.traceback.replace(AWAIT_HINT, CELL_AWAIT_HINT)
        outputs.append(
            {
                "output_type": "error",
                "ename": type(error).__name__,
                "evalue": str(error),
                "traceback": traceback.splitlines(),
            }
        )


class _CellRun:
    async def execute(
        self, tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: Any
    ) -> AgentToolResult:
        cell_id = cell_id_argument(args, "cell_run")
        timeout = resolve_timeout(args.get("timeout") if isinstance(args, Mapping) else None, _invalid)
        own = None
        if timeout is not None:  # from the call's start, the page's answer included
            own = Deadline(time.monotonic() + timeout, f"Cell {cell_id} timed out after {timeout:g} seconds")
        source, index = await self._begin(cell_id, signal)
        ran, count, outputs, written = await self._run(tool_call_id, cell_id, source, own, signal)
        note_ran(cell_id, count)  # the run's checkpoint: what the cell holds now
        ending = ran.ending(own)
        record(tool_call_id, "interrupted" if ending.stopped else "ran", cell_id, _ledger_reason(ending))
        await ran.let_abort_land(own, signal)
        return _result(ran, ending, cell_id, index, count, outputs, written)

    async def _begin(self, cell_id: str, signal: AbortSignal | None) -> tuple[str, int]:
        """The page shows the cell running and gives its source and index. A stop meanwhile: it never runs."""
        target = current_notebook.get()
        try:
            message = {"op": "run_begin", "cell_id": cell_id, "run": target.run if target else 0}
            begun = await ask_changing(message, signal, cell_id)
            if signal is not None and signal.aborted:
                raise CellToolError(f"Cell {cell_id} was not run: the run was stopped", "aborted")
        except CellToolError as exc:
            if exc.reason == "aborted":  # the page may have shown it running: it puts the cell back
                KERNEL.frontends.notify(target, _end(cell_id, None, [], ran=False))
            raise
        return str(begun.get("source", "")), int(begun.get("index") or 0)

    async def _run(
        self, call_id: str, cell_id: str, source: str, own: Deadline | None, signal: AbortSignal | None
    ) -> tuple[CodeRun, int | None, list[dict[str, Any]], bool]:
        """The cell's code on this thread (the kernel's main thread), its outputs sent to the page meanwhile; the
        processes it started are killed after a stop, as the python tool's are. Keys, as for the python tool: the
        variables that hold them are out of ``os.environ`` while the code runs (the agent chose what runs: it can
        edit the cell first), and every key the session knows is redacted from the outputs before the page gets
        them (so from the saved ``.ipynb``) and from the full-output log."""
        target = current_notebook.get()
        shell = current_shell()
        namespace = shell.user_ns if shell is not None else {"__name__": "__main__"}
        deadline = Deadline.first(own, signal.deadline if signal is not None else None)
        count = _take_count(shell, source)
        known = known_secrets()
        text = OutputAccumulator(RUN_OUTPUT_LINES, RUN_OUTPUT_BYTES, prefix="pi-cell", secrets=known.values)
        live = CellOutputs(call_id, cell_id, lambda message: KERNEL.frontends.notify(target, message), known.values)
        try:
            with live:
                ran = await run_stoppable(
                    call_id,
                    source,
                    shell=shell,
                    namespace=namespace,
                    output=text,
                    deadline=deadline,
                    hidden=known.variables,
                    name=f"Cell In[{count}]" if count is not None else None,
                )
        finally:
            text.close()
        outputs = live.outputs
        _final_outputs(ran, count, outputs, shell)
        outputs = live.redacted(outputs)
        written = KERNEL.frontends.notify(target, _end(cell_id, count, outputs))
        return ran, count, outputs, written


def _end(cell_id: str, count: int | None, outputs: list[dict[str, Any]], *, ran: bool = True) -> dict[str, Any]:
    message = {"type": "cells", "op": "run_end", "cell_id": cell_id, "ran": ran}
    return {**message, "execution_count": count, "outputs": outputs}


def _invalid(text: str) -> CellToolError:
    return CellToolError(text, "invalid")


def _ledger_reason(ending: CodeEnding) -> str:
    """Why, for the run's ledger (``CellChange.reason``): the stop (``"Stopped by the user"``), or ``error``."""
    if ending.stopped:
        return ending.stop_line.removeprefix("Interrupted: ")
    return "error" if ending.status == "error" else ""


def _result(
    ran: CodeRun,
    ending: CodeEnding,
    cell_id: str,
    index: int,
    count: int | None,
    outputs: list[dict[str, Any]],
    written: bool,
) -> AgentToolResult:
    text = outputs_text(outputs, RUN_OUTPUT_LINES, RUN_OUTPUT_BYTES)
    head = f"Cell {cell_id} ran as In [{count if count is not None else ' '}]."
    lines = [head, text or "(no output)"]
    if not written:
        lines.append("(The notebook's page was not connected when the cell ended: its outputs are not in the cell.)")
    if ending.stopped:
        lines.append(ending.stop_line)
    details = {"cell_id": cell_id, "index": index, "execution_count": count, "status": ending.status}
    content = "\n\n".join(lines)
    if ending.status == "ok":
        return AgentToolResult(content=content, details=details)
    if ran.kernel_interrupted:
        raise CellKernelInterrupt(content, "interrupted", details)
    raise CellToolError(content, ending.status, details)


def cell_run_tool() -> AgentTool:
    """``cell_run {cell_id, timeout?}`` (see the module docstring). Sequential: calls run in order, as cells do,
    and a stop ends the batch."""
    return AgentTool(
        name="cell_run",
        label="cell_run",
        description=(
            "Run a code cell of the notebook the user has open, by id, as the user would: its outputs and execution "
            "count appear in the cell, in the user's kernel and namespace. Returns the cell's output (text "
            "tail-truncated). The user can stop it at any time. Optionally provide a timeout in seconds."
        ),
        parameters=PARAMETERS,
        execute=_CellRun().execute,
        execution_mode="sequential",
        approval="ask",
        preview=lambda args: source_preview("run", args, "cell_run"),
        call_text=cell_call_text("run"),
        prompt=PROMPT,
        refusal=lambda args, signal: page_refusal("run", args, signal, "cell_run"),
    )
