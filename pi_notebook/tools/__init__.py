"""Pi's coding tools for agents, with Pi 0.83's names, parameters, limits, texts and result shapes.

- ``read``: a text file's lines (offset/limit, 2000 lines / 50 KB per call) or an image (:mod:`.read`);
- ``write``: create or overwrite a file, atomically (:mod:`.write`);
- ``edit``: exact-text replacements returning a diff, atomically (:mod:`.edit`; :func:`preview_edit` shows the
  diff a call would make, without writing);
- ``ls``: a directory's entries (:mod:`.ls`);
- ``grep``: matching lines, honouring ``.gitignore``, pure Python (:mod:`.grep`);
- ``find``: paths matching a glob, honouring ``.gitignore``, pure Python (:mod:`.find`);
- ``bash``: a shell command with process-tree kill on abort and timeout, output tail (:mod:`.bash`).

The ``python`` tool (the agent's code in the kernel) is on the floor above, :mod:`pi_notebook.kernel`.

Each ``*_tool(cwd)`` returns an :class:`~pi_notebook.agent.AgentTool` whose relative paths resolve against
``cwd``; :func:`coding_tools` gives all seven, :func:`read_only_tools` the four that change nothing, and
each tool carries its approval default, approval preview and Pi's system-prompt snippet and guidelines
(``AgentTool.approval``, ``.preview``, ``.prompt``). Every tool
stops between files or chunks when its abort signal fires; file work runs in a worker thread so the event loop
stays free. Failures raise :class:`FileToolError` (``BashError`` for ``bash``) with Pi's texts, which the agent
loop turns into error tool results.
"""

from ._atomic import write_atomic
from ._common import FileToolError, Stop, js_number
from ._diff import generate_diff_string, generate_unified_patch
from ._edits import apply_edits, normalize_to_lf
from ._file_journal import file_journal
from ._images import process_image
from ._lifeline import LIFELINE
from ._output import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    OutputAccumulator,
    Truncation,
    delete_at_exit,
    format_size,
    tail_text,
    truncate_tail,
)
from ._process import KILL_GIVE_UP_S, KILL_POLL_S, MARKER_ENV, ProcessTree, marked_pids, process_alive, spawn_mark
from ._sets import coding_tools, read_only_tools
from ._truncate import truncate_head
from .bash import BashError, bash_tool
from .edit import edit_tool, preview_edit
from .find import find_tool
from .grep import grep_tool
from .ls import ls_tool
from .read import read_tool
from .write import write_tool

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "KILL_GIVE_UP_S",
    "KILL_POLL_S",
    "LIFELINE",
    "MARKER_ENV",
    "BashError",
    "FileToolError",
    "OutputAccumulator",
    "ProcessTree",
    "Stop",
    "Truncation",
    "apply_edits",
    "bash_tool",
    "coding_tools",
    "delete_at_exit",
    "edit_tool",
    "file_journal",
    "find_tool",
    "format_size",
    "generate_diff_string",
    "generate_unified_patch",
    "grep_tool",
    "js_number",
    "ls_tool",
    "marked_pids",
    "normalize_to_lf",
    "preview_edit",
    "process_alive",
    "process_image",
    "read_only_tools",
    "read_tool",
    "spawn_mark",
    "tail_text",
    "truncate_head",
    "truncate_tail",
    "write_atomic",
    "write_tool",
]
