"""notebooks/CLAIMS.md holds (notebooks/claims_check.py): every proof it cites is a ``check()`` of its cell whose ``✓``
line is in the saved output, and the check fails when a cell moves, stops checking its claim, or is saved without it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
CHECK = NOTEBOOKS / "claims_check.py"
TABLE = (NOTEBOOKS / "CLAIMS.md").read_text(encoding="utf-8")
# A proof the table cites (row 003-24): the cell that compares our events with Pi 0.83's recorded trace.
CLAIM = "we send one model request fewer: 1, Pi 2"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHECK), *args], capture_output=True, text=True, timeout=120, check=False)


def cited_cell() -> tuple[str, int]:
    """The citation of CLAIM in the table, and the cell index it names."""
    match = re.search(rf"03 \[(\d+)\] [^<|]+ ✓ {re.escape(CLAIM)}", TABLE)
    assert match is not None
    return match[0], int(match[1])


def notebooks_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for path in NOTEBOOKS.glob("*.ipynb"):
        shutil.copy(path, folder / path.name)
    return folder


def edit_cell(folder: Path, index: int, edit: Callable[[nbformat.NotebookNode], None]) -> None:
    (path,) = folder.glob("03-*.ipynb")
    notebook = nbformat.read(path, as_version=4)
    edit(notebook.cells[index])
    nbformat.write(notebook, path)


def test_every_citation_holds() -> None:
    result = run()
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "every citation in CLAIMS.md holds"


def test_a_proof_the_saved_output_lacks_is_reported(tmp_path: Path) -> None:
    # the cell was saved without its ✓ line (as if the claim had stopped holding and the line been left out)
    citation, index = cited_cell()
    folder = notebooks_copy(tmp_path)

    def drop_line(cell: nbformat.NotebookNode) -> None:
        for output in cell.outputs:
            if output.output_type == "stream":
                output.text = output.text.replace(f"✓ {CLAIM}\n", "")

    edit_cell(folder, index, drop_line)
    result = run("--notebooks", str(folder))
    assert result.returncode == 1
    why = "cell was saved without printing it; execute the notebook again (python notebooks/execute.py) and look at why"
    unsaved = "was saved with an error or without a ✓ line"  # notebook 01's table of differences cites it too
    assert result.stdout.splitlines() == [
        f"003-23: {citation}: {why}",
        f"003-24: {citation}: {why}",
        f"01 differences, 'the abort signal at a turn boundary': 03 [{index}] {unsaved}",
    ]


def test_a_claim_the_cell_no_longer_checks_is_reported(tmp_path: Path) -> None:
    # the output still says so, but the cell no longer asserts it
    citation, index = cited_cell()
    folder = notebooks_copy(tmp_path)

    def unassert(cell: nbformat.NotebookNode) -> None:
        cell.source = cell.source.replace(f'check("{CLAIM}",', f'print("✓ {CLAIM}"),')

    edit_cell(folder, index, unassert)
    result = run("--notebooks", str(folder))
    assert result.returncode == 1
    assert f"003-24: {citation}: cell does not check this claim" in result.stdout
    assert "no cell of the notebook checks it" in result.stdout


def test_a_cell_saved_with_an_error_is_reported(tmp_path: Path) -> None:
    citation, index = cited_cell()
    folder = notebooks_copy(tmp_path)

    def fail(cell: nbformat.NotebookNode) -> None:
        cell.outputs.append(nbformat.v4.new_output("error", ename="AssertionError", evalue="✗ x", traceback=[]))

    edit_cell(folder, index, fail)
    result = run("--notebooks", str(folder))
    assert result.returncode == 1
    assert f"003-24: {citation}: cell was saved with an error" in result.stdout


def test_a_moved_cell_is_reported_with_where_it_is_now(tmp_path: Path) -> None:
    citation, index = cited_cell()
    moved = citation.replace(f"[{index}]", f"[{index + 2}]")
    (tmp_path / "CLAIMS.md").write_text(TABLE.replace(citation, moved), encoding="utf-8")
    result = run("--table", str(tmp_path / "CLAIMS.md"))
    assert result.returncode == 1
    assert f"003-24: {moved}: cell " in result.stdout
    assert f"now: {citation}" in result.stdout


def test_a_shown_row_without_a_proof_is_reported(tmp_path: Path) -> None:
    row = next(line for line in TABLE.splitlines() if line.startswith("| 003-31b |"))
    bare = re.sub(r"\| shown \| .* \|$", "| shown | *proved somewhere* |", row)
    (tmp_path / "CLAIMS.md").write_text(TABLE.replace(row, bare), encoding="utf-8")
    result = run("--table", str(tmp_path / "CLAIMS.md"))
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["003-31b: shown, but no proof is cited"]


def test_a_differs_row_without_a_proof_is_reported(tmp_path: Path) -> None:
    row = next(line for line in TABLE.splitlines() if line.startswith("| 003-54 |"))
    bare = re.sub(r"\| differs \| .* \|$", "| differs | *they multiply* |", row)
    (tmp_path / "CLAIMS.md").write_text(TABLE.replace(row, bare), encoding="utf-8")
    result = run("--table", str(tmp_path / "CLAIMS.md"))
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["003-54: differs, but no proof is cited"]


def test_counts_that_do_not_add_up_are_reported(tmp_path: Path) -> None:
    row = next(line for line in TABLE.splitlines() if line.startswith("| 000-15 |"))
    (tmp_path / "CLAIMS.md").write_text(TABLE.replace(row, row.replace("| prose |", "| wrong |")), encoding="utf-8")
    result = run("--table", str(tmp_path / "CLAIMS.md"))
    assert result.returncode == 1
    assert "counts of 000: the table says" in result.stdout
    assert "counts of all: the table says" in result.stdout


def test_a_chapter_without_its_counts_line_is_reported(tmp_path: Path) -> None:
    line = next(line for line in TABLE.splitlines() if line.startswith("| 002 | "))
    (tmp_path / "CLAIMS.md").write_text(TABLE.replace(line + "\n", ""), encoding="utf-8")
    result = run("--table", str(tmp_path / "CLAIMS.md"))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "counts of 002: no line in the Counts table (claims, then one column per status)"
    ]


def test_a_part_that_is_no_citation_is_reported(tmp_path: Path) -> None:
    # a prose citation that lost its "(prose)" would otherwise pass as if it were a note
    match = re.search(r"02 \[\d+\] §1 Cancelling vs waiting \(prose\)", TABLE)
    assert match is not None
    cited = match[0]
    bare = cited.removesuffix(" (prose)")
    (tmp_path / "CLAIMS.md").write_text(TABLE.replace(cited, bare, 1), encoding="utf-8")
    result = run("--table", str(tmp_path / "CLAIMS.md"))
    assert result.returncode == 1
    assert f"{bare}: neither a proof, a prose citation nor a note" in result.stdout


def test_cite_prints_the_citations_the_check_accepts() -> None:
    citation, index = cited_cell()
    result = run("--cite", "03", str(index))
    assert result.returncode == 0, result.stderr
    assert citation in result.stdout.splitlines()


def edit_differences(folder: Path, edit: Callable[[str], str]) -> None:
    (path,) = folder.glob("01-*.ipynb")
    notebook = nbformat.read(path, as_version=4)
    (cell,) = [cell for cell in notebook.cells if cell.source.startswith("## Where the chapters, Pi 0.83")]
    cell.source = edit(cell.source)
    nbformat.write(notebook, path)


def test_a_difference_citing_a_cell_that_checks_nothing_is_reported(tmp_path: Path) -> None:
    folder = notebooks_copy(tmp_path)
    edit_differences(folder, lambda table: table.replace("| 06 [13] |", "| 06 [12] |"))  # 06 [12] is prose
    result = run("--notebooks", str(folder))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "01 differences, 'messages still queued at `session.abort()`': 06 [12] is not a cell that checks a claim"
    ]


def test_a_difference_citing_no_cell_is_reported(tmp_path: Path) -> None:
    folder = notebooks_copy(tmp_path)
    edit_differences(folder, lambda table: table.replace("| 07 [20] |", "| notebook 07 |"))
    result = run("--notebooks", str(folder))
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["01 differences, 'do the retry layers multiply?': cites no cell"]
