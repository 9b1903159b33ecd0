"""The kernel-side dependencies admit no version older than the ones the real-kernel and browser tests ran on."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

# The oldest versions the suite has run against (real kernel, nbval, JupyterLab in Chromium): issue 10 item 16.
# Lower a floor only after running those tests against the lower version.
TESTED = {
    "ipython": "8.12.3",
    "ipykernel": "7.4",
    "ipywidgets": "8.1.9",
    "anywidget": "0.11",
    "jupyter_client": "8.10",
    "jupyterlab": "4.6",
}


def _requirements() -> dict[str, list[Requirement]]:
    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"]
    groups = [project["dependencies"], *project["optional-dependencies"].values()]
    found: dict[str, list[Requirement]] = {}
    for line in (line for group in groups for line in group):
        requirement = Requirement(line)
        found.setdefault(requirement.name.replace("-", "_").lower(), []).append(requirement)
    return found


@pytest.mark.parametrize(("name", "tested"), sorted(TESTED.items()))
def test_each_floor_is_a_tested_version(name: str, tested: str) -> None:
    requirements = _requirements()[name]
    for requirement in requirements:
        floors = [Version(spec.version) for spec in requirement.specifier if spec.operator == ">="]
        assert floors, f"{requirement} has no floor"
        assert max(floors) >= Version(tested), f"{requirement} admits versions older than the tested {tested}"
