"""The run widget's front end, checked in CI: ``js/run-view`` (TypeScript) type-checks under the strict settings the
labextension uses, its tests pass (streamed markdown renders as the whole text would, cut at every position), and
the committed bundle ``pi_notebook/notebook/widget/static/run_view.js`` (with ``run_view.css``) is byte for byte
what it builds (``npm ci && npm run build``), so ``pip install`` needs no Node. See js/run-view/README.md."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "js" / "run-view"
STATIC = ROOT / "pi_notebook" / "notebook" / "widget" / "static"
BUNDLE = STATIC / "run_view.js"
NOT_SOURCE = {"node_modules", "build"}


def npm() -> str:
    found = shutil.which("npm")
    if found is None:
        raise RuntimeError("npm is missing: the run widget's build check needs Node >= 20 and npm (js/run-view)")
    return found


def run(work: Path, *command: str, timeout: float) -> str:
    env = {**os.environ, "npm_config_audit": "false", "npm_config_fund": "false", "npm_config_update_notifier": "false"}
    result = subprocess.run([npm(), *command], cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"npm {' '.join(command)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-3000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of js/run-view with its locked dependencies installed; its build writes under the copy's root."""
    root = tmp_path_factory.mktemp("run-view")
    work = root / "js" / "run-view"
    shutil.copytree(SOURCE, work, ignore=lambda folder, names: [n for n in names if n in NOT_SOURCE])
    (root / "pi_notebook" / "notebook" / "widget" / "static").mkdir(parents=True)
    run(work, "ci", "--prefer-offline", timeout=500)
    return work


@pytest.mark.timeout(600)
def test_the_committed_bundle_is_what_the_source_builds(work: Path) -> None:
    run(work, "run", "build", timeout=120)
    built = work.parents[1] / "pi_notebook" / "notebook" / "widget" / "static"
    for name in ("run_view.js", "run_view.css"):  # the stylesheet's source is js/run-view/src/run_view.css
        rebuild = f"rebuild {name}: cd js/run-view && npm ci && npm run build"
        assert (built / name).read_bytes() == (STATIC / name).read_bytes(), rebuild


@pytest.mark.timeout(600)
def test_the_source_type_checks_strictly(work: Path) -> None:
    run(work, "run", "lint", timeout=300)


@pytest.mark.timeout(900)
def test_the_front_end_tests_pass(work: Path) -> None:
    output = run(work, "test", timeout=880)
    assert "# fail 0" in output and "# pass " in output, output[-3000:]
