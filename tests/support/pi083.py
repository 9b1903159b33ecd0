"""Pi 0.83 beside us: Node 22 and ``@earendil-works/pi-coding-agent`` 0.83 in ``$PI083_DIR/node_modules`` (default
``~/.cache/pi-notebook/pi083``, where ``bash tests/pi083/up.sh`` installs them). Without them a test that needs them
skips, saying how to install them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

PI = Path(os.environ.get("PI083_DIR", "~/.cache/pi-notebook/pi083")).expanduser() / "node_modules"
NODE = PI / ".bin" / "node"
CORE = PI / "@earendil-works" / "pi-coding-agent" / "dist" / "core"
MANAGER = CORE / "session-manager.js"
SCRIPTS = Path(__file__).resolve().parent.parent / "pi083"


def require_pi() -> None:
    if not (NODE.exists() and MANAGER.exists()):
        pytest.skip(
            f"Pi 0.83 (Node 22 + pi-coding-agent) is not installed in {PI}: run `bash tests/pi083/up.sh` "
            "(npm, ~1 min) or set PI083_DIR to a folder whose node_modules holds it"
        )


def pi_context(path: Path) -> dict[str, Any]:
    """Where Pi 0.83's own ``SessionManager`` continues the session file at ``path`` (``tests/pi083/context.mjs``):
    ``leafId``, ``branch`` (``[id, type]`` root first) and ``messages`` (``[role, text]`` of what it would send)."""
    require_pi()
    done = subprocess.run(
        [str(NODE), str(SCRIPTS / "context.mjs"), str(CORE), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def run_with_pi(script: str, *args: str) -> str:
    """Run ``script`` (an ES module) with Pi 0.83's Node; ``process.argv[1]`` is the session manager's URL, then
    ``args``. Returns what it printed."""
    require_pi()
    done = subprocess.run(
        [str(NODE), "--input-type=module", "-e", script, MANAGER.as_uri(), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
