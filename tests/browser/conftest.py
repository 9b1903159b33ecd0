"""The JupyterLab the browser tests share: one per test module, serving this checkout's extension. A module whose
tests each start kernels adds ``pytest.mark.usefixtures("one_kernel_at_a_time")``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lab_harness import JupyterLab, lab_with_extension


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    yield from lab_with_extension(tmp_path_factory)


@pytest.fixture
def one_kernel_at_a_time(lab: JupyterLab) -> Iterator[None]:
    """Each test's kernels are shut down after it (two machines' worth of kernels would slow the next test)."""
    yield
    lab.shutdown_kernels()
