"""Check ``notebooks/CLAIMS.md``: every proof it cites is asserted by its cell and printed in the saved output.

    python notebooks/claims_check.py                 # check the table against the saved notebooks; exit 1 on a problem
    python notebooks/claims_check.py --cite 02 14    # print the citations of cell 14 of notebook 02
    python notebooks/claims_check.py --table FILE --notebooks DIR   # check another copy of the table or notebooks

A part of a row's *where* column (parts are separated by ``<br>``) is one of:

- a **proof**, ``NN [i] HEADING ✓ CLAIM``: code cell ``i`` (0-based) of notebook ``NN-….ipynb``, which sits under the
  section heading ``HEADING`` (``## 3. Title`` is written ``§3 Title``, backticks dropped, clipped with ``…``), calls
  ``check("CLAIM", ...)`` — an assertion that prints ``✓ CLAIM`` when it holds and fails the cell when it does not —
  and whose saved output has that line and no error;
- a **prose** citation, ``NN [i] HEADING (prose)``: markdown cell ``i``;
- a note in italics, ``*...*``; ``NN [i]`` in a note must name a cell that exists.

Notebook 01's table *Where the chapters, Pi 0.83 and this port differ* is checked too: each row's last column names
the cells (``NN [i]``) that check it, each a code cell that calls ``check()`` and whose saved output prints every
``✓`` line and holds no error.

A row whose status is ``shown`` (the port does what the chapter says) or ``differs`` (it does not, and the cells
prove what it does) needs at least one proof; a ``prose``, ``n/a``, ``missing`` or ``wrong`` row has none.
The *Counts* table must match the rows. So the check fails when a cited cell moved, stopped asserting its claim, or was
saved without printing it; nbval (which re-runs every cell) fails when the assertion itself no longer holds.
``tests/test_claims_table.py`` runs it. ``--cite`` prints the citations to paste for a cell.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import nbformat
from IPython.core.inputtransformer2 import TransformerManager

HERE = Path(__file__).resolve().parent
TABLE = HERE / "CLAIMS.md"
PROOF = re.compile(r"^(\d\d) \[(\d+)\] (.+?) ✓ (.+)$")
PROSE = re.compile(r"^(\d\d) \[(\d+)\] (.+?) \(prose\)$")
ROW = re.compile(r"^\| (\d{3}-\d+[a-z]?) \|")
STATUSES = ("shown", "differs", "prose", "missing", "wrong", "n/a")
PROVEN = ("shown", "differs")
"""The statuses whose rows cite proofs (and must cite one)."""
HEADING_WIDTH = 30
DIFFERENCES = ("01", "## Where the chapters, Pi 0.83 and this port differ")
"""The notebook and heading of the table of differences."""
TOP_LEVEL_AWAIT = 0x2000  # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


@dataclass(frozen=True)
class Cell:
    kind: str
    source: str
    printed: tuple[str, ...]
    """The lines the cell's saved stream outputs hold."""
    failed: bool
    """The saved outputs hold an error."""


class Notebooks:
    """The saved teaching notebooks of a folder, read with nbformat (outputs included)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @cache  # noqa: B019 - one instance per check run
    def cells(self, notebook: str) -> list[Cell]:
        (path,) = self.folder.glob(f"{notebook}-*.ipynb")
        return [_cell(cell) for cell in nbformat.read(path, as_version=4).cells]

    def heading(self, notebook: str, index: int) -> str:
        """The heading cell ``index`` opens with, else the last markdown heading above it, as the table writes it."""
        found = ""
        for i, cell in enumerate(self.cells(notebook)[: index + 1]):
            lines = cell.source.splitlines()[: 1 if i == index else None] if cell.kind == "markdown" else []
            for line in (line for line in lines if line.startswith("#")):
                found = re.sub(r"^(\d+)\. ", r"§\1 ", line.lstrip("#").strip().replace("`", ""))
        return found

    def cite(self, notebook: str, index: int) -> list[str]:
        """The citations of cell ``index``: one per claim it checks, or the prose citation of a markdown cell."""
        cell = self.cells(notebook)[index]
        head = _clip(self.heading(notebook, index), HEADING_WIDTH)
        if cell.kind == "markdown":
            return [f"{notebook} [{index}] {head} (prose)"]
        return [f"{notebook} [{index}] {head} ✓ {claim}" for claim in checked_claims(cell.source)]

    def problem(self, notebook: str, index: int, head: str, claim: str | None) -> str | None:
        """Why a citation does not hold, or None."""
        if index >= len(self.cells(notebook)):
            return "no such cell"
        cell = self.cells(notebook)[index]
        if not _matches(head, self.heading(notebook, index)):
            return f"sits under {self.heading(notebook, index)!r}"
        if claim is None:
            return None if cell.kind == "markdown" else "is a code cell, cited as prose"
        if cell.kind != "code":
            return "is a markdown cell, cited as a proof"
        if claim not in checked_claims(cell.source):
            return "does not check this claim (no check() with it as its first argument)"
        if cell.failed:
            return "was saved with an error"
        if f"✓ {claim}" not in cell.printed:
            return "was saved without printing it"
        return None


def _cell(cell: nbformat.NotebookNode) -> Cell:
    outputs = cell.get("outputs", [])
    printed = [line for out in outputs if out.output_type == "stream" for line in out.text.splitlines()]
    failed = any(out.output_type == "error" for out in outputs)
    return Cell(cell.cell_type, cell.source, tuple(printed), failed)


def checked_claims(source: str) -> list[str]:
    """The claims a code cell passes to ``check()`` as a string literal, in order (magics and top-level ``await``
    are understood as IPython understands them)."""
    try:
        python = TransformerManager().transform_cell(source)  # type: ignore[no-untyped-call]
        tree = compile(python, "<cell>", "exec", ast.PyCF_ONLY_AST | TOP_LEVEL_AWAIT)
    except SyntaxError:
        return []
    claims = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "check" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                claims.append((node.lineno, node.col_offset, first.value))
    return [claim for *_, claim in sorted(claims)]


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _matches(quoted: str, text: str) -> bool:
    return text.startswith(quoted[:-1]) if quoted.endswith("…") else text == quoted


def rows(table: str) -> list[tuple[str, str, str]]:
    """(id, status, where) of every claim row."""
    found = []
    for line in table.splitlines():
        if ROW.match(line):
            cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
            found.append((cells[0], cells[-2], cells[-1]))
    return found


def mismatches(table: str, notebooks: Notebooks) -> list[str]:
    """One line per problem: a citation that does not hold, a part that is neither citation nor note, a note naming
    a cell that does not exist, a row whose status and proofs disagree, counts that do not add up."""
    found = []
    for claim, status, where in rows(table):
        proofs = 0
        if status not in STATUSES:
            found.append(f"{claim}: status {status!r} is not one of {', '.join(STATUSES)}")
        for part in where.split("<br>"):
            proof, prose = PROOF.match(part), PROSE.match(part)
            if proof or prose:
                match = proof or prose
                assert match is not None
                notebook, index, head = match[1], int(match[2]), match[3]
                claim_text = proof[4] if proof else None
                proofs += proof is not None
                why = notebooks.problem(notebook, index, head, claim_text)
                if why is not None:
                    found.append(f"{claim}: {part}: cell {why}; {_now(notebooks, notebook, index, claim_text)}")
            elif not (part.startswith("*") and part.endswith("*")) and part != "—":
                found.append(f"{claim}: {part}: neither a proof, a prose citation nor a note")
            else:
                for notebook, index in re.findall(r"\b(0\d) \[(\d+)\]", part):
                    if int(index) >= len(notebooks.cells(notebook)):
                        found.append(f"{claim}: the note names {notebook} [{index}]: no such cell")
        if status in PROVEN and not proofs:
            found.append(f"{claim}: {status}, but no proof is cited")
        elif status not in PROVEN and proofs:
            found.append(f"{claim}: {status}, yet a proof is cited (then it is shown or differs)")
    return found + count_mismatches(table)


def differences_mismatches(notebooks: Notebooks) -> list[str]:
    """One line per row of notebook 01's table of differences that cites no cell, or a cell that is not a saved
    check (see the module docstring)."""
    notebook, heading = DIFFERENCES
    cells = notebooks.cells(notebook)
    tables = [cell.source for cell in cells if cell.kind == "markdown" and cell.source.startswith(heading)]
    if len(tables) != 1:
        return [f"{notebook}: {len(tables)} markdown cells open with {heading!r}; the table of differences needs one"]
    found = []
    for line in tables[0].splitlines()[1:]:
        if not line.startswith("| ") or line.startswith(("| where |", "|---")):
            continue
        row, cited = line.split(" | ")[0].removeprefix("| "), line.rstrip(" |").rsplit(" | ", 1)[-1]
        refs = re.findall(r"\b(0\d) \[(\d+)\]", cited)
        if not refs:
            found.append(f"{notebook} differences, {row!r}: cites no cell")
        for cited_notebook, index in refs:
            why = _not_a_saved_check(notebooks, cited_notebook, int(index))
            if why:
                found.append(f"{notebook} differences, {row!r}: {cited_notebook} [{index}] {why}")
    return found


def _not_a_saved_check(notebooks: Notebooks, notebook: str, index: int) -> str | None:
    if index >= len(notebooks.cells(notebook)):
        return "is no cell"
    cell = notebooks.cells(notebook)[index]
    claims = checked_claims(cell.source) if cell.kind == "code" else []
    if not claims:
        return "is not a cell that checks a claim"
    if cell.failed or any(f"✓ {claim}" not in cell.printed for claim in claims):
        return "was saved with an error or without a ✓ line"
    return None


def _now(notebooks: Notebooks, notebook: str, index: int, claim: str | None) -> str:
    """Where the claim is checked now, if some cell of the notebook checks it."""
    if claim is None:
        return f"now: {notebooks.cite(notebook, min(index, len(notebooks.cells(notebook)) - 1))[0]}"
    for i, cell in enumerate(notebooks.cells(notebook)):
        if cell.kind == "code" and claim in checked_claims(cell.source):
            if i == index:
                return "execute the notebook again (python notebooks/execute.py) and look at why"
            return f"now: {notebook} [{i}] {_clip(notebooks.heading(notebook, i), HEADING_WIDTH)} ✓ {claim}"
    return "no cell of the notebook checks it"


def count_mismatches(table: str) -> list[str]:
    """The *Counts* table against the rows: per chapter and status, and the total."""
    counted: Counter[tuple[str, str]] = Counter()
    for claim, status, _ in rows(table):
        counted[(claim[:3], status)] += 1
        counted[("all", status)] += 1
    found, seen = [], set()
    for line in table.splitlines():
        match = re.match(rf"^\| \**(\d{{3}}|all)\** \|((?: \**\d+\** \|){{{len(STATUSES) + 1}}})$", line)
        if match is None:
            continue
        chapter, numbers = match[1], [int(n) for n in re.findall(r"\d+", match[2])]
        seen.add(chapter)
        expected = [sum(counted[(chapter, status)] for status in STATUSES), *(counted[(chapter, s)] for s in STATUSES)]
        if numbers != expected:
            found.append(f"counts of {chapter}: the table says {numbers}, the rows give {expected}")
    for chapter in sorted({chapter for chapter, _ in counted} - seen):
        found.append(f"counts of {chapter}: no line in the Counts table (claims, then one column per status)")
    return found


def main(argv: list[str]) -> int:
    options = dict(zip(argv[::2], argv[1::2], strict=False))
    notebooks = Notebooks(Path(options.get("--notebooks", HERE)))
    if "--cite" in argv:
        at = argv.index("--cite")
        print("\n".join(notebooks.cite(argv[at + 1], int(argv[at + 2]))))
        return 0
    table = Path(options.get("--table", TABLE))
    found = mismatches(table.read_text(encoding="utf-8"), notebooks) + differences_mismatches(notebooks)
    print("\n".join(found) or f"every citation in {table.name} holds")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
