"""No import cycles in ``pi_notebook``, function-level and ``TYPE_CHECKING`` imports included, and each layer
imports only the layers before it (DESIGN §1): an AST scan of every module builds the import graph."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pi_notebook"
FLOORS: list[set[str]] = [{"ai"}, {"agent"}, {"session", "tools"}, {"kernel", "mcp"}, {"notebook"}]
"""In import order (DESIGN §6b): a floor may import the floors below it; rooms on one floor (``session`` and
``tools``; ``kernel`` and ``mcp``) do not import each other. ``testing`` may use any of them."""
LAYERS = [name for floor in FLOORS for name in sorted(floor)]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imports_of(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The ``pi_notebook`` modules that ``name`` imports anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:  # `from . import module` imports that module, `from .m import name` m
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in known else base)
    found.update([package for target in found for package in packages_entered(name, target)])
    return {target for target in found if target in known and target != name}


def packages_entered(name: str, target: str) -> list[str]:
    """The packages whose ``__init__`` importing ``target`` from ``name`` runs first: ``target``'s parents that are
    not ``name``'s (those are already being imported). Importing ``kernel.cells._shared`` from ``kernel._checkpoint``
    runs ``kernel/cells/__init__.py`` and everything it imports: a cycle at import time the module edges alone miss."""
    parts = target.split(".")
    parents = [".".join(parts[:end]) for end in range(1, len(parts))]
    return [parent for parent in parents if not (name == parent or name.startswith(f"{parent}."))]


@functools.cache
def graph() -> Mapping[str, frozenset[str]]:
    """Each module and the modules it imports (read once per test session: every test here reads the same tree)."""
    known = modules()
    return {name: frozenset(imports_of(name, path, known)) for name, path in known.items()}


def find_cycle(edges: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One cycle of the graph as a path (first node repeated at the end), or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_the_cycle_finder_finds_a_cycle_hidden_in_a_function() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    source = "def later():\n    from .b import x\n"
    tree_targets = {
        f"pkg.{n.module}" for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.module
    }
    assert tree_targets == {"pkg.b"}  # ast.walk sees imports inside functions


def test_the_scan_sees_every_kind_of_import() -> None:
    edges = graph()
    assert "pi_notebook.ai.providers.anthropic_messages" in edges["pi_notebook.ai._api_registry"]  # in a function
    assert "pi_notebook.notebook" in edges["pi_notebook"]  # in a function
    assert "pi_notebook.session._summary" in edges["pi_notebook.session._events"]
    assert "pi_notebook.notebook.widget" in edges["pi_notebook.notebook._run_state"]  # runs widget/__init__ first


def test_importing_a_module_of_another_folder_runs_that_folders_init() -> None:
    assert packages_entered("pkg.a", "pkg.sub.b") == ["pkg.sub"]  # ``pkg`` is already being imported
    assert packages_entered("pkg.sub.a", "pkg.sub.b") == []
    assert packages_entered("pkg.sub", "pkg.c") == []  # the folder's own __init__
    assert packages_entered("pkg.a", "other.sub.b") == ["other", "other.sub"]


def test_pi_notebook_has_no_import_cycle() -> None:
    cycle = find_cycle(graph())
    assert cycle is None, " -> ".join(cycle or [])


def floor_of(layer: str) -> int:
    return next(index for index, floor in enumerate(FLOORS) if layer in floor)


def allowed_targets(layer: str) -> set[str]:
    """``layer`` itself and every layer on a lower floor."""
    return {layer}.union(*FLOORS[: floor_of(layer)])


def test_the_floors_are_ai_agent_session_and_tools_kernel_notebook() -> None:
    assert allowed_targets("tools") == {"ai", "agent", "tools"}
    assert allowed_targets("session") == {"ai", "agent", "session"}
    assert allowed_targets("kernel") == {"ai", "agent", "session", "tools", "kernel"}
    assert allowed_targets("mcp") == {"ai", "agent", "session", "tools", "mcp"}
    assert "kernel" in allowed_targets("notebook")


def test_each_layer_imports_only_the_floors_below_it() -> None:
    wrong = []
    for source, targets in graph().items():
        source_layer = source.split(".")[1] if source.count(".") else None
        if source_layer not in LAYERS:
            continue
        allowed = allowed_targets(source_layer)
        for target in targets:
            target_layer = target.split(".")[1] if target.count(".") else None
            if target_layer is not None and target_layer not in allowed:
                wrong.append(f"{source} imports {target}")
    assert wrong == []


def test_no_two_modules_share_a_name_on_different_floors() -> None:
    """A name says where a module lives: ``_approval`` on two floors made readers open the wrong one."""
    seen: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py":
            seen.setdefault(path.name, []).append(module_name(path))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


def private_room(name: str, known: Iterable[str]) -> bool:
    """``name`` is a folder of a floor whose modules are all private (``kernel.cells``): a room of that floor, which
    the floors above use through the floor's ``__init__`` (a folder with public modules, ``ai.providers``, is not)."""
    inside = [module.rpartition(".")[2] for module in known if module.startswith(f"{name}.")]
    return bool(inside) and all(module.startswith("_") for module in inside)


def private_reaches() -> set[tuple[str, str]]:
    """``(module, target)``: a module of one floor importing a private module (a ``_name`` part) or a private room
    of another."""
    edges = graph()
    found = set()
    for source, targets in edges.items():
        source_layer = source.split(".")[1] if source.count(".") else None
        if source_layer not in LAYERS:
            continue
        for target in targets:
            parts = target.split(".")
            other_floor = len(parts) > 2 and parts[1] in LAYERS and parts[1] != source_layer
            if other_floor and (any(part.startswith("_") for part in parts[2:]) or private_room(target, edges)):
                found.add((source, target))
    return found


def test_a_room_of_a_floor_is_private_to_it() -> None:
    known = set(graph())
    assert private_room("pi_notebook.kernel.cells", known)
    assert not private_room("pi_notebook.ai.providers", known)  # users import its faux provider
    assert not private_room("pi_notebook.kernel._exec", known)  # a module, not a folder


def test_a_floor_uses_another_floor_through_its_init_only() -> None:
    """Each floor's ``__init__`` exports what the floors above it use (``tests/test_public_api.py`` pins them);
    reaching into its private modules ties the floor above to how the floor below is split into files."""
    assert private_reaches() == set()


def test_the_cells_room_sits_on_top_of_the_kernel() -> None:
    """Only ``kernel/__init__.py`` imports ``kernel/cells/``: the room imports the kernel's other modules (the python
    tool, the checkpoint, the pages), so one of them importing any module of the room would run the room's
    ``__init__`` halfway through its own import."""
    room = "pi_notebook.kernel.cells"
    users = {
        source
        for source, targets in graph().items()
        if not (source == room or source.startswith(f"{room}."))
        and any(target == room or target.startswith(f"{room}.") for target in targets)
    }
    assert users == {"pi_notebook.kernel"}
