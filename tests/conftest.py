"""Shared test setup: every ``async def`` test runs on asyncio (anyio's pytest plugin, ``anyio_mode = "auto"``), and
the fixtures many modules use, defined once:

- ``server``: a loopback fault server (``pi_notebook.testing``) for one test; with ``wire_apis.APIS`` and
  ``wire_apis.model_for`` (tests/support) a test runs against each wire API.
- ``dummy_comm``: new widgets talk to a recording dummy comm (ipywidgets' test double) for one test.
- ``kernel``: a real kernel (jupyter_client, ``tests/support/kernel_harness.py``) with ``%load_ext pi_notebook``,
  shared by the tests of one module. A module that needs more set up overrides it with a fixture of the same
  name that takes this one (``def kernel(kernel): kernel.run(SETUP); return kernel``).
- ``fresh_kernel``: a kernel of its own for one test, nothing loaded: for tests that kill it or measure it.
- ``frontend``: the module's ``kernel`` driven as JupyterLab would (``control_frontend.Frontend``: cells, comms,
  subshells).

The ``pi-bash-*.log`` / ``pi-python-*.log`` full-output files a test leaves in the temp directory are removed. The
network guard (no test reaches past loopback) is ``tests/support/loopback_guard.py``, a plugin the repository's
``conftest.py`` loads for every run.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pi_notebook.testing import FaultServer

if TYPE_CHECKING:
    from control_frontend import Frontend
    from kernel_harness import Kernel


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _remove_full_output_files() -> Iterator[None]:
    tmp = Path(tempfile.gettempdir())
    patterns = ("pi-bash-*.log", "pi-python-*.log")
    before = {path for pattern in patterns for path in tmp.glob(pattern)}
    yield
    for path in {path for pattern in patterns for path in tmp.glob(pattern)} - before:
        path.unlink(missing_ok=True)


@pytest.fixture
def server() -> Iterator[FaultServer]:
    """A fault server on 127.0.0.1 for one test; closed (its threads joined) after it. Sync, so sync and async
    tests share it."""
    with FaultServer() as running:
        yield running


@pytest.fixture
def dummy_comm(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """New widgets talk to a dummy comm (``tests/support/dummy_comm.py``, ipywidgets' test double) for one test;
    returns the list of what they sent. A module whose every test needs it says
    ``pytestmark = pytest.mark.usefixtures("dummy_comm")``."""
    import dummy_comm as dummy

    return dummy.install(monkeypatch.setattr)


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    from kernel_harness import Kernel

    kernel = Kernel()
    try:
        kernel.run("%load_ext pi_notebook")  # (the load's own deadline, kernel_harness.LOAD_TIMEOUT_S)
        yield kernel
    finally:
        kernel.shutdown()


@pytest.fixture
def fresh_kernel() -> Iterator[Kernel]:
    from kernel_harness import Kernel

    kernel = Kernel()
    try:
        yield kernel
    finally:
        kernel.shutdown()


@pytest.fixture
def frontend(kernel: Kernel) -> Frontend:
    from control_frontend import Frontend

    return Frontend(kernel)
