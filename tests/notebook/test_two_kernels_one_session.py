"""Issue 30 item 6, in two real kernels sharing one sessions folder: while kernel A appends to its session file,
kernel B's ``%pi resume`` of it is refused with a line naming A's pid, and B's own conversation goes to a file of
its own; A's file keeps one branch with every message of A's. Once A is killed (SIGKILL: the lock goes with the
process), B resumes the file at once."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from kernel_harness import Kernel

from pi_notebook.session import list_sessions, load_session, session_folder

pytestmark = pytest.mark.timeout(180)

SETUP = """
from pi_notebook.notebook import configure
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
faux = FauxProvider()
faux.set_responses([faux_assistant_message("reply {who} 1"), faux_assistant_message("reply {who} 2")])
configure(model=faux.model, stream_fn=faux.stream)
"""


@pytest.fixture
def sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PI_NOTEBOOK_SESSIONS__DIR", str(tmp_path / "sessions"))
    monkeypatch.chdir(tmp_path)  # both kernels start here: one folder of sessions
    return session_folder(tmp_path / "sessions", tmp_path)


@pytest.fixture
def kernels(sessions: Path) -> Iterator[tuple[Kernel, Kernel]]:
    first, second = Kernel(), Kernel()
    try:
        for kernel, who in ((first, "A"), (second, "B")):
            kernel.run("%load_ext pi_notebook")
            kernel.run(SETUP.format(who=who))
        yield first, second
    finally:
        first.shutdown()
        second.shutdown()


def prompt(kernel: Kernel, text: str) -> str:
    kernel.run(f"run = %pi {text}")
    return kernel.run("r = await run\nprint(run.messages[-1].content[0].text)").stdout


def test_a_second_kernel_cannot_continue_a_file_the_first_appends_to(
    kernels: tuple[Kernel, Kernel], sessions: Path
) -> None:
    a, b = kernels
    assert "reply A 1" in prompt(a, "hello from A")
    [file] = list(sessions.glob("*.jsonl"))
    pid_a = a.run("import os; print(os.getpid())").stdout.strip()

    refused = b.run("%pi resume").stdout
    assert f"{file.name} is in use by another kernel (pid {pid_a})" in refused, refused
    assert "Traceback" not in refused
    assert "reply B 1" in prompt(b, "hello from B")  # B goes on in a file of its own
    assert "reply A 2" in prompt(a, "again from A")

    loaded = load_session(file)
    texts = [m.content[0].text for m in loaded.messages]  # type: ignore[union-attr]
    assert texts == ["hello from A", "reply A 1", "again from A", "reply A 2"]
    assert loaded.problems == []
    assert len(list_sessions(sessions)) == 2

    process = a.manager.provisioner.process  # type: ignore[union-attr]
    os.kill(process.pid, signal.SIGKILL)  # no exit handler runs; the lock goes with the process
    process.wait(30)
    resumed = b.run(f"%pi resume {file}").stdout
    assert f"pi: resumed {file.name}: 4 messages" in resumed, resumed


FORK_CHILDREN = """
import multiprocessing, os
read_end, write_end = os.pipe()
forked = os.fork()
if forked == 0:  # a child the user's code forked: it lives on after the kernel, blocked on the pipe
    os.close(write_end)
    os.read(read_end, 1)
    os._exit(0)
worker = multiprocessing.get_context("fork").Process(target=os.read, args=(read_end, 1), daemon=False)
worker.start()
print(forked, worker.pid)
"""


def test_a_killed_kernel_s_forked_children_do_not_keep_its_file_locked(
    kernels: tuple[Kernel, Kernel], sessions: Path
) -> None:
    """Issue 37 item 4: children the kernel forked (``os.fork``, ``multiprocessing``) inherit the descriptor that
    holds the lock; they outlive a SIGKILLed kernel, and the lock with them (a flock belongs to the open file,
    not to the process), so ``%pi resume`` was refused naming the dead kernel."""
    a, b = kernels
    assert "reply A 1" in prompt(a, "hello from A")
    [file] = list(sessions.glob("*.jsonl"))
    children = [int(pid) for pid in a.run(FORK_CHILDREN).stdout.split()]
    try:
        process = a.manager.provisioner.process  # type: ignore[union-attr]
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
        assert all(psutil.pid_exists(pid) for pid in children)  # the children live on
        resumed = b.run(f"%pi resume {file}").stdout
        assert f"pi: resumed {file.name}: 2 messages" in resumed, resumed
        assert "reply B 1" in prompt(b, "go on from B")
        assert [m.role for m in load_session(file).messages] == ["user", "assistant"] * 2
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
