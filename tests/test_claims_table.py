"""Every cell citation in notebooks/CLAIMS.md still names the cell it cites (notebooks/claims_check.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "notebooks" / "claims_check.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHECK), *args], capture_output=True, text=True, timeout=60, check=False)


def test_every_citation_names_its_cell() -> None:
    result = run()
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "every citation in CLAIMS.md holds"


def test_a_moved_cell_is_reported(tmp_path: Path) -> None:
    # the same table with one citation pointing two cells too far: the check must catch it and say where it is now
    table = (ROOT / "notebooks" / "CLAIMS.md").read_text(encoding="utf-8")
    good = re.search(r"01 \[(\d+)\] §5 The executor throws — `def exploding_stream\(model, context, options\):`", table)
    assert good is not None
    index = int(good[1])
    moved = good[0].replace(f"[{index}]", f"[{index + 2}]")
    (tmp_path / "CLAIMS.md").write_text(table.replace(good[0], moved, 1), encoding="utf-8")
    result = run("--table", str(tmp_path / "CLAIMS.md"))
    assert result.returncode == 1
    assert result.stdout.count("\n") == 1  # that one citation, no other
    assert f"{moved}: cell has no such line; now: 01 [{index + 2}] §5" in result.stdout


def test_cite_prints_a_citation_the_check_accepts() -> None:
    result = run("--cite", "03", "14")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("03 [14] §2 What the history keeps")


def test_a_citation_that_does_not_parse_is_reported(tmp_path: Path) -> None:
    # a prose citation that lost its "(prose)" would otherwise be skipped as if it were a note
    table = (ROOT / "notebooks" / "CLAIMS.md").read_text(encoding="utf-8")
    cited = "02 [2] §1 Cancelling vs waiting (prose)"
    assert cited in table
    (tmp_path / "CLAIMS.md").write_text(table.replace(cited, "02 [2] §1 Cancelling vs waiting", 1), encoding="utf-8")
    result = run("--table", str(tmp_path / "CLAIMS.md"))
    assert result.returncode == 1
    assert "02 [2] §1 Cancelling vs waiting: neither a citation nor a note" in result.stdout
