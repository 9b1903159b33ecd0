"""One protocol source: the run states, widget operations and control-comm messages are defined once in Python
(``pi_notebook/notebook/widget/_protocol.py``); the TypeScript of the run widget (``js/run-view/src/protocol.ts``)
and of the JupyterLab extension (``labextension/src/control.ts``) declares the same unions and operations. This test
reads the TypeScript and fails when a name or a field is on one side only."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest

from pi_notebook.notebook._run import Run
from pi_notebook.notebook.widget import _protocol as protocol
from pi_notebook.notebook.widget._view import TranscriptWidget

ROOT = Path(__file__).resolve().parents[1]
RUN_VIEW = ROOT / "js" / "run-view" / "src" / "protocol.ts"
CONTROL = ROOT / "labextension" / "src" / "control.ts"
LAB_INDEX = ROOT / "labextension" / "src" / "index.ts"


def ts_union(source: str, name: str) -> set[str]:
    """The string literals of ``export type <name> = 'a' | "b" | ...;``."""
    match = re.search(rf"export type {name}\s*=\s*([^;]+);", source)
    assert match is not None, f"no 'export type {name}' union"
    body = match[1]
    literals = re.findall(r"""(['"])(.*?)\1""", body)
    leftover = re.sub(r"""(['"]).*?\1|\|""", "", body).strip()
    assert not leftover, f"{name} is not a union of string literals: {body!r}"
    return {value for _, value in literals}


def ts_interfaces(source: str) -> dict[str, dict[str, str]]:
    """``interface Name { field?: type; ... }`` as ``{Name: {field: type}}`` (one field per line)."""
    found = {}
    for name, body in re.findall(r"export interface (\w+) \{(.*?)\n\}", source, re.S):
        fields = re.findall(r"^\s+(\w+)\??: ([^;]+);", body, re.M)
        found[name] = dict(fields)
    return found


def literals(alias: Any) -> set[str]:
    return set(get_args(alias))


@pytest.mark.parametrize(
    ("path", "name", "alias"),
    [
        (RUN_VIEW, "RunStatus", protocol.RunStatus),
        (RUN_VIEW, "OpName", protocol.OpName),
        (RUN_VIEW, "BatchType", protocol.BatchType),
        (RUN_VIEW, "WidgetRequest", protocol.WidgetRequest),
        (CONTROL, "RunStatus", protocol.RunStatus),
        (CONTROL, "ActiveStatus", protocol.ActiveStatus),
        (CONTROL, "ControlAction", protocol.ControlAction),
        (CONTROL, "ControlMessageType", protocol.ControlMessageType),
    ],
)
def test_each_typescript_union_is_the_python_one(path: Path, name: str, alias: Any) -> None:
    assert ts_union(path.read_text(), name) == literals(alias), f"{path.name}: {name} differs from _protocol.py"


def test_the_toolbar_active_states_are_the_protocols() -> None:
    match = re.search(r"ACTIVE_STATES = new Set<string>\(\[(.*?)\]", CONTROL.read_text(), re.S)
    assert match is not None
    assert set(re.findall(r"'([^']+)'", match[1])) == protocol.ACTIVE_STATUSES


def test_each_operation_has_the_same_fields_on_both_sides() -> None:
    interfaces = ts_interfaces(RUN_VIEW.read_text())
    python_ops: dict[str, set[str]] = {}
    for op_type in protocol.OP_TYPES:
        fields = set(get_type_hints(op_type))
        for op in get_args(get_type_hints(op_type)["op"]):
            python_ops[op] = fields
    assert set(python_ops) == literals(protocol.OpName)
    ts_ops: dict[str, set[str]] = {}
    for declared in interfaces.values():
        if "op" in declared:
            for op in re.findall(r'"([^"]+)"', declared["op"]):
                ts_ops[op] = set(declared)
    assert ts_ops == python_ops
    union = re.search(r"export type Op\s*=\s*([^;]+);", RUN_VIEW.read_text())
    assert union is not None
    assert {name.strip() for name in union[1].split("|") if name.strip()} == {t.__name__ for t in protocol.OP_TYPES}


def test_the_tool_panels_tail_is_the_same_number_on_both_sides() -> None:
    match = re.search(r"export const TOOL_TAIL_CHARS = ([\d_]+);", RUN_VIEW.read_text())
    assert match is not None
    assert int(match[1].replace("_", "")) == protocol.TOOL_TAIL_CHARS


def test_the_widget_traits_are_the_pythons() -> None:
    traits = set(ts_interfaces(RUN_VIEW.read_text())["Traits"])
    python = set(TranscriptWidget.class_own_traits(sync=True))
    assert traits == python


def test_the_session_tree_items_have_the_same_fields_on_both_sides() -> None:
    assert set(ts_interfaces(RUN_VIEW.read_text())["TreeItem"]) == set(get_type_hints(protocol.TreeItem))


def test_the_run_state_fields_are_what_the_toolbar_reads() -> None:
    fields = set(ts_interfaces(CONTROL.read_text())["IRunState"])
    state = set(get_type_hints(Run.state)["return"].__annotations__)
    assert state <= fields and fields - state == {"type", "now", "reply"}


def test_the_checker_sees_a_state_added_on_one_side_only() -> None:
    source = RUN_VIEW.read_text().replace('| "error";', '| "error"\n  | "paused";')
    assert ts_union(source, "RunStatus") != literals(protocol.RunStatus)


def ts_constant(source: str, name: str) -> str:
    """The value of ``const <name> = '...';`` or ``const <name> = /.../;`` (a regular expression's source)."""
    match = re.search(rf"""const {name} = (?:(['"])(.*?)\1|/(.*?)/);""", source)
    assert match is not None, f"no 'const {name}'"
    return match[2] if match[2] is not None else match[3]


def test_the_lab_extension_finds_the_run_widgets_stop_button_and_run_number_by_our_classes() -> None:
    """The CSS-class handshake: the labextension catches clicks on the Stop button of a run view and reads the run
    number from its class; the classes the kernel gives are defined once (``_protocol``)."""
    source = LAB_INDEX.read_text()
    assert ts_constant(source, "RUN_STOP_CLASS") == protocol.STOP_CLASS
    assert ts_constant(source, "RUN_VIEW_CLASS") == protocol.VIEW_CLASS
    number = re.compile(ts_constant(source, "RUN_NUMBER"))
    match = number.match(protocol.run_class(42))
    assert match is not None and match[1] == "42"
    assert number.match(protocol.VIEW_CLASS) is None and number.match(protocol.STOP_CLASS) is None


CELLS = ROOT / "labextension" / "src" / "cells.ts"


@pytest.mark.parametrize(
    ("name", "alias"),
    [
        ("CellOp", protocol.CellOp),
        ("CellError", protocol.CellError),
        ("CellType", protocol.CellType),
        ("CellAction", protocol.CellAction),
    ],
)
def test_the_cell_unions_are_the_pythons(name: str, alias: Any) -> None:
    assert ts_union(CELLS.read_text(), name) == literals(alias), f"cells.ts: {name} differs from _cell_protocol.py"


def test_each_cells_message_has_the_same_fields_on_both_sides() -> None:
    interfaces = ts_interfaces(CELLS.read_text())
    assert set(protocol.CELL_MESSAGES) <= set(interfaces), "a cells message has no TypeScript interface"
    for name, message in protocol.CELL_MESSAGES.items():
        assert set(interfaces[name]) == set(get_type_hints(message)), f"{name} differs from its Python TypedDict"


def test_each_cells_request_is_in_the_typescript_union_with_its_op() -> None:
    source = CELLS.read_text()
    union = re.search(r"export type CellsRequest\s*=\s*([^;]+);", source)
    assert union is not None
    names = {name.strip() for name in union[1].split("|") if name.strip()}
    requests = {name for name in protocol.CELL_MESSAGES if name.endswith("Request")}
    assert names == requests
    interfaces = ts_interfaces(source)
    ops = {re.sub(r"['\"]", "", interfaces[name]["op"]) for name in requests}
    assert ops == literals(protocol.CellOp)


@pytest.mark.parametrize("name", ["AGENT_TAG", "PROTECTED_TAG", "METADATA_KEY"])
def test_the_tags_are_the_same_on_both_sides(name: str) -> None:
    match = re.search(rf"export const {name} = '([^']+)';", CELLS.read_text())
    assert match is not None and match[1] == getattr(protocol, name)


def test_the_lab_extension_knows_a_run_outputs_static_copy_by_the_kernels_marker() -> None:
    from pi_notebook.notebook.widget._display import STATIC_MARKER

    source = (ROOT / "labextension" / "src" / "staticCopy.ts").read_text()
    assert ts_constant(source, "STATIC_MARKER") == STATIC_MARKER
