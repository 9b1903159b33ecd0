"""``tests/fixtures/pi-traces/differences.json`` is what Pi 0.83 does: its script, run again on Pi 0.83 itself
(Node 22 and ``@earendil-works/*`` 0.83 in ``$PI083_DIR/node_modules``, default ``~/.cache/pi-notebook/pi083``,
where ``bash tests/pi083/up.sh`` installs them; without them the test skips, saying so), prints the committed
recording. The teaching notebooks check their statements about Pi against that file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

PI = Path(os.environ.get("PI083_DIR", "~/.cache/pi-notebook/pi083")).expanduser() / "node_modules"
NODE = PI / ".bin" / "node"
TRACES = Path(__file__).resolve().parent.parent / "fixtures" / "pi-traces"


def test_the_recording_is_what_pi_083_does(tmp_path: Path) -> None:
    if not (NODE.exists() and (PI / "@earendil-works" / "pi-coding-agent").is_dir()):
        pytest.skip(
            f"Pi 0.83 (Node 22 + pi-coding-agent) is not installed in {PI}: run `bash tests/pi083/up.sh` "
            "(npm, ~1 min) or set PI083_DIR to a folder whose node_modules holds it"
        )
    shutil.copy(TRACES / "differences.mjs", tmp_path)  # Node resolves Pi's packages from the script's folder
    (tmp_path / "node_modules").symlink_to(PI, target_is_directory=True)
    done = subprocess.run(
        [str(NODE), "differences.mjs"], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads((TRACES / "differences.json").read_text())
