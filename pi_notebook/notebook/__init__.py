"""The notebook: ``%load_ext pi_notebook``, the ``%pi`` magics, ``Run`` handles and the run widget.

    %load_ext pi_notebook
    run = %pi Explain what you can do      # returns at once; the widget streams the run
    await run                              # waits for agent_settled, shows transcript + event log

Python API: :func:`configure` (model, stream function, tools, settings), :func:`get_session`,
:func:`get_notebook_session` (the session with its model spec and runs), :func:`default_tools` (the tool set a
notebook session starts with: Pi's seven rooted at the kernel's working directory, and ``python``).

Approval: ``python``, ``bash``, ``write`` and ``edit`` ask before they run (setting ``tools.approval``); the run's
widget shows the call with Run / Skip / Always for this session (``_approval``). Where no frontend shows the
widget (nbclient, nbval, plain IPython) such a call ends at once with an error result saying how to allow it;
under a cassette, the answers are recorded and replayed.

Inside, by job: ``_run`` (a run's record and report), ``_presenter`` (session events -> widget operations,
drawn by ``_view``), ``_approval`` (asking before a tool runs), ``_defaults`` (tools and system prompt),
``_control_comm`` (the JupyterLab control channel), ``_registry`` (the kernel's named
sessions and their runs), ``_commands`` (the ``%pi`` parser) and ``_magics``; ``_mcp_magics`` (``%pi mcp``) and
``_mcp_link`` (the kernel's MCP servers' tools in each run; the servers themselves are ``pi_notebook.mcp``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..kernel import keep_busy
from ..session import PolicyError, Settings, site_policy
from ._commands import USAGE
from ._default_model import default_faux
from ._defaults import default_tools
from ._magics import MAX_PROMPT_CHARS, PiMagics, pi_transformer
from ._registry import REGISTRY, NotebookSession, configure, get_notebook_session, get_session
from ._run import Run, RunReport
from ._run_state import RunState, RunStatus
from ._saved import last_session_line, notebook_path, saving_problem
from ._volatile import interactive, show_volatile
from .widget._view import RunView, TranscriptWidget

__all__ = [
    "MAX_PROMPT_CHARS",
    "USAGE",
    "NotebookSession",
    "Run",
    "RunReport",
    "RunState",
    "RunStatus",
    "RunView",
    "TranscriptWidget",
    "configure",
    "default_faux",
    "default_tools",
    "get_notebook_session",
    "get_session",
    "load_ipython_extension",
    "unload_ipython_extension",
]


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%pi``/``%%pi``, the ``%pi wait`` rewrite, and the JupyterLab control channel (which follows
    the runs of the kernel's sessions); keep the kernel's status busy while a cell runs (``kernel._busy``)."""
    ipython.register_magics(PiMagics)
    cleanup = ipython.input_transformers_cleanup
    if pi_transformer not in cleanup:
        cleanup.append(pi_transformer)
    REGISTRY.control.register(ipython)
    keep_busy(getattr(ipython, "kernel", None))  # the status bar says Busy while a cell awaits a run
    REGISTRY.notebook = REGISTRY.notebook or notebook_path(getattr(ipython, "user_ns", None))
    _greet()
    _start_mcp_servers()


def _start_mcp_servers() -> None:
    """Start the servers of the ``mcpServers`` file (``~/.pi_notebook/mcp.json`` or ``$PI_NOTEBOOK_MCP_CONFIG``), once
    per kernel, in the background: ``%load_ext`` never waits for them (``%pi mcp list`` shows their state). Its line is
    marked so a check of the saved notebook leaves it out (it depends on the machine's file)."""
    global _mcp_file_read
    if _mcp_file_read:
        return
    _mcp_file_read = True
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return  # plain IPython: no loop outlives a cell, so no server could live (%pi mcp says so when used)
    try:
        line = REGISTRY.mcp.load_file()
    except Exception as exc:  # a server file must never break %load_ext
        line = f"pi: MCP servers not started ({type(exc).__name__}: {exc})"
    if line:
        show_volatile(line)


_mcp_file_read = False


def _greet() -> None:
    """One line when sessions cannot be saved here (the folder is not writable: they are kept in memory), else, for
    a person (not in a notebook being executed: nbclient, nbval), when this working directory has a saved session
    (``%pi resume`` continues it). Either is marked so that a check of the saved notebook leaves it out
    (``_volatile``): it depends on the machine and on what ran before. A site policy that cannot be read is said
    always (every run would be refused)."""
    try:
        site_policy()
    except PolicyError as exc:  # every run would be refused: say why now
        print(f"pi: {exc}")  # noqa: T201
        return
    entry = REGISTRY.find()
    settings = entry.session.settings if entry is not None else Settings()
    try:
        line = saving_problem(settings) or (last_session_line(settings, REGISTRY.notebook) if interactive() else None)
    except Exception as exc:  # a greeting must never break %load_ext
        line = f"pi: cannot list saved sessions ({type(exc).__name__}: {exc})"
    if line:
        show_volatile(line)


def unload_ipython_extension(ipython: Any) -> None:
    cleanup = ipython.input_transformers_cleanup
    if pi_transformer in cleanup:
        cleanup.remove(pi_transformer)
