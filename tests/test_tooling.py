"""The code passes the project's linters and strict type checker (run as part of the test command)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(600)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_lint_passes() -> None:
    result = run("ruff", "check", ".")  # the notebooks too (see per-file-ignores in pyproject.toml)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_applied() -> None:
    result = run("ruff", "format", "--check", "pi_notebook", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_passes() -> None:
    result = run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr
