"""Which calls of the tools that only look (``read``, ``ls``, ``grep``, ``find``) need the user's approval.

They run without asking inside the working directory. A call asks (when the tool's approval mode is ``ask``, the
default) when its path, symlinks followed, is outside the working directory, or is a sensitive file wherever it
is (:func:`path_approval` says why, in words the approval question shows):

- secret stores under the home directory: ``~/.ssh``, ``~/.gnupg``, ``~/.aws``, ``~/.azure``, ``~/.kube``,
  ``~/.docker``, ``~/.config/gcloud``, ``~/.config/gh``, ``~/.netrc``, ``~/.pgpass``, ``~/.git-credentials``,
  ``~/.npmrc``, ``~/.pypirc``;
- a process's environment, memory or open files: ``/proc/<pid>/environ``, ``mem``, ``fd``, ``/proc/kcore``;
- system secrets: ``/etc/shadow``, ``/etc/gshadow``, ``/etc/sudoers``;
- by name, anywhere: ``.env`` and ``.env.*``, private keys (``id_rsa``, ``id_ed25519``, ... and ``*.pem``,
  ``*.key``, ``*.p12``, ``*.pfx``), ``credentials``/``credentials.json``, ``.htpasswd``.

What it does not cover: a ``grep`` or ``find`` inside the working directory that meets a ``.env`` while walking
(the call names no such path; every key the session knows is redacted from its output anyway), and ``bash`` or
``python`` (which ask for every call).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from typing import Any

from ..agent import AgentTool, Execute, ToolPrompt
from ._paths import resolve_to_cwd

__all__ = ["SENSITIVE_HOME", "SENSITIVE_NAMES", "looking_tool", "path_approval"]

SENSITIVE_HOME = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".config/gcloud",
    ".config/gh",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
)
SENSITIVE_SYSTEM = ("/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/proc/kcore")
SENSITIVE_NAMES = (
    ".env",
    ".env.*",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "credentials",
    "credentials.json",
    ".htpasswd",
)
_PROC = re.compile(r"^/proc/(?:\d+|self|thread-self)(?:/task/\d+)?/(?:environ|mem|fd|fdinfo|map_files)(?:/|$)")


def path_approval(cwd: str, path: object) -> str | None:
    """Why a looking tool's call on ``path`` (as the model gave it, relative to ``cwd``) needs approval, or
    ``None``; see the module docstring. A path that is not a string is left to the tool to refuse."""
    if not isinstance(path, str) or not path.strip():
        return None
    target = os.path.realpath(resolve_to_cwd(path, cwd))
    why = _sensitive(target)
    if why is not None:
        return why
    root = os.path.realpath(cwd)
    if target != root and not target.startswith(root.rstrip("/") + "/"):
        return f"it looks outside the working directory ({root}): {target}"
    return None


def looking_tool(
    name: str, root: str | None, *, description: str, parameters: dict[str, Any], prompt: ToolPrompt, execute: Execute
) -> AgentTool:
    """A tool that only looks (``read``, ``grep``, ``find``, ``ls``) rooted at ``root`` (``None``: the process's
    working directory at each call): it asks only for the calls whose ``path`` :func:`path_approval` flags (outside
    the working directory, or a secret store)."""

    def needs_approval(args: Any) -> str | None:
        path = args.get("path") if isinstance(args, Mapping) else None
        return path_approval(root if root is not None else os.getcwd(), path)

    return AgentTool(
        name=name,
        label=name,
        description=description,
        parameters=parameters,
        execute=execute,
        approval="ask",
        prompt=prompt,
        needs_approval=needs_approval,
    )


def _sensitive(target: str) -> str | None:
    home = os.path.realpath(os.path.expanduser("~"))
    for place in SENSITIVE_HOME:
        where = os.path.join(home, place)
        if target == where or target.startswith(where + "/"):
            return f"it looks at a secret store ({where}): {target}"
    if (
        target in SENSITIVE_SYSTEM
        or any(target.startswith(place + "/") for place in SENSITIVE_SYSTEM)
        or _PROC.match(target)
    ):
        return f"it looks at system or process secrets: {target}"
    name = os.path.basename(target)
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in SENSITIVE_NAMES):
        return f"it looks at a file that usually holds secrets: {target}"
    return None
