"""Issue 30 item 10: the full-output temp logs (``pi-bash-*.log``, ``pi-python-*.log``) hold no key the result
redacts (every spelling, a key split between two chunks too), are the user's only (0600), and are deleted when the
process that wrote them (the kernel) exits. (That a session's keys reach them is in
``tests/session/test_canary_keys.py``.)"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pi_notebook.tools._output import OutputAccumulator

KEY = "sk-log-canary-0c5e97a1"


@pytest.fixture(autouse=True)
def own_tempdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The logs go to this test's folder: other processes' tests clean the shared temp directory."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


@pytest.mark.parametrize("cut", [1, 5, len(KEY) - 1])
def test_a_key_split_between_two_chunks_is_redacted_in_the_log(cut: int) -> None:
    output = OutputAccumulator(max_lines=5, max_bytes=100, secrets=[KEY])
    output.append(b"line\n" * 50)  # past the limits: the log opens
    output.append(f"key={KEY[:cut]}".encode())
    output.append(f"{KEY[cut:]} json={json.dumps(KEY + chr(10))} raw={KEY}\n".encode())
    output.finish()
    path = output.snapshot().full_output_path
    output.close()
    assert path is not None
    data = Path(path).read_bytes()
    assert KEY.encode() not in data and KEY[3:].encode() not in data
    assert data.endswith(b'key=*** json="***\\n" raw=***\n')  # the JSON spelling of the key, then its \\n
    assert data.startswith(b"line\n" * 50)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_without_keys_the_log_is_the_raw_output() -> None:
    output = OutputAccumulator(max_lines=1, max_bytes=10)
    output.append(b"\xff\xfe raw bytes\n" * 20)
    output.finish()
    path = output.snapshot().full_output_path
    output.close()
    assert path is not None and Path(path).read_bytes() == b"\xff\xfe raw bytes\n" * 20


def test_the_logs_are_deleted_when_the_process_exits(tmp_path: Path) -> None:
    code = (
        "from pi_notebook.tools._output import OutputAccumulator\n"
        "paths = []\n"
        "for prefix in ('pi-bash', 'pi-python'):\n"
        "    output = OutputAccumulator(max_lines=1, max_bytes=10, prefix=prefix)\n"
        "    output.append(b'x\\n' * 100)\n"
        "    output.finish()\n"
        "    paths.append(output.snapshot().full_output_path)\n"
        "    output.close()\n"
        "import os\n"
        "print(all(os.path.exists(p) for p in paths))\n"
        "print('\\n'.join(paths))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    existed, *paths = done.stdout.splitlines()
    assert existed == "True" and len(paths) == 2
    assert [path for path in paths if os.path.exists(path)] == []
