"""Every cell citation in notebooks/CLAIMS.md still names the cell it cites (notebooks/claims_check.py)."""

from __future__ import annotations

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
    # the same table with one citation pointing one cell too far: the check must catch it and say where it is now
    table = (ROOT / "notebooks" / "CLAIMS.md").read_text(encoding="utf-8")
    good = "01 [17] §5 The executor throws — `def exploding_stream(model, context, options):`"
    assert good in table
    moved = table.replace(good, good.replace("[17]", "[19]"), 1)
    (tmp_path / "CLAIMS.md").write_text(moved, encoding="utf-8")
    result = run("--table", str(tmp_path / "CLAIMS.md"))
    assert result.returncode == 1
    assert result.stdout.count("\n") == 1  # that one citation, no other
    assert ": 01 [19] §5 The executor throws — `def exploding_stream(" in result.stdout
    assert "cell has no such line; now: 01 [19] §5" in result.stdout


def test_cite_prints_a_citation_the_check_accepts() -> None:
    result = run("--cite", "03", "14")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("03 [14] §2 What the history keeps")
