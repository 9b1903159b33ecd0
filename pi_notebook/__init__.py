"""pi_notebook: run LLM agents inside notebooks with run control you can trust.

Layers (each imports only the ones before it): :mod:`pi_notebook.ai` (messages, streams, providers),
:mod:`pi_notebook.agent` (the loop and ``Agent``), :mod:`pi_notebook.session` (``AgentSession``: settling,
retry, compaction, budgets, session files), :mod:`pi_notebook.tools` (Pi's coding tools), :mod:`pi_notebook.notebook`
(``%pi`` magics and the run widget). ``%load_ext pi_notebook`` loads the notebook extension.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def load_ipython_extension(ipython: Any) -> None:
    from .notebook import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .notebook import unload_ipython_extension as unload

    unload(ipython)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "pi-notebook"}]
