"""The notebook: ``%load_ext pi_notebook``, the ``%pi`` magics, ``Run`` handles and the run widget.

    %load_ext pi_notebook
    run = %pi Explain what you can do      # returns at once; the widget streams the run
    await run                              # waits for agent_settled, shows transcript + event log

Python API: :func:`configure` (model, stream function, tools, settings), :func:`get_session`.
"""

from __future__ import annotations

from typing import Any

from ._controller import configure, default_faux, get_agent, get_session
from ._magics import USAGE, PiMagics, pi_transformer
from ._run import Run, RunReport
from ._view import RunView, TranscriptWidget

__all__ = [
    "USAGE",
    "Run",
    "RunReport",
    "RunView",
    "TranscriptWidget",
    "configure",
    "default_faux",
    "get_agent",
    "get_session",
    "load_ipython_extension",
    "unload_ipython_extension",
]


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%pi``/``%%pi``, the ``%pi wait`` rewrite, and the JupyterLab control channel."""
    ipython.register_magics(PiMagics)
    cleanup = ipython.input_transformers_cleanup
    if pi_transformer not in cleanup:
        cleanup.append(pi_transformer)
    from ._control import register_control

    register_control(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    cleanup = ipython.input_transformers_cleanup
    if pi_transformer in cleanup:
        cleanup.remove(pi_transformer)
