"""One protocol source: the run states, widget operations, control-comm messages and the names both sides use (CSS
classes, cell tags) are defined once in Python (``pi_notebook/notebook/widget/_protocol.py``); the TypeScript of the
run widget (``js/run-view/src/protocol.ts``) and of the JupyterLab extension (``labextension/src/protocol.ts``,
``labextension/src/cellProtocol.ts``) declares the same unions, operations and constants, and no other TypeScript
file spells those names. This test reads the TypeScript and fails when a name, a field or a value is on one side
only, or spelled outside the protocol files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest

from pi_notebook.kernel import KERNEL
from pi_notebook.notebook._control_comm import TARGET
from pi_notebook.notebook._run import Run
from pi_notebook.notebook.widget import _protocol as protocol
from pi_notebook.notebook.widget._display import STATIC_MARKER
from pi_notebook.notebook.widget._view import TranscriptWidget

ROOT = Path(__file__).resolve().parents[1]
RUN_VIEW = ROOT / "js" / "run-view" / "src" / "protocol.ts"
CONTROL = ROOT / "labextension" / "src" / "protocol.ts"
CELLS = ROOT / "labextension" / "src" / "cellProtocol.ts"


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
    assert ts_union(CELLS.read_text(), name) == literals(alias), (
        f"cellProtocol.ts: {name} differs from _cell_protocol.py"
    )


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


def ts_constants(source: str) -> dict[str, int | str | set[str]]:
    """Every ``export const NAME = 123;``, ``= '...';`` or ``= ... [ '...', ... ] ...;`` (the set of strings in the
    brackets) of a TypeScript file; any other exported constant is an error here."""
    found: dict[str, int | str | set[str]] = {}
    for name, value in re.findall(r"^export const (\w+)\s*=\s*(.*?);$", source, re.M | re.S):
        text = re.fullmatch(r"""(['"])([^\\]*?)\1""", value)
        items = re.search(r"\[(.*?)\]", value, re.S)
        if re.fullmatch(r"\d[\d_]*", value):
            found[name] = int(value.replace("_", ""))
        elif text is not None:
            found[name] = text[2]
        elif items is not None:
            found[name] = {literal for _, literal in re.findall(r"""(['"])(.*?)\1""", items[1])}
        else:
            raise AssertionError(f"export const {name}: neither a string nor a list of strings: {value!r}")
    return found


LAB_CONSTANTS: dict[str, int | str | set[str]] = {
    "TARGET": TARGET,
    "ACTIVE_STATES": set(protocol.ACTIVE_STATUSES),
    "AGENT_TAG": protocol.AGENT_TAG,
    "PROTECTED_TAG": protocol.PROTECTED_TAG,
    "METADATA_KEY": protocol.METADATA_KEY,
    "VIEW_CLASS": protocol.VIEW_CLASS,
    "STOP_CLASS": protocol.STOP_CLASS,
    "RUN_CLASS_PREFIX": protocol.RUN_CLASS_PREFIX,
    "PROCESS_CLASS_PREFIX": protocol.PROCESS_CLASS_PREFIX,
    "APPROVE_CLASSES": set(protocol.APPROVE_CLASSES.values()),
    "STATE_CLASS": protocol.STATE_CLASS,
    "STATIC_MARKER": STATIC_MARKER,
}
"""What the extension's ``protocol.ts`` exports, as Python defines it."""


def test_each_constant_of_the_lab_protocol_is_the_pythons() -> None:
    assert ts_constants(CONTROL.read_text()) == LAB_CONSTANTS


RUN_VIEW_CONSTANTS: dict[str, Any] = {
    "STATE_CLASS": protocol.STATE_CLASS,  # the class the extension's "kernel gone" rule rewrites
    "TOOL_TAIL_CHARS": protocol.TOOL_TAIL_CHARS,  # the tool panel's tail, the same number on both sides
}
"""What the widget's ``js/run-view/src/protocol.ts`` exports, as Python defines it."""


def test_each_constant_of_the_widget_protocol_is_the_pythons() -> None:
    assert ts_constants(RUN_VIEW.read_text()) == RUN_VIEW_CONSTANTS


def ts_class_pattern(name: str) -> re.Pattern[str]:
    """``protocol.ts``'s ``const NAME = new RegExp(`...${PREFIX}...`)``, as the page compiles it."""
    found = re.search(rf"const {name} = new RegExp\(`(.*?)`\);", CONTROL.read_text())
    assert found is not None, f"protocol.ts defines no {name}"
    prefixes = {"RUN_CLASS_PREFIX": protocol.RUN_CLASS_PREFIX, "PROCESS_CLASS_PREFIX": protocol.PROCESS_CLASS_PREFIX}
    template = re.sub(r"\$\{(\w+)\}", lambda part: re.escape(prefixes[part[1]]), found[1])
    return re.compile(template.replace("\\\\", "\\"))


def test_a_run_number_class_is_the_prefix_and_digits_and_no_other_class_looks_like_one() -> None:
    assert protocol.run_class(42) == protocol.RUN_CLASS_PREFIX + "42"
    assert protocol.process_class("k-1") == protocol.PROCESS_CLASS_PREFIX + "k-1"
    number, process = ts_class_pattern("RUN_CLASS"), ts_class_pattern("PROCESS_CLASS")  # as the page reads them
    run_match, process_match = number.match(protocol.run_class(42)), process.match(protocol.process_class(KERNEL.token))
    assert run_match is not None and run_match[1] == "42"
    assert process_match is not None and process_match[1] == KERNEL.token
    others = [protocol.VIEW_CLASS, protocol.STOP_CLASS, protocol.STATE_CLASS, protocol.UNDO_CLASS]
    assert [name for name in others if number.match(name)] == []


SHARED_NAMES = [
    str(value) for value in LAB_CONSTANTS.values() if isinstance(value, str) and value.startswith("pi-")
] + sorted(protocol.APPROVE_CLASSES.values())
"""The CSS classes and cell tags both sides use (whole names and the run/process prefixes)."""
PROTOCOL_FILES = {CONTROL, CELLS, RUN_VIEW}


TOKEN = re.compile(
    r"""//[^\n]*|/\*.*?\*/"""  # a comment
    r"""|(['"`])((?:\\.|(?!\1)[^\\])*)\1"""  # a quoted or template string
    r"""|/(?![/*])((?:\\.|\[(?:\\.|[^\]\\\n])*\]|[^/\n\\\[])+)/""",  # a regular expression (or a division)
    re.S,
)


def string_literals(source: str) -> list[str]:
    """The quoted and template strings and the regular expressions of TypeScript source, comments left out. One
    pass from left to right takes each comment, string or regular expression whole, whichever starts first, so an
    apostrophe in a comment or a quote in a regular expression does not pair with a later quote (text between two
    slashes on a line counts as a regular expression: more than it is, never less)."""
    return [match[2] if match[1] else match[3] for match in TOKEN.finditer(source) if match[1] or match[3]]


def spelled_names(source: str) -> set[str]:
    """The shared names a source spells in its strings (a prefix only where a number or process would follow)."""
    found = set()
    for literal in string_literals(source):
        for name in SHARED_NAMES:
            follows = r"(?:\d|\$\{|\(|\[|$)" if name.endswith("-") else r"(?![\w-])"
            if re.search(rf"(?<![\w-]){re.escape(name)}{follows}", literal):
                found.add(name)
    return found


def frontend_sources() -> list[Path]:
    sources = [*(ROOT / "labextension" / "src").glob("*.ts"), *(ROOT / "js" / "run-view" / "src").rglob("*.ts")]
    return sorted(path for path in sources if path not in PROTOCOL_FILES)


def test_no_other_typescript_file_spells_a_class_or_tag_the_protocol_defines() -> None:
    """The names come from the protocol files, so a class renamed in Python and in ``protocol.ts`` is renamed
    everywhere the page uses it."""
    spelled = {str(path.relative_to(ROOT)): spelled_names(path.read_text()) for path in frontend_sources()}
    assert {path: names for path, names in spelled.items() if names} == {}


def test_the_spelling_check_sees_a_class_written_out() -> None:
    source = """
    // a comment naming pi-run-stop is fine
    const button = target?.closest('.pi-run-stop');
    const number = /^pi-run-(\\d+)$/;
    const live = `.pi-proc-${process}:has(.x)`;
    const header = el("div", "pi-run-header");
    """
    after_an_apostrophe = "a(); // the kernel's\nb('.pi-run-stop');"  # the quote in the comment pairs with nothing
    after_a_quote_in_a_regex = "const q = /'[^']*'/;\nc('.pi-run-stop');"
    bare_prefix = "if (name.startsWith('pi-proc-')) {}"
    assert spelled_names(after_an_apostrophe) == spelled_names(after_a_quote_in_a_regex) == {protocol.STOP_CLASS}
    assert spelled_names(bare_prefix) == {protocol.PROCESS_CLASS_PREFIX}
    assert spelled_names(source) == {protocol.STOP_CLASS, protocol.RUN_CLASS_PREFIX, protocol.PROCESS_CLASS_PREFIX}
