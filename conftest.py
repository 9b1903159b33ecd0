"""Loaded by every pytest run of this repository (tests/ and the nbval notebooks): the notebook's default session
saving is off (``PI_NOTEBOOK_SESSIONS__DIR=none``; kernels started by tests inherit it), so no test writes into the
real home and no notebook sees another's saved sessions (``%load_ext`` would greet it with an extra line that nbval
compares); nor does a kernel start the MCP servers of the developer's own ``~/.pi_notebook/mcp.json``. Tests of
saving point the variable at their own temporary folder. The quickstart's real-model cells make paid calls only when
``PI_PAID_EXAMPLES`` is not ``0``: the test run sets ``0`` unless it is already set, so a CI with ``OPENAI_API_KEY``
in its environment makes no paid calls by default; and then the loopback guard (``tests/support/loopback_guard.py``,
loaded here) fails any test whose process reaches past 127.0.0.1/::1."""

from __future__ import annotations

import os

import pytest

os.environ["PI_NOTEBOOK_SESSIONS__DIR"] = "none"
os.environ["PI_NOTEBOOK_MCP_CONFIG"] = "none"  # not the developer's ~/.pi_notebook/mcp.json; tests name their own
os.environ.setdefault("PI_PAID_EXAMPLES", "0")  # not PI_NOTEBOOK_*: those names are settings

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
