"""A run's checkpoint of the variables its code bound, rebound and deleted: the objects they held before, by reference.

Each piece of code the agent runs (the ``python`` tool's, and a cell ``cell_run`` runs) is watched (:meth:`Watch`):
before it runs, the namespace's bindings are noted (one dict copy of references: no object is copied), the code is
read for the changes it may make inside existing objects (``_in_place``: a copy is kept of those it can give back),
and the sizes of the user's lists, dicts, arrays and frames are taken; after it ran (also when it was stopped midway),
every name whose object changed, appeared or went is recorded with the object it held before the run and the one the
run left. The first "before" of a name in the run is kept; the last "after".

A rewind gives each name its object back (the very same object: ``df is df_before``), removes the names the run made,
and puts back the copies of objects changed in place. It names, never hides, what it cannot give back: a change inside
an object it could not copy (too large, a kind it cannot copy, a change deeper than the object's own level), and an
object whose size changed although the code named no change to it (unless it is another name of an object whose copy
is put back: that name gets it back too). What the code did outside the namespace (files it wrote, processes it
started, data it sent) is not tracked: the receipt says so.

IPython's own names (``_``, ``_1``, ``_i1``, ``In``, ``Out``, ...) are left out: they are the history, not the user's
variables.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from ._checkpoint_files import CheckpointBudget
from ._in_place import ABSENT, InPlace, keep, shape_of, suspects

__all__ = ["Binding", "SizeChange", "VariableCheckpoint", "Watch", "user_name"]

_HISTORY = re.compile(r"_+|_i+|_i?\d+|_oh|_ih|_dh|In|Out|exit|quit|get_ipython|__\w+__")


def user_name(name: str) -> bool:
    """A variable of the user's, not one of IPython's history names or a dunder."""
    return _HISTORY.fullmatch(name) is None


@dataclass(eq=False, slots=True)
class Binding:
    """A name the run bound, rebound or deleted in ``namespace``: its object before the run and after it (each
    :data:`~._in_place.ABSENT` when the name was not there)."""

    namespace: dict[str, Any]
    name: str
    before: Any
    after: Any


@dataclass(frozen=True, slots=True)
class SizeChange:
    """An object whose size changed while its name kept it, with no change to it in the code (named only)."""

    name: str
    before: object
    after: object


@dataclass(eq=False)
class VariableCheckpoint:
    """The variables one run changed (see the module docstring)."""

    budget: CheckpointBudget
    bindings: dict[tuple[int, str], Binding] = field(default_factory=dict)
    in_place: list[InPlace] = field(default_factory=list)
    """Objects the code changed in place, in order (those with a copy can be given back)."""
    resized: list[SizeChange] = field(default_factory=list)
    code_runs: int = 0
    """How many pieces of code ran (what they did outside the namespace is not tracked)."""
    _copied: dict[tuple[int, str | None], InPlace] = field(default_factory=dict, repr=False)
    """What was kept of an object (and attribute) this run: its first "before" stands."""

    def watch(self, namespace: dict[str, Any], code: str, shell: Any = None) -> Watch:
        """Start watching one piece of ``code`` about to run in ``namespace``; call ``finish()`` once it ended."""
        return Watch(self, namespace, code, shell)

    @property
    def bytes_held(self) -> int:
        return sum(item.size for item in self.in_place)

    def record(self, namespace: dict[str, Any], name: str, before: Any, after: Any) -> None:
        key = (id(namespace), name)
        known = self.bindings.get(key)
        if known is None:
            self.bindings[key] = Binding(namespace, name, before, after)
        else:
            known.after = after

    def release(self) -> None:
        self.bindings, self.in_place, self.resized, self._copied = {}, [], [], {}


class Watch:
    """One piece of code, watched (see the module docstring)."""

    def __init__(self, checkpoint: VariableCheckpoint, namespace: dict[str, Any], code: str, shell: Any) -> None:
        self._checkpoint = checkpoint
        self._namespace = namespace
        self._before = dict(namespace)  # references only
        self._shapes = {
            name: shape for name, value in self._before.items() if (shape := _shape(name, value)) is not None
        }
        self._kept: list[InPlace] = []
        self._covered: set[str] = set()
        """Names whose object this run keeps a copy of (here or earlier): a size change is no news for them."""
        for name, suspect in suspects(_parse(code, shell)).items():
            value = self._before.get(name, ABSENT)
            key = (id(value), suspect.attribute)
            if key in checkpoint._copied:
                self._covered.add(name)
            if value is ABSENT or not user_name(name) or key in checkpoint._copied:
                continue
            item = keep(name, value, suspect, checkpoint.budget)
            checkpoint._copied[key] = item
            self._kept.append(item)
        checkpoint.code_runs += 1

    def finish(self) -> None:
        """The code ended (however): record what it bound and what it changed in place."""
        checkpoint, before, after = self._checkpoint, self._before, self._namespace
        for name in [*after, *(name for name in before if name not in after)]:  # in the namespace's order
            old, new = before.get(name, ABSENT), after.get(name, ABSENT)
            if old is not new and user_name(name):
                checkpoint.record(after, name, old, new)
        named = set(self._covered)
        for item in self._kept:
            if item.changed():
                checkpoint.in_place.append(item)
                named.add(item.name)
            else:
                checkpoint.budget.give(item.size)
                checkpoint._copied.pop((id(item.value), item.attribute), None)
        # Another name of an object whose copy a rewind puts back (``prices_before = prices``) gets it back too.
        put_back = {id(item.value) for item in checkpoint.in_place if item.kept and item.attribute is None}
        for name, shape in self._shapes.items():
            value = after.get(name, ABSENT)
            if name in named or value is not before[name] or id(value) in put_back:
                continue
            if shape_of(value) != shape:
                checkpoint.resized.append(SizeChange(name, shape, shape_of(value)))
        self._before = {}


def _shape(name: str, value: object) -> object:
    shape = shape_of(value)  # (cheaper than the name's check, and None for most values)
    return shape if shape is not None and user_name(name) else None


def _parse(code: str, shell: Any) -> ast.AST:
    try:
        source = shell.transform_cell(code) if shell is not None else code
        return ast.parse(source)
    except Exception:  # IPython syntax it cannot read, or a syntax error (the code will fail the same way)
        return ast.Module(body=[], type_ignores=[])
