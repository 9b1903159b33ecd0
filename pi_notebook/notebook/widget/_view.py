"""The run widget: a Stop button, a tool call waiting for approval, the streaming transcript with tool panels,
the queue box, the event log.

``RunView`` (an ipywidgets ``VBox``) holds real ipywidgets buttons (``stop_button``, ``cancel_retry_button``,
``steer_button``, ``follow_up_button``) and the queue ``input`` box, around a ``TranscriptWidget``
(anywidget) that renders markdown and the event log in the browser.

Bytes over the comm grow linearly with the text: the transcript travels as *operations* (new message, append
text, tool output, event-log line), batched at most every ``FLUSH_INTERVAL`` seconds (≤ 20 updates/s); a
view that appears later (a re-render, a second output) asks for a snapshot, which is the operation log
replayed once. The log stays bounded by what a view shows: it keeps one output op per tool call (the latest tail,
or the last :data:`~._protocol.TOOL_TAIL_CHARS` characters of what its code wrote), emptied once the call ends
(its ``tool_end`` carries the result).

Button handlers may run on a comm thread (JupyterLab ≥ 4.4 sends comm messages over subshells), so they only hand
their work to the kernel's event loop with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import html
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import anywidget
import ipywidgets as widgets
import traitlets

from ...ai import AbortSignal
from ...kernel import KERNEL
from .._visible import visible_html
from ._protocol import (
    APPROVE_CLASSES,
    STOP_CLASS,
    TOOL_TAIL_CHARS,
    UNDO_CLASS,
    VIEW_CLASS,
    BatchType,
    Op,
    ToolAppendOp,
    ToolOutputOp,
    WidgetRequest,
    process_class,
    run_class,
)

__all__ = ["FLUSH_INTERVAL", "ApprovalBox", "RunView", "TranscriptWidget"]

FLUSH_INTERVAL = 0.05
_STATIC = Path(__file__).parent / "static"


class TranscriptWidget(anywidget.AnyWidget):
    """Transcript, tool panels, status line, retry countdown and event log, fed by operation batches."""

    # The bundle's text, not its path: anywidget watches a path with a signal that holds every instance made
    # from it (a lambda over ``self``), so no closed widget could ever be freed.
    _esm = (_STATIC / "run_view.js").read_text(encoding="utf-8")
    _css = (_STATIC / "run_view.css").read_text(encoding="utf-8")
    title = traitlets.Unicode("").tag(sync=True)
    state = traitlets.Unicode("starting").tag(sync=True)
    """A :data:`~._protocol.RunStatus`."""
    usage = traitlets.Unicode("").tag(sync=True)
    retry_deadline = traitlets.Float(0.0).tag(sync=True)
    """Epoch milliseconds (kernel clock) when the automatic retry fires (0: no retry pending); the browser counts
    down with the ``now`` of the batches (see ``_protocol``)."""
    retry_text = traitlets.Unicode("").tag(sync=True)
    queue = traitlets.List(traitlets.Unicode(), []).tag(sync=True)
    tree_prompts = traitlets.Int(0).tag(sync=True)
    """How many prompts the session holds: the tree panel's title, and whether there is one."""
    tree = traitlets.List(traitlets.Dict(), []).tag(sync=True)
    """The session tree (:class:`~._protocol.TreeItem` list), drawn foldable; a click on a prompt calls
    :attr:`on_fork` with its id, on the kernel's loop. Sent only once a view opened the panel (its ``tree``
    request: :attr:`tree_wanted`), from :attr:`tree_source`, and from then on whenever it changes."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ops: list[Op] = []
        self._outputs: dict[str, ToolOutputOp | ToolAppendOp] = {}
        """Per running tool call, its output op in ``ops`` (updated in place, see the module docstring)."""
        self._displays: dict[str, list[int]] = {}
        """Per tool call, where its display ops since its last ``tool_clear`` are in ``ops``."""
        self._pending: list[Op] = []
        self._flush_handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.sent_batches = 0
        self.rendered = False
        """A frontend rendered a view of this widget (its ``hello`` arrived): someone can see it."""
        self._rendered_waiters: list[asyncio.Future[None]] = []
        self.on_fork: Callable[[str], None] | None = None
        self.tree_source: Callable[[], list[dict[str, Any]]] | None = None
        self.tree_wanted = False
        self.on_msg(self._on_frontend_message)

    def bind(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self._loop = loop

    def add(self, op: Op) -> None:
        """Queue an operation for the next batch (at most every ``FLUSH_INTERVAL`` seconds)."""
        self._log(op)
        self._pending.append(op)
        if self._flush_handle is None and self._loop is not None:
            self._flush_handle = self._loop.call_later(FLUSH_INTERVAL, self.flush)

    def send_now(self, ops: list[Op]) -> None:
        """Log ``ops`` and send them, with whatever is pending, at once and without the event loop.

        For a thread that owns the widget while the loop is blocked (the ``python`` tool's live output, see
        ``_live``): the caller makes sure nothing else touches the widget meanwhile. A pending flush timer is left
        alone (it belongs to the loop); when it fires it sends what came since, if anything."""
        for op in ops:
            self._log(op)
        batch, self._pending = [*self._pending, *ops], []
        if batch:
            self.sent_batches += 1
            self._send_ops("batch", batch)

    def _log(self, op: Op) -> None:
        """Record ``op`` for snapshots; a tool call's output ops fold into one (see the module docstring)."""
        if op["op"] == "tool_output" or op["op"] == "tool_append":
            entry = self._outputs.get(op["call"])
            if entry is None or entry["op"] != op["op"]:
                entry = self._outputs[op["call"]] = cast("ToolOutputOp | ToolAppendOp", {**op, "text": ""})
                self.ops.append(entry)
            if op["op"] == "tool_append" and entry["op"] == "tool_append":
                entry["text"] = (entry["text"] + op["text"])[-TOOL_TAIL_CHARS:]
                entry["total"] = op["total"]
            else:
                entry["text"] = op["text"]
            return
        if op["op"] == "tool_end":
            entry = self._outputs.pop(op["call"], None)
            if entry is not None:
                entry["text"] = ""  # the result below replaces it
        elif op["op"] == "tool_display":
            self._displays.setdefault(op["call"], []).append(len(self.ops))
        elif op["op"] == "tool_clear":
            # The cleared displays stay in the log as empty ones (the clear after them removes them in a snapshot):
            # their data is freed without an O(log) removal per clear_output() of an animation loop.
            for index in self._displays.pop(op["call"], ()):
                self.ops[index] = {"op": "tool_display", "call": op["call"], "mime": "text/plain", "data": ""}
        self.ops.append(op)

    def flush(self) -> None:
        batch = self._take_pending()
        if batch:
            self.sent_batches += 1
            self._send_ops("batch", batch)

    def compact(self) -> None:
        """Merge the operation log's text appends (a settled run's log holds one op per message and tool
        update, not one per delta); a later snapshot is the same, since snapshots are sent merged anyway."""
        self.flush()
        self.ops = cast("list[Op]", _merged(self.ops))
        self._outputs, self._displays = {}, {}

    def discard(self) -> None:
        """Forget the operation log and any pending batch (the widget is being closed)."""
        self._take_pending()
        self.ops = []
        self._outputs, self._displays = {}, {}

    def _send_ops(self, kind: BatchType, ops: list[Op]) -> None:
        """A batch or snapshot, with the kernel's clock for the retry countdown (see ``_protocol``)."""
        self.send({"type": kind, "ops": _merged(ops), "now": time.time() * 1000})

    def _take_pending(self) -> list[Op]:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        batch, self._pending = self._pending, []
        return batch

    def _on_frontend_message(self, _: Any, content: Any, buffers: Any) -> None:
        hello: WidgetRequest = "hello"
        fork: WidgetRequest = "fork"
        tree: WidgetRequest = "tree"
        if not isinstance(content, dict):
            return
        if content.get("type") == hello:
            self._call_in_loop(self._send_snapshot)
            self._call_in_loop(self._mark_rendered)
        elif content.get("type") == tree:
            self._call_in_loop(self._load_tree)
        elif content.get("type") == fork and isinstance(content.get("entry"), str) and self.on_fork is not None:
            on_fork, entry = self.on_fork, content["entry"]
            self._call_in_loop(lambda: on_fork(entry))

    def _load_tree(self) -> None:
        """A view opened the tree panel: send the tree now, and whenever it changes from now on."""
        self.tree_wanted = True
        if self.tree_source is not None:
            self.tree = self.tree_source()

    def _mark_rendered(self) -> None:
        self.rendered = True
        waiters, self._rendered_waiters = self._rendered_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait_rendered(self, seconds: float, signal: AbortSignal) -> bool:
        """True once a frontend has rendered a view (at once if one did); False after ``seconds`` without
        one, or when ``signal`` aborts first."""
        if self.rendered:
            return True
        if seconds <= 0 or signal.aborted:
            return False
        waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._rendered_waiters.append(waiter)
        aborted: asyncio.Future[Any] = asyncio.ensure_future(signal.wait())
        try:
            await asyncio.wait([waiter, aborted], timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()
        return self.rendered and not signal.aborted

    def _send_snapshot(self) -> None:
        self._take_pending()  # every view resets on a snapshot, which holds these ops too
        self._send_ops("snapshot", self.ops)

    def _call_in_loop(self, callback: Callable[[], None]) -> None:
        if self._loop is None:
            callback()
        else:
            self._loop.call_soon_threadsafe(callback)


class ApprovalBox(widgets.VBox):  # type: ignore[misc]
    """A tool call waiting for approval: what it will do, and **Run**, **Skip**, **Always for this session**.
    Hidden while nothing waits. The buttons carry the classes ``pi-approve-run``, ``pi-approve-skip`` and
    ``pi-approve-always``; the box ``pi-approval``."""

    def __init__(self) -> None:
        self.title = widgets.HTML("")
        self.preview = widgets.HTML("")
        self.run_button = widgets.Button(description="Run", icon="play", button_style="success")
        self.skip_button = widgets.Button(
            description="Skip", icon="forward", tooltip="Do not run it; the agent is told"
        )
        self.always_button = widgets.Button(
            description="Always for this session", tooltip="Run it, and run this tool without asking from now on"
        )
        self.always_button.layout.width = "auto"
        self._on_answer: Callable[[str], None] | None = None
        for button, answer in ((self.run_button, "run"), (self.skip_button, "skip"), (self.always_button, "always")):
            button.add_class(APPROVE_CLASSES[answer])
            button.on_click(lambda _, answer=answer: self._answer(answer))
        buttons = widgets.HBox([self.run_button, self.skip_button, self.always_button])
        super().__init__([self.title, self.preview, buttons], layout=widgets.Layout(display="none", width="100%"))
        self.add_class("pi-approval")

    def show(
        self,
        title: str,
        preview: str,
        on_answer: Callable[[str], None],
        *,
        always: bool = True,
        group: str | None = None,
    ) -> None:
        """Ask about a call: ``preview`` is what it will run, drawn so that nothing in it hides (``_visible``:
        invisible and bidi characters marked, long blank runs collapsed, long text cut in the middle), with a line
        saying what was marked or cut. ``group``: what **Always** allows when it is more than this tool (an MCP
        server: the button reads **Always for MCP server NAME**)."""
        self._on_answer = on_answer
        self.always_button.layout.display = None if always else "none"
        self.always_button.description = f"Always for {group}" if group else "Always for this session"
        self.always_button.tooltip = (
            f"Run it, and run every tool of {group} without asking from now on (this session)"
            if group
            else "Run it, and run this tool without asking from now on"
        )
        shown = visible_html(preview)
        notes = f'<div class="pi-approval-notes">⚠ {html.escape("; ".join(shown.notes))}</div>' if shown.notes else ""
        self.title.value = f"<b>{html.escape(title)}</b>{notes}"
        self.preview.value = (
            '<pre class="pi-approval-preview" style="max-height: 24em; overflow: auto; white-space: pre-wrap; '
            f'margin: 0">{shown.html}</pre>'
        )
        self.layout.display = None

    def hide(self) -> None:
        self._on_answer = None
        self.layout.display = "none"

    @property
    def waiting(self) -> bool:
        return self._on_answer is not None

    def _answer(self, answer: str) -> None:
        on_answer = self._on_answer
        if on_answer is not None:
            on_answer(answer)


def _merged(ops: list[Op]) -> list[dict[str, Any]]:
    """``ops`` with each run of consecutive text appends to one message (or one tool call's live output) joined
    into one op (linear: the pieces are joined once, not concatenated one by one); a tool call's joined output
    keeps its last :data:`TOOL_TAIL_CHARS` characters and the last ``total``."""
    out: list[dict[str, Any]] = []
    pieces: list[str] = []
    for item in ops:
        op: dict[str, Any] = dict(item)
        last = out[-1] if out else None
        if last is not None and _text_key(op) is not None and _text_key(op) == _text_key(last):
            pieces.append(op["text"])
            if "total" in op:
                last["total"] = op["total"]
            continue
        if pieces:
            out[-1]["text"] = _joined(out[-1], pieces)
        out.append(op)
        pieces = [op["text"]] if _text_key(op) is not None else []
    if pieces:
        out[-1]["text"] = _joined(out[-1], pieces)
    return out


def _text_key(op: dict[str, Any]) -> tuple[str, object] | None:
    """What consecutive text ops must share to be joined; ``None`` for other ops."""
    kind = op["op"]
    if kind == "append" or kind == "thinking":
        return kind, op["id"]
    if kind == "tool_append":
        return kind, op["call"]
    return None


def _joined(op: dict[str, Any], pieces: list[str]) -> str:
    text = "".join(pieces)
    return text[-TOOL_TAIL_CHARS:] if op["op"] == "tool_append" else text


def _widget_tree(root: widgets.Widget) -> list[widgets.Widget]:
    """``root`` and every widget its synced traits reach (children, layout, style), each once (by model id)."""
    found: dict[str, widgets.Widget] = {}
    pending = [root]
    while pending:
        widget = pending.pop()
        if widget.comm is None or widget.model_id in found:
            continue
        found[widget.model_id] = widget
        for name in widget.keys:
            value = getattr(widget, name, None)
            items = value if isinstance(value, list | tuple) else (value,)
            pending.extend(item for item in items if isinstance(item, widgets.Widget))
    return list(found.values())


class RunView(widgets.VBox):  # type: ignore[misc]
    """One run's widget. Actions are callbacks given by the run; see the module docstring for threading."""

    def __init__(
        self,
        *,
        title: str,
        on_stop: Callable[[], None],
        on_cancel_retry: Callable[[], None],
        on_steer: Callable[[str], None],
        on_follow_up: Callable[[str], None],
        loop: asyncio.AbstractEventLoop | None,
        number: int | None = None,
        on_send: Callable[[str, RunView], None] | None = None,
        on_undo: Callable[[], None] | None = None,
    ) -> None:
        """``on_send(text, view)``: what the box does with a text once the run has settled (start a new run, drawn
        below with :meth:`add_follow_on`); without it the text is queued as a follow-up for the next prompt and
        the box says so. ``on_undo``: the **Undo run** button's action, shown once the run has settled (no button
        without it)."""
        self.transcript = TranscriptWidget(title=title)
        self.transcript.bind(loop)
        self.stop_button = widgets.Button(
            description="Stop",
            icon="stop",
            button_style="danger",
            tooltip="Stop this run (queued messages come back to the box below)",
        )
        # The JupyterLab extension forwards clicks on this button over the control comm (served on a subshell
        # thread), because the agent's python code can block the main thread, where this button's comm waits.
        self.stop_button.add_class(STOP_CLASS)
        self.cancel_retry_button = widgets.Button(
            description="Cancel retry", icon="times", layout=widgets.Layout(display="none")
        )
        self.input = widgets.Textarea(  # it takes what the buttons leave: 100% beside them overflowed (a scrollbar)
            placeholder="Steer the running agent, or queue a follow-up…",
            rows=2,
            layout=widgets.Layout(flex="1 1 auto", width="auto", min_width="0"),
        )
        self.steer_button = widgets.Button(description="Steer", tooltip="Deliver after the current turn")
        self.follow_up_button = widgets.Button(description="Follow up", tooltip="Deliver when the agent would stop")
        self.undo_button = widgets.Button(
            description="Undo run",
            icon="undo",
            tooltip="Take this run back (and any run after it): its files, cells, variables and the conversation",
            layout=widgets.Layout(display="none"),
        )
        self.undo_button.add_class(UNDO_CLASS)
        self._on_undo = on_undo
        self.undo_button.on_click(lambda _: self._marshal(on_undo) if on_undo is not None else None)
        self.stop_button.on_click(lambda _: self._marshal(on_stop))
        self.cancel_retry_button.on_click(lambda _: self._marshal(on_cancel_retry))
        self._on_follow_up, self._on_send = on_follow_up, on_send
        self._settled = False
        self.steer_button.on_click(lambda _: self._send_input(on_steer))
        self.follow_up_button.on_click(lambda _: self._send_input(self._follow_up))
        self.approval = ApprovalBox()
        self.notice = widgets.Label("", layout=widgets.Layout(display="none"))
        """A line under the box: what became of a text sent after the run settled (plain text, never markup)."""
        self.notice.add_class("pi-run-notice")
        self.follow_ons = widgets.VBox([], layout=widgets.Layout(width="100%"))
        """The runs started from this view's box after it settled, each drawn here, below the box."""
        controls = widgets.HBox([self.stop_button, self.undo_button, self.cancel_retry_button])
        queue_box = widgets.HBox(
            [self.input, widgets.VBox([self.steer_button, self.follow_up_button])],
            layout=widgets.Layout(width="100%"),
        )
        queue_box.add_class("pi-run-queue-box")
        children = [controls, self.approval, self.transcript, queue_box, self.notice, self.follow_ons]
        super().__init__(children, layout=widgets.Layout(width="100%"))
        self.add_class(VIEW_CLASS)
        self.add_class(process_class(KERNEL.token))
        if number is not None:
            self.add_class(run_class(number))

    def on_fork(self, callback: Callable[[str, RunView], None]) -> None:
        """Call ``callback(entry_id, view)``, on the kernel's loop, for a click on a prompt of the session tree."""
        self.transcript.on_fork = lambda entry: callback(entry, self)

    def _marshal(self, action: Callable[[], None]) -> None:
        self.transcript._call_in_loop(action)

    def _send_input(self, action: Callable[[str], None]) -> None:
        text = self.input.value.strip()
        if not text:
            return
        self.input.value = ""
        self._marshal(lambda: action(text))

    def ask(
        self,
        title: str,
        preview: str,
        on_answer: Callable[[str], None],
        *,
        always: bool = True,
        group: str | None = None,
    ) -> None:
        """Show a tool call waiting for approval; a click calls ``on_answer("run" | "skip" | "always")`` on the
        kernel's loop (``always=False``: without the Always button; ``group``: what Always allows, see
        :meth:`ApprovalBox.show`)."""

        def answer(choice: str) -> None:
            self._marshal(lambda: on_answer(choice))

        self.approval.show(title, preview, answer, always=always, group=group)

    def settle(self, aborted: bool) -> None:
        """The run settled: Stop reads ``Stopped`` (red) or ``Done`` (plain); the box starts a new run from now on
        (nothing is running to steer or to follow up)."""
        self.approval.hide()
        self.stop_button.disabled = True
        self.stop_button.description = "Stopped" if aborted else "Done"
        self.stop_button.button_style = "danger" if aborted else ""
        self.stop_button.icon = "stop" if aborted else "check"
        self._settled = True
        if self._on_undo is not None and not self.undo_button.disabled:
            self.undo_button.layout.display = None
        self.steer_button.layout.display = "none"
        if self._on_send is not None:
            self.follow_up_button.description = "Send"
            self.follow_up_button.tooltip = "Start a new run with this text, shown below"
            self.input.placeholder = "Ask a follow-up: a new run, shown below…"
        else:
            self.follow_up_button.tooltip = "Queue it for the next prompt"
            self.input.placeholder = "Queue a follow-up for the next prompt…"
        self.transcript.compact()

    def undone(self, text: str) -> None:
        """The run was taken back: **Undo run** reads **Undone** and stays disabled; ``text`` goes under the box."""
        self.undo_button.disabled = True
        self.undo_button.description = "Undone"
        self.undo_button.layout.display = None
        self.say(text)

    def _follow_up(self, text: str) -> None:
        """The Follow up / Send button, on the kernel's loop: a follow-up while the run is active; after it settled,
        a new run (``on_send``), or a follow-up queued for the next prompt, said under the box."""
        if not self._settled:
            self._on_follow_up(text)
        elif self._on_send is not None:
            self._on_send(text, self)
        else:
            self._on_follow_up(text)
            self.say(f"Queued for the next prompt: {text}")

    def say(self, text: str) -> None:
        """Show ``text`` under the box (plain text)."""
        self.notice.value = text
        self.notice.layout.display = None if text else "none"

    def add_follow_on(self, view: RunView) -> None:
        """Draw a run started from this view's box below it."""
        self.say("")
        self.follow_ons.children = (*self.follow_ons.children, view)

    def widget_bundle(self) -> dict[str, Any] | None:
        """Its widget view bundle (``application/vnd.jupyter.widget-view+json``), ``None`` once it was closed."""
        if getattr(self, "comm", None) is None:
            return None
        bundle = self._repr_mimebundle_()
        data = bundle if isinstance(bundle, dict) else bundle[0]
        widget: dict[str, Any] | None = data.get("application/vnd.jupyter.widget-view+json")
        return widget

    def close_all(self) -> None:
        """Close this view and every widget in it (boxes, buttons, their layouts and styles): each leaves
        ipywidgets' registry and its comm closes, so the frontend drops its views of them. The runs started from
        its box are not closed with it (each is its own run, closed when the registry closes it)."""
        self.transcript.discard()
        self.follow_ons.children = ()
        for widget in _widget_tree(self):
            widget.close()

    def show_retry(self, visible: bool) -> None:
        self.cancel_retry_button.layout.display = None if visible else "none"
