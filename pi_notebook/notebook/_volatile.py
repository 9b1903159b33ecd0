"""Outputs that differ from one execution of a notebook to the next, marked so a check of the saved notebook
(``pytest --nbval`` with the package's pytest plugin, ``pi_notebook.pytest_plugin``) leaves them out.

An executed notebook is checked by running it again and comparing each cell's outputs with the saved ones. Most of
what ``%pi`` shows is the same on every run under a replayed cassette or the faux model; a few outputs are not, by
nature, and carry ``{"pi_notebook": {"compare": [MIMETYPES]}}`` in their output metadata: only those mimetypes of
them are compared (none: the output is left out).

- the ``%load_ext`` greeting (it depends on the sessions saved before) and the ``%pi cassette`` line (recording or
  replaying, counts): :func:`show_volatile`, compared not at all;
- a run's display (``widget._display``): its ``text/plain`` line (``Run 2: prompt``) is compared, its static copy
  is not (it is the transcript so far when shown, replaced by the settled one through ``update_display``, which
  nbclient and JupyterLab apply to what they save and nbval does not);
- ``%pi tree`` (:func:`show_with_entry_ids`): compared, but the session's entry ids in it (8 hex digits, random) are
  read as ``ID``: its metadata holds ``{"pi_notebook": {"entry_ids": true}}``.

The ``await run`` report is compared whole except the event log's times, which the plugin reads as ``T`` (it knows
a log row by its shape: ``| 0.029 | `agent_start` |``, from ``_describe.render_markdown``).

Whether a person sees the cell (:func:`interactive`): the kernel cannot know it, but it knows whether the frontend
that sent the cell can answer ``input()``. JupyterLab, Notebook, VS Code and consoles can; nbclient (``jupyter
execute``, nbconvert, papermill) and nbval cannot. The greeting about earlier sessions is for people, so it is shown
only to the first kind.
"""

from __future__ import annotations

from typing import Any

from IPython.core.getipython import get_ipython
from IPython.display import display

__all__ = ["METADATA_KEY", "RUN_DISPLAY", "VOLATILE", "interactive", "show_volatile", "show_with_entry_ids"]

METADATA_KEY = "pi_notebook"
"""The output metadata key the pytest plugin reads (``pytest_plugin.METADATA_KEY``: the same string)."""
VOLATILE: dict[str, Any] = {METADATA_KEY: {"compare": []}}
"""Metadata of an output no check compares."""
RUN_DISPLAY: dict[str, Any] = {METADATA_KEY: {"compare": ["text/plain"]}}
"""Metadata of a run's display: its one-line ``text/plain`` is compared, its static copy is not."""


def show_volatile(text: str) -> None:
    """Show one line of text that a check of the saved notebook does not compare (see the module docstring)."""
    display({"text/plain": text}, raw=True, metadata=VOLATILE)  # type: ignore[no-untyped-call]


def show_with_entry_ids(text: str) -> None:
    """Show text holding the session's entry ids, which a check of the saved notebook reads as ``ID``."""
    display({"text/plain": text}, raw=True, metadata={METADATA_KEY: {"entry_ids": True}})  # type: ignore[no-untyped-call]


def interactive() -> bool:
    """Whether the cell running now came from a frontend a person uses (it lets the kernel ask for input);
    ``True`` outside a kernel (terminal IPython)."""
    kernel = getattr(get_ipython(), "kernel", None)  # type: ignore[no-untyped-call, unused-ignore]
    if kernel is None:
        return True
    return bool(getattr(kernel, "_allow_stdin", True))  # ipykernel sets it from each execute_request
