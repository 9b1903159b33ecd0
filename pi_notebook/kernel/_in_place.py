"""Changes made inside an existing object (``lst.append(x)``, ``df["c"] = 0``, ``obj.size = 3``), which giving a name
its old object back does not undo: which ones the agent's code may make, a copy kept before it runs where that is
cheap, and putting the copy back into the very same object.

What is detected, and how (never more than this is claimed):

- **From the code's syntax** (:func:`suspects`, before it runs): a variable used as the base of an assignment or a
  deletion through ``[...]`` or ``.attr`` (``df["c"] = 0``, ``del d[k]``, ``obj.size = 3``, ``x.a.b = 1``), an
  augmented assignment (``lst += [1]`` changes a list in place), a call of a method that changes its object
  (:data:`MUTATING_METHODS`: ``append``, ``update``, ``sort``, ...), a call with ``inplace=True``, and a first argument
  of :data:`MUTATING_FUNCTIONS` (``random.shuffle(lst)``, ``heapq.heappush(h, x)``).
- **From the objects' sizes** (:func:`shape_of`, before and after): a list, dict, set, bytearray or deque whose length
  changed, or a numpy array or pandas object whose shape changed, although the code named no change to it (it went
  through another name, or a function of the user's).

What can be given back (:func:`keep`, only for a suspect, within the run's byte budget): the elements of a list,
dict, set, bytearray or deque changed at its own level (not an object inside it: ``lst[0].x = 1`` is not), the data
of a numpy array (same shape and type) or of a pandas object (``_update_inplace``, then checked with ``equals``), and
an attribute of a plain object set or deleted at its own level (when its class defines no property of that name).
Everything else that changed is named as not restored, with the reason.
"""

from __future__ import annotations

import ast
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ._checkpoint_files import CheckpointBudget

__all__ = ["ABSENT", "InPlace", "Suspect", "keep", "shape_of", "suspects"]

MUTATING_METHODS = frozenset(
    {
        # list, dict, set, bytearray, deque
        "append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update", "setdefault",
        "popitem", "add", "discard", "difference_update", "intersection_update", "symmetric_difference_update",
        "appendleft", "extendleft", "popleft", "rotate",
        # numpy, pandas (those that change their object without inplace=True)
        "fill", "resize", "put", "itemset", "setflags", "partition", "__setitem__", "__delitem__", "__iadd__",
    }
)  # fmt: skip
"""Methods that change the object they are called on."""
MUTATING_FUNCTIONS = frozenset(
    {"shuffle", "heappush", "heappop", "heapify", "heapreplace", "heappushpop", "insort", "insort_left",
     "insort_right", "copyto", "place", "putmask", "fill_diagonal"}
)  # fmt: skip
"""Functions that change their first argument (``random.shuffle``, ``heapq``, ``bisect``, ``numpy``)."""
_INDEXERS = frozenset({"loc", "iloc", "at", "iat", "values", "T", "flat", "real", "imag"})
"""Attributes that reach into their object's own data (``df.loc[0, "a"] = 1`` changes ``df``)."""

ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "<absent>"})()
"""An attribute (or a variable) that was not there."""


@dataclass(frozen=True, slots=True)
class Suspect:
    """A variable the code may change in place: ``how`` it does (for the receipt), ``depth`` 1 when the change is at
    the object's own level, more when it is inside an object the variable holds; ``attribute`` the attribute set or
    deleted at depth 1 (``obj.size = 3``)."""

    name: str
    how: str
    depth: int
    attribute: str | None = None


def suspects(tree: ast.AST) -> dict[str, Suspect]:
    """The variables the code (parsed) may change in place, each once (its shallowest change wins)."""
    found: dict[str, Suspect] = {}
    for suspect in _walk(tree):
        known = found.get(suspect.name)
        if known is None or suspect.depth < known.depth:
            found[suspect.name] = suspect
    return found


def _walk(tree: ast.AST) -> Iterator[Suspect]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                yield from _targets(target, "=")
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            yield from _targets(node.target, "=")
        elif isinstance(node, ast.AugAssign):
            if isinstance(node.target, ast.Name):
                yield Suspect(node.target.id, f"{node.target.id} {_operator(node.op)}= ...", 1)
            else:
                yield from _targets(node.target, f"{_operator(node.op)}=")
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                yield from _targets(target, "del")
        elif isinstance(node, ast.Call):
            yield from _call(node)


def _targets(target: ast.expr, verb: str) -> Iterator[Suspect]:
    if isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _targets(element, verb)
    elif isinstance(target, ast.Starred):
        yield from _targets(target.value, verb)
    elif isinstance(target, ast.Subscript | ast.Attribute):
        base = _base(target)
        if base is not None:
            name, depth = base
            attribute = target.attr if isinstance(target, ast.Attribute) and depth == 1 else None
            shown = ast.unparse(target)
            yield Suspect(name, f"del {shown}" if verb == "del" else f"{shown} {verb} ...", depth, attribute)


def _call(node: ast.Call) -> Iterator[Suspect]:
    func = node.func
    inplace = any(k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value for k in node.keywords)
    if isinstance(func, ast.Attribute) and (func.attr in MUTATING_METHODS or inplace):
        base = _base(func.value, depth=1)
        if base is not None:
            yield Suspect(base[0], f"{ast.unparse(func)}(...)", base[1])
            return
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name in MUTATING_FUNCTIONS and node.args:
        base = _base(node.args[0], depth=1)
        if base is not None:
            yield Suspect(base[0], f"{ast.unparse(func)}({ast.unparse(node.args[0])}, ...)", base[1])


def _base(node: ast.expr, depth: int = 0) -> tuple[str, int] | None:
    """The variable at the bottom of ``a.b[c].d`` and how many levels down the change is (indexers not counted)."""
    while isinstance(node, ast.Subscript | ast.Attribute):
        if not (isinstance(node, ast.Attribute) and node.attr in _INDEXERS):
            depth += 1
        node = node.value
    return (node.id, max(depth, 1)) if isinstance(node, ast.Name) else None


def _operator(op: ast.operator) -> str:
    return ast.unparse(ast.BinOp(ast.Name("a"), op, ast.Name("b")))[2:-2]


# -- sizes ------------------------------------------------------------------------------------------------------
_SIZED = (list, dict, set, bytearray, deque)


def _kind(value: object) -> str | None:
    """``"builtin"``, ``"numpy"``, ``"pandas"`` or ``None``: the kinds of object this module can copy and compare."""
    kind = type(value)
    if kind not in _KINDS:  # cached per type: every watched piece of code asks it of every variable
        _KINDS[kind] = _kind_of_type(kind)
    return _KINDS[kind]


_KINDS: dict[type, str | None] = {}


def _kind_of_type(kind: type) -> str | None:
    if issubclass(kind, _SIZED):
        return "builtin"
    module = kind.__module__ or ""
    if module == "numpy" and kind.__name__ == "ndarray":
        return "numpy"
    if (module == "pandas" or module.startswith("pandas.")) and kind.__name__ in ("DataFrame", "Series"):
        return "pandas"
    return None


def shape_of(value: object) -> object:
    """A cheap size of ``value`` (its length, or its shape), ``None`` for an object of another kind. Never runs the
    object's own code beyond ``len`` of a builtin and ``shape`` of numpy and pandas."""
    kind = _kind(value)
    if kind == "builtin":
        return len(value)  # type: ignore[arg-type]
    if kind is not None:
        return tuple(getattr(value, "shape", ()))
    return None


# -- copies -----------------------------------------------------------------------------------------------------
@dataclass(eq=False, slots=True)
class InPlace:
    """A variable's object that the code may change in place, and what was kept to give it back (``saved``:
    ``None`` when nothing could be kept, ``why`` says why)."""

    name: str
    how: str
    value: Any
    saved: Any = None
    size: int = 0
    why: str = ""
    attribute: str | None = None

    @property
    def kept(self) -> bool:
        return not self.why

    def changed(self) -> bool:
        """The object no longer matches the copy (True when that cannot be told)."""
        if not self.kept:
            return True
        try:
            return not _same(self.value, self.saved, self.attribute)
        except Exception:
            return True

    def restore(self) -> str:
        """Put the copy back into the object; returns ``""`` or why it could not."""
        if not self.kept:
            return self.why
        try:
            return _put_back(self.value, self.saved, self.attribute)
        except Exception as exc:
            return f"could not be put back ({type(exc).__name__}: {exc})"


def keep(name: str, value: object, suspect: Suspect, budget: CheckpointBudget) -> InPlace:
    """A copy of ``value`` (held by ``name``) for ``suspect``'s change, if this module can give it back and it fits
    ``budget``; else an :class:`InPlace` saying why not."""
    item = InPlace(name, suspect.how, value)
    kind = _kind(value)
    if kind is None:
        return _keep_attribute(item, value, suspect)
    if kind == "builtin" and suspect.depth > 1:
        item.why = "the change is inside an object it holds"
        return item
    size = _size(value, kind)
    if not budget.take(size):
        item.why = f"too large to keep a copy of ({_megabytes(size)}, checkpoints.max_run_bytes)"
        return item
    item.saved, item.size = _copy(value, kind), size
    return item


def _keep_attribute(item: InPlace, value: object, suspect: Suspect) -> InPlace:
    attribute = suspect.attribute
    own = getattr(value, "__dict__", None)
    if attribute is None or not isinstance(own, dict):
        item.why = f"{type(value).__name__} objects cannot be copied cheaply"
        return item
    if hasattr(type(value), attribute):  # a property or another descriptor: setting it may run code
        item.why = f"{type(value).__name__}.{attribute} is not a plain attribute"
        return item
    item.saved, item.attribute = own.get(attribute, ABSENT), attribute
    return item


def _size(value: Any, kind: str) -> int:
    if kind == "numpy":
        return int(value.nbytes)
    if kind == "pandas":
        usage = value.memory_usage(deep=False)
        return int(usage.sum() if hasattr(usage, "sum") else usage)
    return sys.getsizeof(value)


def _copy(value: Any, kind: str) -> Any:
    if kind == "numpy":
        return value.copy()
    if kind == "pandas":
        return value.copy(deep=True)
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, set):
        return set(value)
    return list(value)


def _same(value: Any, saved: Any, attribute: str | None) -> bool:
    if attribute is not None:
        return vars(value).get(attribute, ABSENT) is saved
    kind = _kind(value)
    if kind == "numpy":
        import numpy

        return bool(value.shape == saved.shape and numpy.array_equal(value, saved, equal_nan=value.dtype.kind in "fc"))
    if kind == "pandas":
        return bool(value.equals(saved))
    # Equal elements (compared in C, identity first) count as unchanged: an element replaced by an equal value is.
    return len(value) == len(saved) and bool(list(value) == saved if isinstance(value, deque) else value == saved)


def _put_back(value: Any, saved: Any, attribute: str | None) -> str:
    if attribute is not None:
        if saved is ABSENT:
            vars(value).pop(attribute, None)
        else:
            vars(value)[attribute] = saved
        return ""
    kind = _kind(value)
    if kind == "numpy":
        if value.shape != saved.shape or value.dtype != saved.dtype:
            return "its shape or type changed"
        value[...] = saved
    elif kind == "pandas":
        value._update_inplace(saved.copy(deep=True))
        if not value.equals(saved):
            return "pandas did not take the copy back"
    elif isinstance(value, dict | set | deque):
        value.clear()
        value.update(saved) if not isinstance(value, deque) else value.extend(saved)
    else:
        value[:] = saved
    return ""


def _megabytes(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"
