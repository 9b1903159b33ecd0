"""Tools for agents: Pi's ``bash`` tool (process-tree kill on abort and timeout, output tail, progress)."""

from ._output import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Truncation
from .bash import BashError, bash_tool

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_LINES", "BashError", "Truncation", "bash_tool"]
