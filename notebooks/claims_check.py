"""Check that the cell citations of ``notebooks/CLAIMS.md`` still point at the cells they name.

    python notebooks/claims_check.py            # check every citation; exit 1 on any mismatch
    python notebooks/claims_check.py --cite 02 14   # print the citation of cell 14 of notebook 02
    python notebooks/claims_check.py --table FILE   # check another copy of the table

A citation in the table's *where* column is ``NN [i] HEADING — `LINE``` for a code cell, or ``NN [i] HEADING (prose)``
for a markdown cell: notebook ``NN-….ipynb``, cell index ``i`` (0-based), the section heading the cell sits under
(``## 3. Title`` is written ``§3 Title``, backticks dropped) and, for a code cell, a line of the cell (``--cite`` picks
the first one no other cell of the notebook has). A trailing ``…`` means "starts with". The check reads the notebooks
with nbformat (cells only, outputs are not needed), so it runs in a fraction of a second; ``tests/test_claims_table.py``
runs it. When cells are added, ``--cite`` gives the new citation to paste.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
TABLE = HERE / "CLAIMS.md"
CITATION = re.compile(r"^(\d\d) \[(\d+)\] (.+?)(?: — `(.+)`| \(prose\))$")
HEADING_WIDTH, LINE_WIDTH = 30, 46


@cache
def cells(notebook: str) -> list[tuple[str, str]]:
    """(cell type, source) of every cell of notebook ``NN``."""
    (path,) = HERE.glob(f"{notebook}-*.ipynb")
    return [(cell.cell_type, cell.source) for cell in nbformat.read(path, as_version=4).cells]


def heading(notebook: str, index: int) -> str:
    """The heading cell ``index`` opens with, else the last markdown heading above it, as the table writes it."""
    found = ""
    for i, (kind, source) in enumerate(cells(notebook)[: index + 1]):
        lines = source.splitlines()[: 1 if i == index else None] if kind == "markdown" else []
        for line in (line for line in lines if line.startswith("#")):
            found = re.sub(r"^(\d+)\. ", r"§\1 ", line.lstrip("#").strip().replace("`", ""))
    return found


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def matches(quoted: str, text: str) -> bool:
    return text.startswith(quoted[:-1]) if quoted.endswith("…") else text == quoted


def other_lines(notebook: str, index: int) -> list[str]:
    return [line.strip() for i, (_, src) in enumerate(cells(notebook)) if i != index for line in src.splitlines()]


def cite(notebook: str, index: int) -> str:
    """The citation of cell ``index`` of notebook ``NN``."""
    kind, source = cells(notebook)[index]
    head = clip(heading(notebook, index), HEADING_WIDTH)
    if kind == "markdown":
        return f"{notebook} [{index}] {head} (prose)"
    others = other_lines(notebook, index)
    lines = [clip(line.strip(), LINE_WIDTH) for line in source.splitlines() if line.strip()[:1] not in ("", "#")]
    own = [quoted for quoted in lines if not any(matches(quoted, other) for other in others)]
    return f"{notebook} [{index}] {head} — `{(own or lines)[0]}`"


def problem(notebook: str, index: int, head: str, quoted: str | None) -> str | None:
    """Why a citation no longer holds, or None."""
    if index >= len(cells(notebook)):
        return "no such cell"
    kind, source = cells(notebook)[index]
    if not matches(head, heading(notebook, index)):
        return f"sits under {heading(notebook, index)!r}"
    if quoted is None:
        return None if kind == "markdown" else "is a code cell, cited as prose"
    if kind != "code" or not any(matches(quoted, line.strip()) for line in source.splitlines()):
        return "has no such line"
    return None


def mismatches(table: str) -> list[str]:
    """One line per citation that no longer holds, per part of a *where* cell that is neither a citation nor a note
    (``*...*``), and per ``NN [i]`` in a note that names no cell."""
    found = []
    for row in (line for line in table.splitlines() if re.match(r"^\| \d{3}-\d", line)):
        claim, where = row.split(" | ")[0].strip("| "), row.split(" | ")[-1].rstrip(" |")
        for part in where.split("<br>"):
            if match := CITATION.match(part):
                notebook, index, head, quoted = match[1], int(match[2]), match[3], match[4]
                if (why := problem(notebook, index, head, quoted)) is not None:
                    now = cite(notebook, min(index, len(cells(notebook)) - 1))
                    found.append(f"{claim}: {part}: cell {why}; now: {now}")
            elif not (part.startswith("*") and part.endswith("*")) and part != "—":
                found.append(f"{claim}: {part}: neither a citation nor a note")
            else:
                for notebook, index in re.findall(r"\b(0\d) \[(\d+)\]", part):
                    if int(index) >= len(cells(notebook)):
                        found.append(f"{claim}: the note names {notebook} [{index}]: no such cell")
    return found


def main(argv: list[str]) -> int:
    if argv[:1] == ["--cite"]:
        print(cite(argv[1], int(argv[2])))
        return 0
    table = Path(argv[1]) if argv[:1] == ["--table"] else TABLE
    found = mismatches(table.read_text(encoding="utf-8"))
    print("\n".join(found) or f"every citation in {table.name} holds")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
