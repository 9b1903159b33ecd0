"""Counts of the package's layout (issue 38), printed for a commit's tree: run ``python bench/layout_counts.py``.

* **files naming a wire API**: for each wire API the fault server speaks (``openai-completions`` as ``openai``,
  ``anthropic-messages`` as ``anthropic``, ``openai-responses`` as ``responses``, ``google-generative-ai`` as
  ``google``), the files under ``pi_notebook/`` whose syntax tree names it: a string constant equal to the API's name
  or its format's short name, or an identifier (a name, attribute, function, class, argument or imported name;
  a leading ``_`` dropped) that contains the API's module name (``anthropic_messages``) or starts with the short
  name and ``_`` (``google_status``, ``openai_format``). Files of one API's own count as much as shared files that
  list every API, so read it with the next count.
* **branches on a wire API**: comparisons (``==``, ``!=``, ``in``) of something with a string constant that is one
  of those names or short names: the if-chains a new API has to extend, or whose last branch it silently falls
  into (before: an unknown API got Google's events).
* **private reaches**: ``import`` statements in one floor (``ai``, ``agent``, ``session``, ``tools``, ``kernel``,
  ``mcp``, ``notebook``: ``tests/test_import_graph.py``'s ``FLOORS``) naming a private module (a ``_name`` part
  after the floor) or a private room (a folder of private modules: ``kernel.cells``) of another floor.
* **long functions**: functions and methods in ``pi_notebook/`` over 50 lines (``def`` to its last line).
* **long modules, long classes**: modules over 600 lines, classes over 300 (``class`` to its last line): the house's
  size rules, which ``tests/test_layout_rules.py`` enforces.

Only the standard library's ``ast``: it reads the source, imports nothing."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pi_notebook"
FLOORS = ("ai", "agent", "session", "tools", "kernel", "mcp", "notebook")
WIRE_APIS = {
    "openai-completions": "openai",
    "anthropic-messages": "anthropic",
    "openai-responses": "responses",
    "google-generative-ai": "google",
}
LONG = 50
LONG_MODULE = 600
LONG_CLASS = 300


def _sources() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(), str(path)) for path in sorted(PACKAGE.rglob("*.py"))}


def _identifiers(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.alias):
            found.update(part for part in (node.name.split(".")[-1], node.asname) if part)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[-1])
    return found


def _constants(tree: ast.Module) -> set[str]:
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def files_per_api(sources: dict[Path, ast.Module]) -> dict[str, set[str]]:
    """The files naming each API (see the module docstring)."""
    result: dict[str, set[str]] = {}
    for api, short in WIRE_APIS.items():
        module = api.replace("-", "_")
        touched = set()
        for path, tree in sources.items():
            names = {name.lstrip("_").lower() for name in _identifiers(tree)}
            if {api, short} & _constants(tree) or any(module in name or name.startswith(f"{short}_") for name in names):
                touched.add(str(path.relative_to(ROOT)))
        result[api] = touched
    return result


def api_branches(sources: dict[Path, ast.Module]) -> list[str]:
    """Comparisons with a wire API's name or short name (see the module docstring)."""
    names = set(WIRE_APIS) | set(WIRE_APIS.values())
    found = []
    for path, tree in sources.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and any(
                isinstance(side, ast.Constant) and side.value in names for side in [node.left, *node.comparators]
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def _module_parts(path: Path) -> list[str]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _private_rooms(sources: dict[Path, ast.Module]) -> set[tuple[str, ...]]:
    """The folders inside a floor whose modules, at any depth below, are all private (``kernel/cells/``), as dotted
    parts: the rule of ``tests/test_import_graph.py``'s ``private_room``."""
    modules = [tuple(_module_parts(path)) for path in sources if path.name != "__init__.py"]
    folders = {tuple(_module_parts(path)) for path in sources if path.name == "__init__.py"}
    return {
        folder
        for folder in folders
        if len(folder) > 2
        and folder[1] in FLOORS
        and all(module[-1].startswith("_") for module in modules if module[: len(folder)] == folder)
        and any(module[: len(folder)] == folder for module in modules)
    }


def _reaches(floor: str, target: list[str], rooms: set[tuple[str, ...]]) -> bool:
    """Whether ``target`` (a module's dotted parts) is a private module or room of a floor other than ``floor``."""
    other = len(target) > 2 and target[0] == "pi_notebook" and target[1] in FLOORS and target[1] != floor
    return other and (any(part.startswith("_") for part in target[2:]) or tuple(target) in rooms)


def private_reaches(sources: dict[Path, ast.Module]) -> list[str]:
    rooms = _private_rooms(sources)
    found = []
    for path, tree in sources.items():
        parts = _module_parts(path)
        if len(parts) < 2 or parts[1] not in FLOORS:
            continue
        package = parts if path.name == "__init__.py" else parts[:-1]
        for node in ast.walk(tree):
            targets: list[list[str]] = []
            if isinstance(node, ast.Import):
                targets = [alias.name.split(".") for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - (node.level - 1)] if node.level else []
                targets = [base + (node.module.split(".") if node.module else [])]
            found.extend(
                f"{'.'.join(parts)} -> {'.'.join(target)} (line {node.lineno})"
                for target in targets
                if _reaches(parts[1], target, rooms)
            )
    return found


def long_functions(sources: dict[Path, ast.Module]) -> list[str]:
    found = []
    for path, tree in sources.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length > LONG:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)")
    return found


def long_modules_and_classes(sources: dict[Path, ast.Module]) -> tuple[list[str], list[str]]:
    modules, classes = [], []
    for path, tree in sources.items():
        lines = len(path.read_text().splitlines())
        if lines > LONG_MODULE:
            modules.append(f"{path.relative_to(ROOT)} ({lines} lines)")
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length > LONG_CLASS:
                    classes.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)")
    return modules, classes


def main(verbose: bool) -> None:
    sources = _sources()
    per_api = files_per_api(sources)
    long_modules, long_classes = long_modules_and_classes(sources)
    counts = [
        ("branches on a wire API's name", api_branches(sources)),
        ("private reaches", private_reaches(sources)),
        (f"functions over {LONG} lines", long_functions(sources)),
        (f"modules over {LONG_MODULE} lines", long_modules),
        (f"classes over {LONG_CLASS} lines", long_classes),
    ]
    out = sys.stdout
    out.write(f"files naming a wire API: max {max(len(files) for files in per_api.values())}")
    out.write(f" ({', '.join(f'{api} {len(files)}' for api, files in per_api.items())})\n")
    if verbose:
        out.writelines(f"  {api}: {' '.join(sorted(files))}\n" for api, files in per_api.items())
    for label, items in counts:
        out.write(f"{label}: {len(items)}\n")
        if verbose:
            out.writelines(f"  {item}\n" for item in items)


if __name__ == "__main__":
    main(verbose="-v" in sys.argv[1:])
