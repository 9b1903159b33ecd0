"""Where the notebook's sessions go on a shared server, in real kernels: a home that cannot be written
(``/dev/null``, as service accounts have; a read-only file system, as a pod's can be) makes ``%load_ext`` say so
in one line, and runs work in memory with nothing failing at each message; ``sessions.dir`` naming
``$JUPYTERHUB_USER`` gives each hub user a private folder on a shared volume, and the files it writes say whose
they are."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_harness import Kernel

pytestmark = pytest.mark.timeout(120)

RUN = """
from pi_notebook.notebook import get_session
run = %pi hello
report = await run
print(run.status.status, [label for label in run.labels if label == "session_write_failed"], get_session().store)
"""
HINT = "runs are kept in memory only (set PI_NOTEBOOK_SESSIONS__DIR to a writable, persistent folder)"


def environment(**values: str) -> dict[str, str]:
    env = {
        key: value for key, value in os.environ.items() if key not in ("PI_NOTEBOOK_SESSIONS__DIR", "JUPYTERHUB_USER")
    }
    return {**env, **values}


@pytest.fixture
def kernel_of(request: pytest.FixtureRequest) -> Iterator[list[Kernel]]:
    kernels: list[Kernel] = []
    yield kernels
    for kernel in kernels:
        kernel.shutdown()


def test_a_home_that_is_not_a_folder_is_said_once_and_runs_work_in_memory(kernel_of: list[Kernel]) -> None:
    kernel = Kernel(env=environment(HOME="/dev/null"))
    kernel_of.append(kernel)
    load = kernel.run("%load_ext pi_notebook").text  # a line the nbval plugin leaves out (it depends on the machine)
    assert load == (
        "pi: sessions are not saved: /dev/null/.pi_notebook/sessions is not writable (/dev/null is not a folder); "
        f"{HINT}"
    )
    assert kernel.run(RUN).stdout.splitlines()[-1] == "settled [] None"  # no store: no failing writes
    out = kernel.run("%pi sessions").stdout
    assert out.startswith("pi: sessions are not saved: /dev/null/.pi_notebook/sessions is not writable")


def _unshare_works() -> bool:
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


def test_a_home_on_a_read_only_file_system_is_said_once(
    kernel_of: list[Kernel], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not _unshare_works():
        pytest.skip("needs a private mount namespace (unshare -m, as root) to mount the kernel's home read-only")
    home = tmp_path / "home"
    home.mkdir()
    spec = tmp_path / "kernels" / "read-only-home"
    spec.mkdir(parents=True)
    script = (
        'mount --bind "$HOME" "$HOME" && mount -o remount,bind,ro "$HOME" && exec "$0" -m ipykernel_launcher -f "$1"'
    )
    argv = ["unshare", "-m", "--", "sh", "-c", script, sys.executable, "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "read-only home", "language": "python"})
    )
    monkeypatch.setenv("JUPYTER_PATH", f"{tmp_path}{os.pathsep}{os.environ.get('JUPYTER_PATH', '')}")
    kernel = Kernel(env=environment(HOME=str(home)), kernel_name="read-only-home")
    kernel_of.append(kernel)
    load = kernel.run("%load_ext pi_notebook").text  # a line the nbval plugin leaves out (it depends on the machine)
    assert (
        load
        == f"pi: sessions are not saved: {home}/.pi_notebook/sessions is not writable (read-only file system); {HINT}"
    )
    assert kernel.run(RUN).stdout.splitlines()[-1] == "settled [] None"
    assert list(home.iterdir()) == []


def test_a_sessions_dir_naming_the_hub_user_gives_each_user_a_private_folder(
    kernel_of: list[Kernel], tmp_path: Path
) -> None:
    volume = tmp_path / "volume"
    kernel = Kernel(env=environment(PI_NOTEBOOK_SESSIONS__DIR=f"{volume}/$JUPYTERHUB_USER", JUPYTERHUB_USER="alice"))
    kernel_of.append(kernel)
    assert kernel.run("%load_ext pi_notebook").text == ""
    kernel.run(RUN)
    [folder] = (volume / "alice").iterdir()
    [file] = folder.iterdir()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert json.loads(file.read_text().splitlines()[0])["user"] == "alice"
    assert "1 saved session(s)" in kernel.run("%pi sessions").stdout
