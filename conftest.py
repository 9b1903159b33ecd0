"""Loaded by every pytest run of this repository (tests/ and the nbval notebooks): the notebook's default session
saving is off (``PI_NOTEBOOK_SESSIONS__DIR=none``; kernels started by tests inherit it), so no test writes into the
real home and no notebook sees another's saved sessions (``%load_ext`` would greet it with an extra line that nbval
compares); nor does a kernel start the MCP servers of the developer's own ``~/.pi_notebook/mcp.json``. Tests of
saving point the variable at their own temporary folder. The quickstart's real-model cells make paid calls only when
``PI_PAID_EXAMPLES`` is not ``0``: the test run sets ``0`` unless it is already set, so a CI with ``OPENAI_API_KEY``
in its environment makes no paid calls by default; and then the loopback guard (``tests/support/loopback_guard.py``,
loaded here) fails any test whose process reaches past 127.0.0.1/::1. Under pytest-xdist (``-n 2``) each
worker has a temp folder of its own (``TMPDIR``), so one worker's clean-up of the full-output files, or a test
listing the temp folder, never sees the other's."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ["PI_NOTEBOOK_SESSIONS__DIR"] = "none"
os.environ["PI_NOTEBOOK_MCP_CONFIG"] = "none"  # not the developer's ~/.pi_notebook/mcp.json; tests name their own
os.environ.setdefault("PI_PAID_EXAMPLES", "0")  # not PI_NOTEBOOK_*: those names are settings

_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER:  # each pytest-xdist worker (and every process it starts) gets a temp folder of its own
    _TMP = Path(tempfile.gettempdir()) / f"pi-tests-{_WORKER}-{os.getpid()}"
    _TMP.mkdir()
    os.environ["TMPDIR"] = str(_TMP)
    tempfile.tempdir = None  # read TMPDIR again

pytest_plugins = ["loopback_guard"]  # tests/support, on the pythonpath (pyproject)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A notebook's first cell also starts its kernel and imports ``pi_notebook`` (``import jsonschema`` alone costs
    ~4 s of CPU here: ``rfc3987_syntax``, installed with Jupyter, builds a parser when imported). Two notebook runs
    side by side on a loaded machine took over the 30 s per-test timeout for that cell, so each notebook's first
    cell gets 120 s; every other cell keeps 30 s."""
    seen: set[str] = set()
    for item in items:
        if type(item).__name__ == "IPyNbCell" and str(item.path) not in seen:
            seen.add(str(item.path))
            item.add_marker(pytest.mark.timeout(120))


def pytest_unconfigure(config: pytest.Config) -> None:
    if _WORKER:
        shutil.rmtree(_TMP, ignore_errors=True)
