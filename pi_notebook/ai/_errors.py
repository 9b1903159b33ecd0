"""The exception tree of pi_notebook: one base, a few branches a caller can catch, one class per condition.

Failures of a *run* are data, not exceptions (a provider ends its stream with ``stop_reason="error"``, a tool
failure is an error tool result): the classes below are raised by calls a program makes, each on the floor that
names the condition, and every one derives from :class:`PiNotebookError`. Each keeps the builtin base it had
(``ValueError``, ``RuntimeError``), so code that caught those still does::

    PiNotebookError
    ├── UserError                  you asked for something that cannot be done as asked
    │   ├── ApiKeyError            ai: a key with characters a header cannot carry (ValueError)
    │   ├── CassetteError          ai: a cassette that cannot record or replay a request
    │   ├── SettingsError          session: a setting's value (ValueError)
    │   ├── UsageError             notebook: a %pi command line
    │   └── RewindRefused          notebook: a run %pi rewind cannot take back (ValueError)
    ├── BusyError                  an operation is running (RuntimeError)
    │   ├── AgentBusyError         agent: prompt()/continue_() on a running Agent
    │   └── SessionBusyError       session: prompt()/continue_() on a working AgentSession
    ├── ToolError                  a tool call failed; the loop turns it into an error result (RuntimeError)
    │   ├── FileToolError          tools: read, write, edit, ls, grep, find
    │   ├── BashError              tools: bash
    │   ├── PythonError            kernel: python (PythonKernelInterrupt: the kernel's interrupt)
    │   └── CellToolError          kernel: the cell tools (CellKernelInterrupt: the kernel's interrupt)
    ├── SessionFileError           session: not a session file, or one this version cannot continue (ValueError)
    ├── FormatError                ai.cassette: a cassette file that cannot be read (ValueError)
    ├── ProviderError              ai: an HTTP provider's request failed (becomes the error message of the reply)
    ├── NotebookUnavailable        kernel: no notebook page can act on the run's notebook (FrontendRefused: a page
    │                              refused a cell request)
    ├── AbortRun                   session: a tool asks the session to abort the run (``ToolTimeoutError``
    │                              and ``CompactionCancelled`` sit beside it for the tool timeout and a stopped
    │                              compaction)
    └── ...                        internal signals (``OffsetBeyondEnd``, ``GlobError``, ``SummarizationFailed``)

``tests/test_public_api.py`` checks that every exception class in the package derives from the base.
"""

from __future__ import annotations

__all__ = ["BusyError", "PiNotebookError", "ToolError", "UserError"]


class PiNotebookError(Exception):
    """The base of every exception pi_notebook raises on purpose."""


class UserError(PiNotebookError):
    """The call cannot be done as asked (a bad value, a bad command line); the message says what to change."""


class BusyError(PiNotebookError, RuntimeError):
    """An operation is running: wait for it, stop it, or queue (``steer`` / ``follow_up``)."""


class ToolError(PiNotebookError, RuntimeError):
    """Raised by a tool's ``execute``; the agent loop turns its text into an error tool result."""
