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
  within a fraction of that), or :data:`PAGE_WAIT_S` while a JupyterLab page with the pi-notebook extension is
  connected to the kernel (a page loading the widget's code for the first time on a busy machine can take
  seconds), then end the call with an error result that says how to allow it (:data:`NO_FRONTEND`). Later calls
  of the same run end at once.

While the question waits the run's state is ``awaiting approval`` (the status bar shows ``pi: awaiting
approval``) and the event log records the question and the answer.

Under a cassette (``%pi cassette``) the answers are part of the recording: while it records, each answer (Run,
Skip, Always, or "nobody could answer") is written to it as a note keyed by the tool and the call's id; while it
replays, the recorded answer is given at once (the event log records the question and the answer as it did), so
a notebook whose tools ask replays headless (nbval, CI) exactly as it ran when it was recorded, never waiting. A
call the recording has no answer for is asked as above.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..ai import AbortSignal, Cassette, abort_scope, maybe_await
from ..kernel import CELL_TOOL_NAMES
from ..session import AgentSession, Approval, ApprovalRequest
from ._run import Run
from ._run_state import StatusMachine
from ._visible import MAX_CHARS
from .widget import RunPresenter

__all__ = [
    "APPROVAL_NOTE",
    "CELLS_NOT_HERE",
    "FRONTEND_WAIT_S",
    "MAX_PREVIEW",
    "NO_FRONTEND",
    "PAGE_WAIT_S",
    "Asking",
    "NotebookApprover",
    "describe_tools",
    "preview_call",
]

FRONTEND_WAIT_S = 2.0
"""How long after a run starts a frontend has to render its widget before asking tools are refused."""
PAGE_WAIT_S = 20.0
"""The same, while a JupyterLab page with the pi-notebook extension is connected to the kernel (the control comm)."""
MAX_PREVIEW = MAX_CHARS
"""The call shown in the question is cut to this many characters: its head and its tail (``_visible``)."""
NO_FRONTEND = (
    "{name} was not run: it needs the user's approval (setting tools.approval), and no notebook frontend is "
    "showing this run's widget to ask (nbclient, nbval, nbconvert and plain IPython cannot answer; nor can a run "
    "that is not displayed). To let it run without asking: %pi settings tools.approval=auto (or "
    "tools.approval.{name}=auto), or configure(settings={{'tools': {{'approval': 'auto'}}}})."
)
APPROVAL_NOTE = "approval"
"""The kind of the cassette notes that hold the answers (``{"action", "asked", "reason"?}``)."""
_ACTIONS = ("run", "skip", "always", "unavailable")

CELLS_NOT_HERE = (
    "cell tools: not available here (the notebook is not open in JupyterLab with the pi-notebook extension); "
    "the model is not offered them"
)


class _Entry(Protocol):
    """What the approver needs of its notebook session (``NotebookSession``)."""

    @property
    def active_run(self) -> Run | None: ...

    @property
    def cassette(self) -> Cassette | None: ...


class NotebookApprover:
    """The :data:`~pi_notebook.session.Approver` of one notebook session (see the module docstring)."""

    def __init__(self, entry: _Entry, page_connected: Callable[[], bool] = lambda: False) -> None:
        self._entry = entry
        self._page_connected = page_connected

    async def __call__(self, request: ApprovalRequest, signal: AbortSignal) -> Approval:
        cassette = self._entry.cassette
        key = {"tool": request.tool_name, "call": request.tool_call.id}
        recorded = cassette.recall(APPROVAL_NOTE, key) if cassette is not None else None
        if recorded is not None and recorded.get("action") in _ACTIONS:
            return self._replayed(request, recorded)
        answer, asked = await self._ask(request, signal)
        if cassette is not None and not signal.aborted:  # a Stop is no answer: nothing to replay
            value = {"action": answer.action, "asked": asked}
            cassette.remember(APPROVAL_NOTE, key, value | ({"reason": answer.reason} if answer.reason else {}))
        return answer

    async def _ask(self, request: ApprovalRequest, signal: AbortSignal) -> tuple[Approval, bool]:
        """The answer, and whether the question was shown in the widget."""
        run = self._entry.active_run
        presenter = run.presenter if run is not None else None
        refused = Approval("unavailable", NO_FRONTEND.format(name=request.tool_name))
        if run is None or presenter is None:
            return refused, False
        wait = run.started_at + (PAGE_WAIT_S if self._page_connected() else FRONTEND_WAIT_S) - time.monotonic()
        if not await presenter.wait_rendered(wait, signal):
            return refused, False
        return await ask_in_widget(Asking.of(run, presenter, request.tool_name), request, signal), True

    def _replayed(self, request: ApprovalRequest, recorded: dict[str, Any]) -> Approval:
        """The recorded answer, with the event log's lines as when it was given."""
        action = recorded["action"]
        run = self._entry.active_run
        if recorded.get("asked") and run is not None:
            run.note("approval", _asking(request.tool_name))
            run.note("approval", _answered(request.tool_name, action))
        reason = recorded.get("reason")
        return Approval(action, reason if isinstance(reason, str) else None)


def _asking(name: str) -> str:
    return f"{name}: waiting for Run / Skip / Always"


def _answered(name: str, choice: str | None) -> str:
    """The log line of the answer (``None``: the run was stopped while the question waited)."""
    return f"{name}: " + (choice if choice is not None else "stopped while waiting")


@dataclass(frozen=True)
class Asking:
    """What a question in a run's widget needs, gathered once from the run (:meth:`of`): the presenter that shows
    it, the event log that records the question and the answer, the run's state machine (``awaiting approval``
    meanwhile), and whether **Always** is offered (not for a tool the site policy says must ask each time)."""

    presenter: RunPresenter
    note: Callable[[str, str], None]
    status: StatusMachine
    always: bool

    @classmethod
    def of(cls, run: Run, presenter: RunPresenter, tool_name: str) -> Asking:
        return cls(presenter, run.note, run.status, not run.session.policy.must_ask(tool_name))


async def ask_in_widget(asking: Asking, request: ApprovalRequest, signal: AbortSignal) -> Approval:
    """Show ``request`` in the run's widget and wait for Run / Skip / Always, or for ``signal`` to abort (then
    ``skip``; the loop ends the call as aborted). The run's state is ``awaiting approval`` meanwhile; its event
    log records the question and the answer."""
    name = request.tool_name
    answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def on_answer(choice: str) -> None:
        if not answer.done():
            answer.set_result(choice)

    status, presenter = asking.status, asking.presenter
    previous = status.status
    asking.note("approval", _asking(name))
    group = request.tool.approval_group if request.tool else None
    presenter.ask(name, await preview_call(request, signal), on_answer, always=asking.always, group=group)
    status.set("awaiting approval")
    aborted: asyncio.Future[Any] = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait([answer, aborted], return_when=asyncio.FIRST_COMPLETED)
    finally:
        aborted.cancel()
        presenter.close_ask()
        if status.status == "awaiting approval":
            status.set(previous)
    choice = answer.result() if answer.done() else None
    asking.note("approval", _answered(name, choice))
    return Approval("always" if choice == "always" else "run" if choice == "run" else "skip")


async def preview_call(request: ApprovalRequest, signal: AbortSignal | None = None) -> str:
    """What the question shows: the tool's preview of the call (the code, the command, the edit's diff, the file
    to write, a cell read from the live notebook), else the arguments as JSON. A preview that awaits ends when
    ``signal`` aborts (then the arguments are shown; the question ends with the run anyway)."""
    preview = request.tool.preview if request.tool is not None else None
    text: str | None = None
    if preview is not None and isinstance(request.args, Mapping):
        try:
            with abort_scope(signal):
                text = await maybe_await(preview(request.args))
        except Exception:  # a preview of arguments it did not expect: show them as they are
            text = None
    if text is None:
        text = json.dumps(_plain(request.args), ensure_ascii=False, indent=1, default=str)
    if request.reason:
        text = f"Asks because {request.reason}\n\n{text}"
    return text  # the box shows it with what would hide marked, and cut in the middle if long (``_visible``)


def describe_tools(session: AgentSession, left_out: Collection[str] = ()) -> str:
    """``%pi tools``: each tool, whether it asks before it runs (and why not), and its description's first
    sentence; then how to change it. ``left_out``: tools a run started here would not be offered (the cell tools
    where no JupyterLab page can act on the notebook), marked as such."""
    tools = session.tools
    if not tools:
        return "pi: no tools (configure(tools=default_tools()) gives the notebook's set back)"
    width = max(len(tool.name) for tool in tools)
    lines = []
    for tool in tools:
        mode: str = session.approval_mode(tool.name)
        if tool.name in left_out:
            mode = "not available here"
        elif tool.approval == "never":
            mode = "auto (only looks)"
        elif session.policy.must_ask(tool.name):
            mode = "ask (locked by policy)"
        elif tool.needs_approval is not None and mode == "ask":
            mode = "ask (outside cwd, secrets)"
        elif tool.name in session.approved_always or tool.approval_group in session.approved_always:
            mode = "auto (always, this session)"
        summary = tool.description.split(". ")[0].strip().rstrip(".")
        lines.append(f"{tool.name.ljust(width)}  {mode.ljust(27)}  {_cut(summary, 70)}")
    if session.policy.disabled:
        lines.append(f"{', '.join(sorted(session.policy.disabled))}: off by policy ({session.policy.where})")
    lines.append("")
    if any(name in CELL_TOOL_NAMES for name in left_out):
        lines.append(CELLS_NOT_HERE)
    lines.append("approval: %pi settings tools.approval=auto | ask | tools.approval.<tool>=auto")
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _plain(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else value
