"""The JupyterLab extension's build, checked in CI: the bundle committed in ``pi_notebook/labextension`` is
byte for byte what ``labextension/`` builds with npm (``npm ci && npm run build``), it names the same package
and version, the wheel installs it where JupyterLab looks, and its shortcut clashes with no JupyterLab
default. See labextension/README.md."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

import pi_notebook

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "labextension"
BUNDLE = ROOT / "pi_notebook" / "labextension"
NOT_SOURCE = {"node_modules", "lib", "tsconfig.tsbuildinfo"}


def npm() -> str:
    found = shutil.which("npm")
    if found is None:
        raise RuntimeError(
            "npm is missing: the labextension build check needs Node >= 20.19 and npm (see labextension/README.md)"
        )
    return found


def tree(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def package(path: Path) -> dict[str, Any]:
    return dict(json.loads((path / "package.json").read_text()))


@pytest.mark.timeout(600)
def test_the_committed_bundle_is_what_the_source_builds(tmp_path: Path) -> None:
    work = tmp_path / "labextension"
    shutil.copytree(SOURCE, work, ignore=lambda folder, names: [n for n in names if n in NOT_SOURCE])
    (tmp_path / "pi_notebook").mkdir()
    env = {**os.environ, "npm_config_audit": "false", "npm_config_fund": "false", "npm_config_update_notifier": "false"}
    for command in (["ci", "--prefer-offline"], ["run", "build"]):
        result = subprocess.run([npm(), *command], cwd=work, env=env, capture_output=True, text=True, timeout=500)
        assert result.returncode == 0, (
            f"npm {' '.join(command)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
    built, committed = tree(tmp_path / "pi_notebook" / "labextension"), tree(BUNDLE)
    assert sorted(built) == sorted(committed), "rebuild the bundle: cd labextension && npm ci && npm run build"
    changed = [name for name in built if built[name] != committed[name]]
    assert changed == [], f"{changed} differ from a fresh build: cd labextension && npm ci && npm run build"


def test_the_bundle_names_the_source_package_and_version() -> None:
    source, bundle = package(SOURCE), package(BUNDLE)
    assert bundle["name"] == source["name"] == "pi-notebook"
    assert bundle["version"] == source["version"] == pi_notebook.__version__
    assert pi_notebook._jupyter_labextension_paths() == [{"src": "labextension", "dest": source["name"]}]
    build = bundle["jupyterlab"]["_build"]
    assert (BUNDLE / build["load"]).is_file()
    assert build["extension"] == "./extension"
    schema = json.loads((SOURCE / "schema" / "plugin.json").read_text())
    assert json.loads((BUNDLE / "schemas" / "pi-notebook" / "plugin.json").read_text()) == schema


def _normalise(keys: str, platform: str) -> tuple[frozenset[str], str]:
    """``"Accel ."`` on ``linux`` -> ({"Ctrl"}, "."): Lumino's Accel is Cmd on macOS and Ctrl elsewhere."""
    *modifiers, key = keys.split()
    accel = "Cmd" if platform == "mac" else "Ctrl"
    return frozenset(accel if m == "Accel" else m for m in modifiers), key.upper()


def _bindings(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return list(schema.get("jupyter.lab.shortcuts", []))


def test_the_stop_shortcut_clashes_with_no_jupyterlab_default() -> None:
    ours = _bindings(json.loads((SOURCE / "schema" / "plugin.json").read_text()))
    assert [(b["command"], b["keys"], b["selector"]) for b in ours] == [
        ("pi-notebook:stop-agent-run", ["Accel ."], "body")
    ]
    schemas = Path(sys.prefix) / "share" / "jupyter" / "lab" / "schemas"
    files = sorted(schemas.rglob("*.json"))
    defaults = [b for path in files for b in _bindings(json.loads(path.read_text()))]
    assert len(defaults) > 100, f"JupyterLab's default shortcuts were not found under {schemas}"
    for platform in ("linux", "windows", "mac"):
        mine = _normalise(ours[0]["keys"][0], platform)
        # any default whose first keystroke is ours would clash (a chord starting with it too), whatever its
        # selector: the notebook panel is inside most selectors
        clashes = [
            b for b in defaults if b["keys"] and b["keys"][0].strip() and _normalise(b["keys"][0], platform) == mine
        ]
        assert clashes == [], f"{ours[0]['keys'][0]} on {platform} clashes with {clashes}"


@pytest.mark.timeout(300)
def test_the_wheel_installs_the_bundle_where_jupyterlab_looks(tmp_path: Path) -> None:
    # no build isolation: the build backend (hatchling, a test dependency) is installed, and the loopback guard
    # refuses the index a fresh build environment would download it from
    build = ["wheel", "--no-deps", "--no-build-isolation", "--quiet", "--wheel-dir", str(tmp_path), str(ROOT)]
    result = subprocess.run(
        [sys.executable, "-m", "pip", *build],
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (wheel,) = tmp_path.glob("pi_notebook-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    data = f"pi_notebook-{pi_notebook.__version__}.data/data/share/jupyter/labextensions/pi-notebook"
    for name in tree(BUNDLE):
        assert f"{data}/{name}" in names
        assert f"pi_notebook/labextension/{name}" in names  # for `jupyter labextension develop`
    assert f"{data}/install.json" in names
    assert not any("node_modules" in name or name.startswith("labextension/") for name in names)


RUN_VIEW = ROOT / "js" / "run-view"
REPO_PATH = re.compile(
    r"(?<![\w./-])((?:pi_notebook|tests|docs|labextension|js)/[\w./-]*\w\.(?:py|ts|md|json|css|js))(?!\w)"
)
HERE_PATH = re.compile(r"(?<![\w./-])(\./[\w./-]*\w\.(?:ts|css|json))(?!\w)")
PACKAGE_PATH = re.compile(r"(?<![\w./-])((?:src|test)/[\w./-]*\w\.(?:ts|css|json))(?!\w)")


def named_paths(text: str, folder: Path, package: Path) -> list[Path]:
    """The files a source or README in ``folder`` of ``package`` (``labextension``, ``js/run-view``) names: repository
    paths from the root, ``./x.ts`` from ``folder``, ``src/...`` and ``test/...`` from ``package``."""
    return (
        [ROOT / path for path in REPO_PATH.findall(text)]
        + [folder / path for path in HERE_PATH.findall(text)]
        + [package / path for path in PACKAGE_PATH.findall(text)]
    )


def test_every_path_the_frontend_sources_and_readmes_spell_out_exists() -> None:
    """Comments and READMEs of the TypeScript say where the other side of each message is: a file that moved
    leaves them pointing nowhere. Checked: the paths spelled with folders (see :func:`named_paths`); a bare file
    name (``control.ts``) or a dotted module name is not read."""
    missing = []
    for package in (SOURCE, RUN_VIEW):
        for path in sorted([package / "README.md", *(package / "src").rglob("*.ts"), *package.glob("test/*.ts")]):
            for named in named_paths(path.read_text(), path.parent, package):
                if not named.exists():
                    missing.append(f"{path.relative_to(ROOT)} names {named.relative_to(ROOT)}")
    assert missing == []


def test_the_path_check_sees_a_moved_file() -> None:
    text = "see `pi_notebook/notebook/_view.py` and ./cells.ts, then `src/gone.ts`; not src/x.tsx"
    named = [str(path.relative_to(ROOT)) for path in named_paths(text, SOURCE / "src", SOURCE)]
    assert named == ["pi_notebook/notebook/_view.py", "labextension/src/cells.ts", "labextension/src/gone.ts"]
