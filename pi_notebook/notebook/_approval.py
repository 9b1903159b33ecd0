"""The notebook's approver: a tool call that asks (setting ``tools.approval``) is shown in the run's widget
with **Run**, **Skip** and **Always for this session**; the session does the rest (``session._approval_gate``).

Who can answer. A question nobody can see must not hang the run, and a kernel cannot ask its clients whether
a person is watching. What it can know is whether a frontend *rendered* the run's widget: the widget's
browser code says ``hello`` when a view of it appears (JupyterLab, Notebook 7, VS Code with ipywidgets).
nbclient, nbval, nbconvert and plain IPython render nothing, and neither does a frontend when the run is not
displayed (``run = %pi ...`` without showing ``run``). So:

- no kernel, or a run without a widget (plain IPython): the call ends at once with an error result;
- the widget was rendered: the question is shown and waits for a click, or for any stop path (the wait is
  the run's abort signal's, so Stop, the toolbar Stop, the kernel's interrupt on an awaiting cell, the
  turn timeout and the wall-time budget all end it);
- not rendered yet: wait for a view until :data:`FRONTEND_WAIT_S` after the run started (a frontend renders
  within a fraction of that), then end the call with an error result that says how to allow it
  (:data:`NO_FRONTEND`). Later calls of the same run end at once.

While the question waits the run's state is ``awaiting approval`` (the status bar shows ``pi: awaiting
approval``) and the event log records the question and the answer.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from typing import Any, Protocol

from ..ai import AbortSignal
from ..session import AgentSession, Approval, ApprovalRequest
from ._run import Run
from .widget import RunPresenter

__all__ = ["FRONTEND_WAIT_S", "MAX_PREVIEW", "NO_FRONTEND", "NotebookApprover", "describe_tools", "preview_call"]

FRONTEND_WAIT_S = 2.0
"""How long after a run starts a frontend has to render its widget before asking tools are refused."""
MAX_PREVIEW = 20_000
"""The call shown in the question is cut to this many characters."""
NO_FRONTEND = (
    "{name} was not run: it needs the user's approval (setting tools.approval), and no notebook frontend is "
    "showing this run's widget to ask (nbclient, nbval, nbconvert and plain IPython cannot answer; nor can a run "
    "that is not displayed). To let it run without asking: %pi settings tools.approval=auto (or "
    "tools.approval.{name}=auto), or configure(settings={{'tools': {{'approval': 'auto'}}}})."
)


class _Entry(Protocol):
    """What the approver needs of its notebook session (``NotebookSession``)."""

    @property
    def active_run(self) -> Run | None: ...


class NotebookApprover:
    """The :data:`~pi_notebook.session.Approver` of one notebook session (see the module docstring)."""

    def __init__(self, entry: _Entry) -> None:
        self._entry = entry

    async def __call__(self, request: ApprovalRequest, signal: AbortSignal) -> Approval:
        run = self._entry.active_run
        presenter = run.presenter if run is not None else None
        refused = Approval("unavailable", NO_FRONTEND.format(name=request.tool_name))
        if run is None or presenter is None:
            return refused
        wait = run.started_at + FRONTEND_WAIT_S - time.monotonic()
        if not await presenter.wait_rendered(wait, signal):
            return refused
        return await ask_in_widget(run, presenter, request, signal)


async def ask_in_widget(run: Run, presenter: RunPresenter, request: ApprovalRequest, signal: AbortSignal) -> Approval:
    """Show ``request`` in the run's widget and wait for Run / Skip / Always, or for ``signal`` to abort (then
    ``skip``; the loop ends the call as aborted). The run's state is ``awaiting approval`` meanwhile; its event
    log records the question and the answer."""
    name = request.tool_name
    answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def on_answer(choice: str) -> None:
        if not answer.done():
            answer.set_result(choice)

    status = run.status
    previous = status.status
    run.note("approval", f"{name}: waiting for Run / Skip / Always")
    presenter.ask(name, preview_call(request), on_answer, always=not run.session.policy.must_ask(name))
    status.set("awaiting approval")
    aborted: asyncio.Future[Any] = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait([answer, aborted], return_when=asyncio.FIRST_COMPLETED)
    finally:
        aborted.cancel()
        presenter.close_ask()
        if status.status == "awaiting approval":
            status.set(previous)
    choice = answer.result() if answer.done() else "skip"
    run.note("approval", f"{name}: " + (choice if answer.done() else "stopped while waiting"))
    return Approval("always" if choice == "always" else "run" if choice == "run" else "skip")


def preview_call(request: ApprovalRequest) -> str:
    """What the question shows: the tool's preview of the call (the code, the command, the edit's diff, the file
    to write), else the arguments as JSON."""
    preview = request.tool.preview if request.tool is not None else None
    text: str | None = None
    if preview is not None and isinstance(request.args, Mapping):
        try:
            text = preview(request.args)
        except Exception:  # a preview of arguments it did not expect: show them as they are
            text = None
    if text is None:
        text = json.dumps(_plain(request.args), ensure_ascii=False, indent=1, default=str)
    return text if len(text) <= MAX_PREVIEW else text[:MAX_PREVIEW] + f"\n… ({len(text) - MAX_PREVIEW} more characters)"


def describe_tools(session: AgentSession) -> str:
    """``%pi tools``: each tool, whether it asks before it runs (and why not), and its description's first
    sentence; then how to change it."""
    tools = session.tools
    if not tools:
        return "pi: no tools (configure(tools=default_tools()) gives the notebook's set back)"
    width = max(len(tool.name) for tool in tools)
    lines = []
    for tool in tools:
        mode: str = session.approval_mode(tool.name)
        if tool.approval == "never":
            mode = "auto (only looks)"
        elif session.policy.must_ask(tool.name):
            mode = "ask (locked by policy)"
        elif tool.name in session.approved_always:
            mode = "auto (always, this session)"
        summary = tool.description.split(". ")[0].strip().rstrip(".")
        lines.append(f"{tool.name.ljust(width)}  {mode.ljust(27)}  {_cut(summary, 70)}")
    if session.policy.disabled:
        lines.append(f"{', '.join(sorted(session.policy.disabled))}: off by policy ({session.policy.where})")
    lines.append("")
    lines.append("approval: %pi settings tools.approval=auto | ask | tools.approval.<tool>=auto")
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _plain(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else value
