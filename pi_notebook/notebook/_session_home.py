"""Where a notebook's sessions go on a shared server (JupyterHub, a Kubernetes pod): whether the folder can be
written, and whose sessions a folder holds.

* **Not writable.** A kernel's home may be read-only, missing or not the user's. :func:`why_unwritable` says why,
  before anything is written (and without making the folder); the notebook then keeps its sessions in memory,
  says so in one line when the extension loads, and ``%pi sessions`` says so too.
* **Whose.** Under JupyterHub (``JUPYTERHUB_USER`` is set) each new session file's header records the user, and
  ``%pi sessions``, ``%pi resume`` and the ``%load_ext`` greeting leave out files another user wrote, so a folder
  shared by mistake (one volume for everybody, every pod's working directory ``/home/jovyan``) does not list or
  resume another user's transcripts. Give each user a folder of their own all the same: a file another user's
  processes can read is not private (``sessions.dir`` may name ``$JUPYTERHUB_USER``, see ``session_folder``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..session import SessionInfo

__all__ = ["HUB_USER_ENV", "hub_user", "mine", "why_unwritable"]

HUB_USER_ENV = "JUPYTERHUB_USER"


def hub_user() -> str:
    """The JupyterHub user this kernel runs for (``""`` outside a hub)."""
    return os.environ.get(HUB_USER_ENV, "")


def mine(infos: Sequence[SessionInfo]) -> list[SessionInfo]:
    """The sessions this user may see: those another hub user wrote are left out (files written outside a hub,
    with no user, are kept)."""
    user = hub_user()
    return [info for info in infos if not info.user or info.user == user]


def why_unwritable(folder: Path) -> str | None:
    """Why ``folder`` cannot be made or written (``"read-only file system"``, ``"permission denied"``,
    ``"/dev/null is not a folder"``), or ``None`` when it can. Looks at the nearest part of the path that exists;
    creates nothing."""
    existing = folder
    while not existing.exists():
        if existing.parent == existing:
            return f"{existing} does not exist"
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder"
    try:
        if os.statvfs(existing).f_flag & os.ST_RDONLY:
            return "read-only file system"
    except OSError:  # pragma: no cover - a path that vanished meanwhile
        pass
    if not os.access(existing, os.W_OK | os.X_OK):
        return "permission denied"
    return None
