"""What a notebook session starts with: the whole tool set, and a system prompt in Pi's shape.

:func:`default_tools` gives Pi's seven tools (``read``, ``bash``, ``edit``, ``write``, ``grep``, ``find``, ``ls``)
rooted at the kernel's working directory, plus the ``python`` tool on the notebook's namespace and the five cell
tools (``notebook_read``, ``cell_insert``, ``cell_edit``, ``cell_delete``, ``cell_run``; offered to the model only
where a JupyterLab page can act on the notebook, see ``_cell_link``).

:func:`system_prompt` follows Pi 0.83's ``buildSystemPrompt`` (the tool list from each tool's one-line snippet,
then the guidelines: Pi's per-tool ones, deduplicated, then "Be concise..." and "Show file paths..."), says the
agent runs inside a Jupyter kernel, and ends with the working directory, the Python version and a summary of
the user's variables (:func:`variables_summary`), so "plot the price column of df" needs no lookup first. Pi's
paragraphs about its own documentation are left out (they point at Pi's install). The prompt is made anew for
each run, so the summary is the namespace's when the run starts.
"""

from __future__ import annotations

import os
import platform
import sys
import types
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from ..agent import AgentTool
from ..ai import Model
from ..kernel import CELL_TOOL_NAMES, cell_tools, python_tool
from ..session import AgentSession, Settings, site_policy
from ..tools import coding_tools

__all__ = [
    "CELLS_LEFT_OUT",
    "MAX_VARIABLES",
    "allowed_tools_and_settings",
    "default_tools",
    "system_prompt",
    "variables_summary",
]

MAX_VARIABLES = 40
"""At most this many variables are listed; the rest are counted."""
MAX_LINE = 160
"""Each variable's line is cut to this many characters."""

CELLS_LEFT_OUT = (
    "The notebook cell tools ({names}) are not available in this run: the notebook is not open in JupyterLab "
    "with the pi-notebook extension (nbclient, nbval, VS Code, classic Notebook and plain IPython have none). Use "
    "python to look at the user's variables, and tell the user what to put in which cell."
)
"""What the system prompt says when the cell tools are left out of a run."""

_INTRO = (
    "You are an expert coding and data assistant operating inside a Jupyter notebook: you run in the "
    "notebook's Python kernel, beside the user's own code. You help users by looking at their data, running "
    "Python and shell commands, reading files, editing code, and writing new files. The user sees each tool "
    "call, may have to approve it first, and can stop it at any time."
)


def default_tools(cwd: str | os.PathLike[str] | None = None) -> list[AgentTool]:
    """Pi's seven tools rooted at ``cwd`` (default: the working directory now), then ``python``, then the cell
    tools; without those the site policy switches off (``[tools] disabled``)."""
    root = os.fspath(cwd) if cwd is not None else os.getcwd()
    off = site_policy().disabled
    return [tool for tool in (*coding_tools(root), python_tool(), *cell_tools()) if tool.name not in off]


SCRATCH_GUIDELINE = (
    "python runs in a scratch namespace: it reads the user's variables, and what you bind stays there (the user "
    "takes a variable with %pi adopt NAME); objects are shared, so do not change the user's objects in place"
)


def system_prompt(
    tools: Sequence[AgentTool],
    *,
    cwd: str | None,
    namespace: Mapping[str, Any] | None,
    left_out: Collection[str] = (),
    scratch: bool = False,
) -> str:
    """The notebook's system prompt for ``tools`` (see the module docstring). ``cwd=None``: the reproducible
    form (for cassettes), without the working directory, the Python version and the variables. ``left_out``: the
    session's tools not offered this time; when they are cell tools the prompt says why (not in the reproducible
    form). ``scratch``: the python tool runs in the scratch namespace (``python.namespace``); a guideline says so."""
    names = [tool.name for tool in tools]
    listed = [f"- {tool.name}: {tool.prompt.snippet}" for tool in tools if tool.prompt is not None]
    guidelines: list[str] = []
    if "bash" in names and not {"grep", "find", "ls"} & set(names):
        guidelines.append("Use bash for file operations like ls, rg, find")
    for tool in tools:
        for line in tool.prompt.guidelines if tool.prompt is not None else ():
            if line.strip() and line.strip() not in guidelines:
                guidelines.append(line.strip())
    if scratch and "python" in names:
        guidelines.append(SCRATCH_GUIDELINE)
    guidelines += ["Be concise in your responses", "Show file paths clearly when working with files"]
    parts = [
        _INTRO,
        "Available tools:\n" + ("\n".join(listed) if listed else "(none)"),
        "In addition to the tools above, you may have access to other custom tools depending on the project.",
        "Guidelines:\n" + "\n".join(f"- {line}" for line in guidelines),
    ]
    if cwd is None:
        return "\n\n".join(parts)
    cells = [name for name in CELL_TOOL_NAMES if name in left_out]
    if cells:
        parts.append(CELLS_LEFT_OUT.format(names=", ".join(cells)))
    parts.append(f"Python: {platform.python_version()} ({sys.executable})")
    parts.append("The user's variables:\n" + variables_summary(namespace))
    return "\n\n".join(parts) + f"\nCurrent working directory: {cwd.replace(os.sep, '/')}"


def variables_summary(namespace: Mapping[str, Any] | None, limit: int = MAX_VARIABLES) -> str:
    """One line per user variable: name, type and shape or length (``df: DataFrame shape=(100, 3)
    columns=[price, qty, date]``). Skips private names (``_x``), modules, IPython's own (``In``, ``Out``,
    ``get_ipython``, ``exit``, ``quit``) and what the shell puts there itself; at most ``limit`` lines, each
    cut to :data:`MAX_LINE` characters. Never raises: a value whose description fails shows only its type."""
    if not namespace:
        return "(none)"
    hidden = _hidden_names(namespace)
    names = [
        name
        for name, value in list(namespace.items())
        if name.isidentifier()
        and not name.startswith("_")
        and name not in hidden
        and not isinstance(value, types.ModuleType)
    ]
    if not names:
        return "(none)"
    lines = [_cut(f"{name}: {_describe(namespace[name])}") for name in names[:limit]]
    if len(names) > limit:
        lines.append(f"... and {len(names) - limit} more")
    return "\n".join(lines)


_IPYTHON_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit", "open"})


def _hidden_names(namespace: Mapping[str, Any]) -> set[str]:
    """IPython's own names: those it lists in ``user_ns_hidden`` (when this is its namespace), and the usual
    ones."""
    hidden = set(_IPYTHON_NAMES)
    try:
        from IPython.core.getipython import get_ipython

        shell = get_ipython()  # type: ignore[no-untyped-call, unused-ignore]
    except Exception:  # pragma: no cover - IPython is a dependency
        shell = None
    if shell is not None and getattr(shell, "user_ns", None) is namespace:
        hidden.update(k for k, v in shell.user_ns_hidden.items() if namespace.get(k) is v)
    return hidden


def _describe(value: Any) -> str:
    kind = type(value).__name__
    try:
        return kind + _shape(value)
    except Exception:
        return kind


def _shape(value: Any) -> str:
    if isinstance(value, bool | int | float | complex):
        return f" = {value!r}"
    if isinstance(value, str | bytes):
        return f" len={len(value)}" + (f" = {value[:40]!r}" if len(value) <= 40 else "")
    if isinstance(value, types.FunctionType | types.BuiltinFunctionType | type):
        return ""
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        text = f" shape={shape}"
        columns = getattr(value, "columns", None)
        if columns is not None and not isinstance(columns, str | bytes):
            text += " columns=[" + _names(columns) + "]"
        dtype = getattr(value, "dtype", None)
        if dtype is not None and columns is None:
            text += f" dtype={dtype}"
        return text
    if isinstance(value, Mapping):
        return f" len={len(value)} keys=[{_names(value.keys())}]"
    if isinstance(value, list | tuple | set | frozenset):
        return f" len={len(value)}"
    return ""


def _names(items: Iterable[Any], limit: int = 12) -> str:
    shown = []
    for index, item in enumerate(items):
        if index == limit:
            shown.append("...")
            break
        shown.append(str(item)[:30])
    return ", ".join(shown)


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…"


def allowed_tools_and_settings(
    model: Model,
    tools: Iterable[AgentTool] | None,
    settings: Settings | Mapping[str, Any] | None,
    previous: AgentSession | None,
) -> tuple[list[AgentTool], Settings]:
    """``configure``'s tools and settings, the ``previous`` session's if not given (what ``%pi settings`` set
    survives a change of model), as the site policy has them. Raises its ``PolicyError`` for a model or tool it
    refuses."""
    if tools is None:
        tools = previous.tools if previous is not None else default_tools()
    if settings is None:
        settings = previous.settings if previous is not None else Settings()
    elif isinstance(settings, Mapping):
        settings = Settings(**settings)
    policy = site_policy()
    settings = policy.enforce(settings)
    policy.check_model(model)
    tools = list(tools)
    policy.check_tools(tool.name for tool in tools)
    return tools, settings
