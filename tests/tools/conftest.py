"""Makes ``bash_helpers`` importable under ``--import-mode=importlib`` (it could move to ``tests/support``), and
removes the ``pi-bash-*.log`` / ``pi-python-*.log`` full-output files each test leaves in the temp directory."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture(autouse=True)
def _remove_full_output_files() -> Iterator[None]:
    tmp = Path(tempfile.gettempdir())
    patterns = ("pi-bash-*.log", "pi-python-*.log")
    before = {path for pattern in patterns for path in tmp.glob(pattern)}
    yield
    for path in {path for pattern in patterns for path in tmp.glob(pattern)} - before:
        path.unlink(missing_ok=True)
