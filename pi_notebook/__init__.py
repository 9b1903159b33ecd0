"""pi_notebook: run LLM agents inside notebooks with run control you can trust.

Floors (each imports only the ones below it): :mod:`pi_notebook.ai` (messages, streams, providers),
:mod:`pi_notebook.agent` (the loop and ``Agent``), then side by side :mod:`pi_notebook.session` (``AgentSession``:
settling, retry, compaction, budgets, session files) and :mod:`pi_notebook.tools` (Pi's coding tools), then
:mod:`pi_notebook.kernel` (the ``python`` tool and what interrupts the kernel's main thread), then
:mod:`pi_notebook.notebook` (``%pi`` magics and the run widget). ``%load_ext pi_notebook`` loads the notebook
extension. Every exception the package raises derives from :class:`PiNotebookError` (its tree is drawn in
``pi_notebook/ai/_errors.py``). See ``docs/ARCHITECTURE.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .ai._errors import PiNotebookError

__all__ = ["PiNotebookError", "load_ipython_extension", "unload_ipython_extension"]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``PiNotebookError`` on first use: importing ``pi_notebook`` alone (as pytest does for the package's plugin,
    ``pi_notebook.pytest_plugin``, in every test run of an environment that has it) imports none of its floors."""
    if name == "PiNotebookError":
        from .ai._errors import PiNotebookError

        return PiNotebookError
    raise AttributeError(f"module 'pi_notebook' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    from .notebook import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .notebook import unload_ipython_extension as unload

    unload(ipython)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "pi-notebook"}]
