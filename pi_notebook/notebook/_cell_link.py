"""The cell tools in a notebook's runs: which notebook a run acts on, and whether its model is offered them.

The cell tools (``pi_notebook.kernel``) act on the notebook through its page in JupyterLab (or Notebook 7), where the
pi-notebook extension answers over the control comm. Where there is no such page — nbclient, nbval, nbconvert,
VS Code, classic Notebook, plain IPython, or JupyterLab without the extension — they cannot work, so a run there is
not offered them: they are left out of the tools the model sees for that run, and the system prompt says why
(``_defaults.system_prompt``). ``%pi tools`` says the same (``_approval.describe_tools``).

When a run starts (:func:`notebook_of_cell`, in the magic, while the ``%pi`` cell is the kernel's current request)
it records where that cell came from: the client session id of its ``execute_request``, the cell's id and the
notebook's path (:class:`~pi_notebook.kernel.NotebookTarget`). Its task (:func:`with_cell_tools`) then sets
:data:`~pi_notebook.kernel.current_notebook` for the tools it calls and decides: offered when a page showing that
notebook is connected. The page opens its control comm a moment after ``%load_ext pi_notebook`` ran; so that a
notebook run top to bottom (``%load_ext`` and ``%pi`` a few milliseconds apart) still gets the tools, a run whose
cell came from a page that sends cell ids (JupyterLab does; nbclient does not) waits up to
:data:`CONNECT_WAIT_S` for it, once per page.

Under a cassette (``%pi cassette``) the cell tools are never offered, in JupyterLab either: a recording must replay
where no page is (``pytest --nbval --pi-replay``), and the request a recording matches holds the tool list and the
system prompt, which would differ between the page that recorded and the check that replays.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Collection
from typing import Any, Protocol

from ..kernel import CELL_TOOL_NAMES, KERNEL, NotebookTarget, NotebookUnavailable, current_notebook
from ..session import AgentSession

__all__ = ["CONNECT_WAIT_S", "cells_left_out", "notebook_of_cell", "with_cell_tools"]

CONNECT_WAIT_S = 1.0
"""How long a run from a JupyterLab page waits for that page's control comm, the first time."""

_waited: set[str] = set()  # client ids that had their wait


class _Entry(Protocol):
    """What this needs of a notebook session (``NotebookSession``)."""

    @property
    def session(self) -> AgentSession: ...

    @property
    def cassette(self) -> object | None: ...

    def refresh_prompt(self, left_out: Collection[str] = ()) -> None: ...


def _parent() -> dict[str, Any]:
    try:
        from IPython.core.getipython import get_ipython

        kernel = getattr(get_ipython(), "kernel", None)  # type: ignore[no-untyped-call, unused-ignore]
        parent = kernel.get_parent("shell") if kernel is not None else None
    except Exception:  # no kernel, or an ipykernel without get_parent
        return {}
    return parent if isinstance(parent, dict) else {}


def notebook_of_cell(run: int, path: str | None) -> NotebookTarget:
    """The notebook of the request the kernel is handling now (the ``%pi`` cell), for run number ``run``."""
    parent = _parent()
    client = (parent.get("header") or {}).get("session")
    cell = (parent.get("metadata") or {}).get("cellId")
    return NotebookTarget(
        client if isinstance(client, str) and client else None, cell if isinstance(cell, str) else None, path, run
    )


def cells_left_out(session: AgentSession, target: NotebookTarget | None) -> tuple[str, ...]:
    """The session's cell tools that cannot work for ``target`` (all of them when no page shows its notebook)."""
    if KERNEL.frontends.find(target) is not None:
        return ()
    return tuple(tool.name for tool in session.tools if tool.name in CELL_TOOL_NAMES)


def offer_tools(entry: _Entry, left_out: Collection[str]) -> None:
    """The model sees the session's tools but ``left_out`` for the next operation (the session keeps all)."""
    session = entry.session
    session.tools = session.tools  # the agent holds the whole set again
    if left_out:
        session.agent.state.tools = [tool for tool in session.agent.state.tools if tool.name not in left_out]
    entry.refresh_prompt(left_out)


def with_cell_tools(
    entry: _Entry, target: NotebookTarget, operation: Callable[[], Awaitable[Any]]
) -> Callable[[], Any]:
    """``operation`` run with ``target`` as its notebook, and the cell tools offered only where they can work."""

    async def run() -> Any:
        current_notebook.set(target)  # the run's task: the tools it calls (its child tasks) see it
        uses_cells = any(tool.name in CELL_TOOL_NAMES for tool in entry.session.tools)
        if uses_cells and entry.cassette is not None:  # a recording replays where no page is (module docstring)
            offer_tools(entry, [tool.name for tool in entry.session.tools if tool.name in CELL_TOOL_NAMES])
            return await operation()
        if uses_cells and KERNEL.frontends.find(target) is None and target.cell_id and target.client not in _waited:
            _waited.add(target.client or "")
            with contextlib.suppress(NotebookUnavailable):
                await KERNEL.frontends.wait_for(target, CONNECT_WAIT_S, None)
        if uses_cells:
            offer_tools(entry, cells_left_out(entry.session, target))
        return await operation()

    return run
