"""The one definition of what the kernel and the browser say to each other about runs.

These share its names:

* the run widget (``_view``, drawn by ``js/run-view``): operation batches kernel -> browser, a ``hello`` browser ->
  kernel, and the widget's traits (its ``state`` is a :data:`RunStatus`);
* the JupyterLab control comm (``_control_comm``; the page's side ``labextension/src/control.ts``, its messages
  declared in ``labextension/src/protocol.ts``): :data:`ControlAction` browser -> kernel, :data:`ControlMessageType`
  kernel -> browser;
* the run's state (``Run.state()``), which both show;
* the CSS classes the kernel gives a run widget, by which the JupyterLab extension finds a view's Stop button, its
  run number and kernel process, and the approval box's buttons (:data:`STOP_CLASS`, :data:`VIEW_CLASS`,
  :func:`run_class`, :func:`process_class`, :data:`APPROVE_CLASSES`), and the class of the state the widget's script
  draws, which the extension's "kernel gone" rule rewrites (:data:`STATE_CLASS`);
* the notebook's cells (the cell tools, ``pi_notebook.kernel``): ``{"type": "cells", ...}`` requests kernel ->
  browser and ``{"action": "cells", ...}`` answers on the control comm, defined in
  ``pi_notebook/kernel/cells/_cell_protocol.py`` (the floor below, where the tools that send them live) and
  re-exported here.

The TypeScript sides declare the same unions (``RunStatus``, ``ActiveStatus``, ``OpName``, ``BatchType``,
``ControlAction``, ``ControlMessageType``), one interface per operation, and the same constants (the extension's
in ``labextension/src/protocol.ts``, the widget's in ``js/run-view/src/protocol.ts``); ``tests/test_protocol.py``
parses them and fails when a name, a field or a value is on one side only.

The retry countdown (one rule for the widget and the toolbar): the kernel sends ``retry_deadline`` (its epoch ms
of the next attempt) with ``now`` (its epoch ms when the message was made); the browser counts down to
``retry_deadline - (now - Date.now())`` read when the message arrives, so a skewed browser clock does not change
the wait. The widget's batches and snapshots carry ``now`` for this.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypeAlias, TypedDict, get_args

from ...kernel import (
    AGENT_TAG,
    CELL_MESSAGES,
    METADATA_KEY,
    PROTECTED_TAG,
    CellAction,
    CellError,
    CellOp,
    CellType,
)

STOP_CLASS = "pi-run-stop"
"""CSS class of a run widget's Stop button. The JupyterLab extension catches a click on it and forwards the stop
over the control comm, which a subshell serves while the agent's code blocks the widget's own comm."""
UNDO_CLASS = "pi-run-undo"
"""CSS class of a settled run widget's **Undo run** button."""
VIEW_CLASS = "pi-run-view"
"""CSS class of every run widget's view."""
STATE_CLASS = "pi-run-state"
"""CSS class of the run state in the widget's header (drawn by ``js/run-view``): the JupyterLab extension's "kernel
gone" rule rewrites it."""
APPROVE_CLASSES = {"run": "pi-approve-run", "skip": "pi-approve-skip", "always": "pi-approve-always"}
"""CSS class of each button of the approval box, by its answer: after a click on one the JupyterLab extension gives
the focus back to the notebook, so Accel+. still reaches Stop."""
RUN_CLASS_PREFIX = "pi-run-"
PROCESS_CLASS_PREFIX = "pi-proc-"


def run_class(number: int) -> str:
    """CSS class naming a run view's run number, which the extension's forwarded stop carries (``"run": N``)."""
    return f"{RUN_CLASS_PREFIX}{number}"


def process_class(token: str) -> str:
    """CSS class naming the kernel process that made a run view (``Kernel.token``): when that kernel dies or
    restarts, the extension marks its views "kernel gone"."""
    return f"{PROCESS_CLASS_PREFIX}{token}"


__all__ = [
    "ACTIVE_STATUSES",
    "AGENT_TAG",
    "APPROVE_CLASSES",
    "CELL_MESSAGES",
    "METADATA_KEY",
    "PROCESS_CLASS_PREFIX",
    "PROTECTED_TAG",
    "RUN_CLASS_PREFIX",
    "STATE_CLASS",
    "STOP_CLASS",
    "TOOL_TAIL_CHARS",
    "UNDO_CLASS",
    "VIEW_CLASS",
    "ActiveStatus",
    "BatchType",
    "CellAction",
    "CellError",
    "CellOp",
    "CellType",
    "ControlAction",
    "ControlMessageType",
    "EventOp",
    "MessageOp",
    "Op",
    "OpName",
    "RunStatus",
    "StatusOp",
    "TextOp",
    "ToolAppendOp",
    "ToolClearOp",
    "ToolDisplayOp",
    "ToolEndOp",
    "ToolNoteOp",
    "ToolOp",
    "ToolOutputOp",
    "TreeItem",
    "WidgetRequest",
    "process_class",
    "run_class",
]

ActiveStatus: TypeAlias = Literal[
    "starting", "streaming", "running tool", "awaiting approval", "retrying", "compacting"
]
"""A run in one of these states can be stopped (the toolbar shows its Stop button)."""
RunStatus: TypeAlias = Literal[
    "idle",
    "starting",
    "streaming",
    "running tool",
    "awaiting approval",
    "retrying",
    "compacting",
    "settled",
    "aborted",
    "error",
]
"""``idle``: no run yet (the control comm only); then the active states; then ``settled``, ``aborted`` or ``error``
(the run raised, or its last reply ended with ``stop_reason="error"`` after any retries)."""
ACTIVE_STATUSES: frozenset[str] = frozenset(get_args(ActiveStatus))

OpName: TypeAlias = Literal[
    "message",
    "append",
    "thinking",
    "status",
    "tool",
    "tool_output",
    "tool_append",
    "tool_display",
    "tool_clear",
    "tool_note",
    "tool_end",
    "event",
]
BatchType: TypeAlias = Literal["batch", "snapshot"]
"""Kernel -> widget: new operations, or every operation so far (the answer to a view's ``hello``)."""
WidgetRequest: TypeAlias = Literal["hello", "tree", "fork"]
"""Widget -> kernel: a new view asks for the snapshot (``hello``); the reader opened the session tree panel, which
asks for the tree (``tree``: it is sent to views that asked only, it can be long); a click on a prompt of the tree
asks to continue from before it (``fork``, with ``entry``: the prompt's entry id)."""

ControlAction: TypeAlias = Literal["abort", "status", "cells"]
"""``cells``: the page's answer to a cells request."""
ControlMessageType: TypeAlias = Literal["state", "error", "cells", "views", "activity"]
"""Kernel -> frontend on the control comm: a run's ``state``, an ``error``, a request about the notebook's cells
(``cells``: ``pi_notebook/kernel/cells/_cell_protocol.py``), the live widgets of active runs (``views``, once the comm
opens) and the ``activity`` signal for idle cullers (on the beacon, which no frontend opens)."""


class MessageOp(TypedDict):
    """A new message in the transcript (``role``: ``user``, ``assistant`` or ``summary``)."""

    op: Literal["message"]
    id: int
    role: str
    text: str


class TextOp(TypedDict):
    """Text (``append``) or thinking (``thinking``) streamed onto message ``id``."""

    op: Literal["append", "thinking"]
    id: int
    text: str


class StatusOp(TypedDict):
    """How message ``id`` ended."""

    op: Literal["status"]
    id: int
    stop_reason: str
    error: str | None


class ToolOp(TypedDict):
    """A tool call starts: its panel. ``args`` is the arguments as JSON; ``preview`` the call as the tool shows it
    (the code, the command line, the edit's diff; empty without one) and ``syntax`` how it reads (``python``,
    ``shell``, ``diff`` or empty: see ``AgentTool.preview_syntax``). The panel shows the preview, highlighted, and
    the arguments one click away; without a preview, the arguments."""

    op: Literal["tool"]
    call: str
    name: str
    args: str
    preview: NotRequired[str]
    syntax: NotRequired[str]


class ToolOutputOp(TypedDict):
    """The tool's output so far (its tail)."""

    op: Literal["tool_output"]
    call: str
    text: str


class ToolAppendOp(TypedDict):
    """Output written by the tool's code while it runs (the ``python`` tool's prints), appended to its panel,
    which keeps the last :data:`TOOL_TAIL_CHARS` characters; ``text`` is at most that long (the kernel drops the
    head of a longer piece) and ``total`` counts every character written so far, so the panel can say how many
    it does not show."""

    op: Literal["tool_append"]
    call: str
    text: str
    total: int


class ToolDisplayOp(TypedDict):
    """A rich output of the tool's code (``display()``, or the value of its last expression), shown in its panel:
    ``mime`` is ``text/html`` or ``image/svg+xml`` (sanitised by the browser), ``image/png``, ``image/jpeg`` or
    ``image/gif`` (``data`` in base64), or ``text/plain``."""

    op: Literal["tool_display"]
    call: str
    mime: str
    data: str


class ToolClearOp(TypedDict):
    """``clear_output()`` in the tool's code: the rich outputs its panel shows so far go (its text stays)."""

    op: Literal["tool_clear"]
    call: str


class ToolNoteOp(TypedDict):
    """A note on the running call, shown in its panel and on the widget's status line until it is replaced
    (``text`` empty: no note) or the call ends: "waiting for the code to return to Python"."""

    op: Literal["tool_note"]
    call: str
    text: str


class ToolEndOp(TypedDict):
    op: Literal["tool_end"]
    call: str
    text: str
    is_error: bool


class EventOp(TypedDict):
    """An event-log line, ``t`` ms after the run started."""

    op: Literal["event"]
    t: int
    label: str
    detail: str


Op: TypeAlias = (
    MessageOp
    | TextOp
    | StatusOp
    | ToolOp
    | ToolOutputOp
    | ToolAppendOp
    | ToolDisplayOp
    | ToolClearOp
    | ToolNoteOp
    | ToolEndOp
    | EventOp
)
OP_TYPES: tuple[type, ...] = (
    MessageOp,
    TextOp,
    StatusOp,
    ToolOp,
    ToolOutputOp,
    ToolAppendOp,
    ToolDisplayOp,
    ToolClearOp,
    ToolNoteOp,
    ToolEndOp,
    EventOp,
)


class TreeItem(TypedDict):
    """A node of the session tree the widget shows (its ``tree`` trait; parents before children): a prompt (``kind``
    ``user``: a click forks before it), a branch summary (``summary``) or a compaction (``compaction``). ``parent``:
    its parent's ``id`` (``""``: a root); ``on_branch``: on the current branch; ``number``: a prompt's number
    (``%pi fork N``; 0 for a summary); ``here``: the next prompt goes after it; ``replies``: how many replies follow
    it before the next prompt."""

    id: str
    parent: str
    kind: str
    text: str
    on_branch: bool
    number: int
    here: bool
    replies: int


TOOL_TAIL_CHARS = 50_000
"""A tool panel's live output keeps its last this many characters (the page and the kernel's operation log alike);
``protocol.ts`` declares the same number."""
