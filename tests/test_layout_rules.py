"""The size rules of the house (``docs/ARCHITECTURE.md``, "Rules of the house"): no module of ``pi_notebook`` over
600 lines, no class over 300. Past them a file or a class is split where that helps reading, not exempted."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pi_notebook"
MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 300


def module_lines(source: str) -> int:
    return len(source.splitlines())


def class_lines(source: str) -> dict[str, int]:
    """Each class of ``source`` (nested ones too, by qualified name) and its lines, ``class`` to its last line."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, ast.ClassDef) and child.end_lineno is not None:
                name = f"{prefix}{child.name}"
                found[name] = child.end_lineno - child.lineno + 1
            visit(child, f"{name}." if name != prefix else prefix)

    visit(ast.parse(source), "")
    return found


def sources() -> dict[str, str]:
    return {str(path.relative_to(PACKAGE.parent)): path.read_text() for path in sorted(PACKAGE.rglob("*.py"))}


def test_the_counts_are_of_lines_and_of_each_class() -> None:
    source = "class A:\n    x = 1\n\n    class B:\n        y = 2\n\n\ndef f():\n    class C:\n        pass\n"
    assert module_lines(source) == 10
    assert class_lines(source) == {"A": 5, "A.B": 2, "C": 2}


def test_no_module_is_over_600_lines() -> None:
    over = {path: lines for path, source in sources().items() if (lines := module_lines(source)) > MAX_MODULE_LINES}
    assert over == {}


def test_no_class_is_over_300_lines() -> None:
    over = {
        f"{path}::{name}": lines
        for path, source in sources().items()
        for name, lines in class_lines(source).items()
        if lines > MAX_CLASS_LINES
    }
    assert over == {}
