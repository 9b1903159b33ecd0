"""Makes ``bash_helpers`` importable under ``--import-mode=importlib`` (it could move to ``tests/support``), and
removes the ``pi-bash-*.log`` full-output files each test leaves in the temp directory."""

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
    before = set(tmp.glob("pi-bash-*.log"))
    yield
    for path in set(tmp.glob("pi-bash-*.log")) - before:
        path.unlink(missing_ok=True)
