"""Keys out of the kernel's own environment while the agent's Python code runs.

The ``python`` tool (and ``cell_run``, for a cell's code) runs the agent's code in the kernel's process, so
``os.environ`` there *is* the kernel's: the variables that hold keys (``pi_notebook.ai._keys.known_secrets``) are
removed from it for the duration of the call and put back after, unless the code set them meanwhile (its value is
kept). Processes the code starts
(``subprocess``, ``!cmd``) inherit the environment without them. The provider, which reads ``key_env`` at each
request, never runs meanwhile: the code holds the kernel's main thread and its event loop.

What this does not hide: ``/proc/self/environ`` (the environment the kernel was started with, which no later
change to ``os.environ`` alters), a key held in a Python object (``get_session().agent``), and a key the code reads
from a file. Every key the session knows is still redacted from everything the tool returns (``session._redact``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

__all__ = ["variables_hidden"]


@contextmanager
def variables_hidden(names: Iterable[str]) -> Iterator[None]:
    """Remove ``names`` from ``os.environ`` until the block ends (see the module docstring)."""
    removed = {name: os.environ.pop(name) for name in sorted(set(names)) if name in os.environ}
    try:
        yield
    finally:
        for name, value in removed.items():
            os.environ.setdefault(name, value)
