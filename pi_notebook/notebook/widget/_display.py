"""How a run shows in a notebook: its live widget, with a static copy beside it for readers without widgets.

Every display of a run is one bundle: the widget view (``application/vnd.jupyter.widget-view+json``), the run's
transcript and event log as ``text/html`` and ``text/markdown`` (what GitHub, nbviewer and ``nbconvert --to html``
show: they cannot run the widget, and a notebook saved without widget state has none to draw; built through the gate
of ``_inert``) and a one-line ``text/plain`` that does not change while the run goes on. Every display of a run
carries the run's display id, so when the run settles ``update_display`` gives each of them the final transcript.

The ``%pi`` magics call :meth:`RunDisplay.show` once per run. A run shows at most once per cell: a further
display of it in the cell that last showed it shows nothing (``run = %pi ...`` then ``run``, or a bare
``%pi ...`` whose value the cell would display), so the widget appears exactly once however the cell is written;
``display(run)`` or ``run`` in a later cell shows another live view of the same run.

Where an update goes: ``await run`` sends it from the awaiting cell, which is the cell an executing client
(nbclient, nbconvert) is listening to, so an executed notebook saves each run's final transcript; a run whose view
closes (``Run.close_view``) sends its static copy alone. When the cell that shows the run also awaits it and shows
the report (``run = %pi ...`` then ``await run`` as its last line), the update waits for the cell's end and the
static copy becomes a line pointing to the report below it, so a saved notebook does not hold the transcript
twice. A run does not update its displays when it settles: an updated output is rendered again, and a live view
would redraw the whole reply (measured with ``bench/bench_widget_browser.py``: a 2.1 s main-thread task at 600k
characters). A run never awaited is saved with the static copy as of its display.

Every display and update carries ``_volatile.RUN_DISPLAY`` as its metadata: a check of the saved notebook (``pytest
--nbval`` with the package's plugin) compares the ``text/plain`` line and not the static copy, which nbval, applying
no updates, would see as it was first shown.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.getipython import get_ipython
from IPython.display import display, update_display

from .._volatile import RUN_DISPLAY

if TYPE_CHECKING:
    from ._view import RunView

__all__ = ["STATIC_MARKER", "WIDGET_MIMETYPE", "RunDisplay", "Static"]

_log = logging.getLogger(__name__)

WIDGET_MIMETYPE = "application/vnd.jupyter.widget-view+json"
STATIC_MARKER = "<!-- pi_notebook run view: the live widget's static copy -->"
"""First line of a run display's ``text/markdown`` and ``text/html`` (an HTML comment: readers show nothing of
it): says what the rest is to whoever reads the saved notebook's source."""

Static = tuple[str, str]
"""A static copy: its markdown and its HTML (built through the gate, ``_inert``)."""


def _current_cell() -> Callable[[], object] | int | None:
    """The cell running now: a weak reference to IPython's result object for it (one per cell run; weak, as it holds
    the cell's value once the cell ends), else the shell's execution count. Not the count alone: a cell the agent
    runs with ``cell_run`` takes a count while this cell runs."""
    shell = get_ipython()  # type: ignore[no-untyped-call, unused-ignore]
    if shell is None:
        return None
    running = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    try:
        return weakref.ref(running) if running is not None else int(shell.execution_count)
    except TypeError:  # an object that takes no weak reference
        return int(shell.execution_count)


def _same_cell(shown_in: Callable[[], object] | int | None) -> bool:
    now = _current_cell()
    if isinstance(shown_in, weakref.ref) and isinstance(now, weakref.ref):
        return shown_in() is not None and shown_in() is now()
    return shown_in is not None and shown_in == now


class RunDisplay:
    """The displays of one run. ``widget()`` gives its widget view bundle (``None`` without a live widget),
    ``static()`` its transcript and event log (markdown and HTML), ``plain`` its one-line text."""

    def __init__(
        self,
        display_id: str,
        *,
        plain: str,
        widget: Callable[[], dict[str, Any] | None],
        static: Callable[[], Static],
        cell_id: str | None = None,
    ) -> None:
        self.display_id = display_id
        self._plain = plain
        self._widget = widget
        self._static = static
        self._shown_in: Callable[[], object] | int | None = None
        self.shown = False
        self.cell_id = cell_id
        """The notebook cell that started the run (its ``execute_request``'s ``cellId``, as JupyterLab sends it;
        ``None`` when the frontend did not say): a page opened later shows the live widget there again if its copy
        of the notebook lacks it (``_control_comm``'s ``views``)."""

    def bundle(self, static: Static | None = None) -> dict[str, Any]:
        """The display's bundle; ``static`` replaces the transcript as its static copy."""
        bundle: dict[str, Any] = {}
        widget = self._widget()
        if widget is not None:
            bundle[WIDGET_MIMETYPE] = widget
        markdown, html = self._static() if static is None else static
        bundle["text/html"] = f"{STATIC_MARKER}\n{html}"
        bundle["text/markdown"] = f"{STATIC_MARKER}\n{markdown}"
        bundle["text/plain"] = self._plain
        return bundle

    def show(self) -> None:
        """Display the run in the cell running now (the magics do, once per run). ``shown`` is set once the display is
        sent: a page opening meanwhile (its ``views`` are made on a subshell's thread) would otherwise be told to add
        the widget to the cell and then get the display too, two live views in one cell."""
        self._shown_in = _current_cell()
        display(self.bundle(), raw=True, display_id=self.display_id, metadata=RUN_DISPLAY)  # type: ignore[no-untyped-call]
        self.shown = True

    def view_ref(self, run: int, view: RunView | None) -> dict[str, Any] | None:
        """Where the run's live widget is, for a page that opens while the run goes on (``_control_comm``'s
        ``views``): ``{"run", "model_id", "cell_id", "text", "data", "metadata"}``, or ``None`` unless a live
        ``view`` was shown. ``data`` and ``metadata`` are the display's bundle as of now (the widget view, the
        static copy, the line) and metadata, so the output a page adds back is saved with its static copy; they are
        left out if the copy cannot be made (this may run on the comm's thread while the run goes on)."""
        if view is None or getattr(view, "comm", None) is None or not self.shown:
            return None
        ref: dict[str, Any] = {"run": run, "model_id": view.model_id, "cell_id": self.cell_id, "text": self._plain}
        try:
            ref |= {"data": self.bundle(), "metadata": RUN_DISPLAY}
        except Exception:  # a transcript changing under us: the page shows the widget, saved with its line only
            _log.debug("no static copy for the views", exc_info=True)
        return ref

    def show_again(self) -> None:
        """``display(run)``: another live view, unless the run was shown in this very cell."""
        if self.shown and _same_cell(self._shown_in):
            return
        self.show()

    def shown_here(self) -> bool:
        """The run was displayed in the cell running now."""
        return self.shown and _same_cell(self._shown_in)

    def refresh(self, static: Static | None = None) -> None:
        """Send every display of the run its current bundle (from ``await run``, and when its view closes);
        ``static`` replaces the transcript as its static copy."""
        if self.shown:
            bundle = self.bundle(static)
            update_display(bundle, raw=True, display_id=self.display_id, metadata=RUN_DISPLAY)  # type: ignore[no-untyped-call]

    def refresh_at_cell_end(self, static: Callable[[], Static | None]) -> None:
        """:meth:`refresh` when the running cell has finished running its code (IPython's ``post_run_cell``, still
        before the cell's reply, so executing clients keep the update), with ``static()``'s static copy."""
        shell = get_ipython()  # type: ignore[no-untyped-call, unused-ignore]
        if shell is None:
            self.refresh(static())
            return

        def at_end(*_: Any) -> None:
            shell.events.unregister("post_run_cell", at_end)
            self.refresh(static())

        shell.events.register("post_run_cell", at_end)
