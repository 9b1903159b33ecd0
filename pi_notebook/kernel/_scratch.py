"""The scratch namespace: where the ``python`` tool runs the agent's code when ``python.namespace`` is ``scratch``.

The agent reads the user's variables there and keeps what it binds to itself: a name the code binds, rebinds or
deletes changes the scratch namespace only, and the user takes what they want with ``%pi adopt NAME`` (the very
object, not a copy). Before each piece of code the scratch namespace is brought up to date with the user's: their
names come in as they are now (a name the user deleted goes), except those the agent bound itself, which it keeps.

What it does not protect: the objects are shared, so code that changes one of the user's objects in place (``df["c"]
= 0``, ``lst.append(1)``) changes the user's object. The run's checkpoint still watches that (``_checkpoint_vars``).
Functions the agent defines see the scratch namespace as their globals.
"""

from __future__ import annotations

import contextvars
from typing import Any

from ._checkpoint_vars import user_name

__all__ = ["Scratchpad", "current_scratch"]


class Scratchpad:
    """One session's scratch namespace (see the module docstring)."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {"__name__": "__main__"}
        self._own: set[str] = set()
        self._seen: dict[str, Any] = {}

    @property
    def own(self) -> list[str]:
        """The names the agent bound here, sorted."""
        return sorted(self._own)

    def prepare(self, user: dict[str, Any]) -> dict[str, Any]:
        """The namespace for the next piece of code: the user's names as they are now, the agent's own on top."""
        namespace = self.namespace
        for name in [name for name in namespace if name not in self._own and name not in user]:
            del namespace[name]
        for name, value in user.items():
            if name not in self._own:
                namespace[name] = value
        self._seen = dict(namespace)
        return namespace

    def settle(self) -> None:
        """The code ended: the names it bound, rebound or deleted are the agent's from now on."""
        namespace, seen = self.namespace, self._seen
        for name in namespace.keys() | seen.keys():
            if namespace.get(name, _GONE) is not seen.get(name, _GONE) and user_name(name):
                self._own.add(name)
        self._own &= namespace.keys()
        self._seen = {}

    def adopt(self, name: str, user: dict[str, Any]) -> Any:
        """Bind ``name`` in ``user`` to the scratch namespace's object (the same object). Raises ``KeyError``."""
        if name not in self._own:
            raise KeyError(name)
        value = self.namespace[name]
        user[name] = value
        return value

    def clear(self) -> None:
        self.namespace = {"__name__": "__main__"}
        self._own = set()


_GONE: Any = object()

current_scratch: contextvars.ContextVar[Scratchpad | None] = contextvars.ContextVar(
    "pi_notebook_current_scratch", default=None
)
"""The scratch namespace of the running run (``None``: the python tool runs in the user's namespace)."""
