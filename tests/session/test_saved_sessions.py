"""Saved sessions: Pi's folder and file naming, lazy files, listing, ``AgentSession.resume``, ``sessions.dir``."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pi_notebook.ai import TextContent, UserMessage
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
from pi_notebook.session import (
    AgentSession,
    SessionBusyError,
    SessionEvent,
    SessionFileError,
    SessionInUseError,
    SessionStore,
    Settings,
    list_sessions,
    load_session,
    session_folder,
)


def test_the_folder_of_a_working_directory_is_named_as_pi_names_it(tmp_path: Path) -> None:
    # Pi 0.83 getDefaultSessionDirPath: `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`
    assert session_folder(tmp_path / "root", "/home/me/my proj") == tmp_path / "root" / "--home-me-my proj--"
    assert session_folder("~/x", "/a").parent == Path("~/x").expanduser()


def test_the_folders_a_store_creates_are_the_users_only(tmp_path: Path) -> None:
    """Issue 30 item 14: a session's folders are 0700 (they were 0755), as its file is 0600, whatever the umask
    leaves open; a folder that already exists keeps its mode."""
    existing = tmp_path / "home"
    existing.mkdir(mode=0o755)
    existing.chmod(0o755)
    old = os.umask(0o022)
    try:
        root = existing / "sessions"
        store = SessionStore.new(session_folder(root, "/home/me/proj"), lazy=True)
        store.append_message(UserMessage(content=[TextContent(text="hi")]))
        store.close()
    finally:
        os.umask(old)
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in (root, store.path.parent, store.path)}
    assert modes == {"sessions": 0o700, "--home-me-proj--": 0o700, store.path.name: 0o600}
    assert stat.S_IMODE(existing.stat().st_mode) == 0o755  # a folder that existed is left alone


def test_a_new_file_is_named_with_time_and_session_id_and_a_lazy_one_appears_with_its_first_entry(
    tmp_path: Path,
) -> None:
    store = SessionStore.new(tmp_path, lazy=True, header={"notebook": "analysis.ipynb"})
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_" + store.session_id + r"\.jsonl", store.path.name)
    assert not store.path.exists() and not store.created
    store.append_message(UserMessage(content=[TextContent(text="hi")]))
    store.close()
    header = json.loads(store.path.read_text().splitlines()[0])
    assert header["id"] == store.session_id and header["notebook"] == "analysis.ipynb" and header["version"] == 3
    assert len(load_session(store.path).messages) == 1


def test_a_lazy_store_that_records_nothing_leaves_no_file(tmp_path: Path) -> None:
    SessionStore.new(tmp_path, lazy=True).close()
    assert list(tmp_path.iterdir()) == []


async def test_list_sessions_newest_first_with_prompt_count_and_model(tmp_path: Path) -> None:
    for prompt in ("older question", "newer question"):
        faux = FauxProvider()
        faux.set_responses([faux_assistant_message("answer")])
        session = AgentSession(model=faux.model, stream_fn=faux.stream, store=SessionStore.new(tmp_path))
        await session.prompt(prompt)
        session.dispose()
    (tmp_path / "notes.jsonl").write_text("not a session\n")
    newer, older = list_sessions(tmp_path)
    assert (newer.first_prompt, older.first_prompt) == ("newer question", "older question")
    assert newer.message_count == 2 and newer.model == f"{faux.model.provider}:{faux.model.id}"
    assert newer.modified >= older.modified and newer.last_role == "assistant" and newer.last_stop_reason == "stop"
    assert list_sessions(tmp_path / "missing") == []


async def test_resume_replaces_the_transcript_and_appends_to_that_file(tmp_path: Path) -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("one"), faux_assistant_message("two")])
    first = AgentSession(model=faux.model, stream_fn=faux.stream, store=SessionStore.new(tmp_path))
    await first.prompt("first")
    path = first.store.path  # type: ignore[union-attr]
    first.dispose()
    other = SessionStore.new(tmp_path, lazy=True)
    session = AgentSession(model=faux.model, stream_fn=faux.stream, store=other)
    loaded = session.resume(path)
    assert [m.role for m in session.messages] == ["user", "assistant"] and not loaded.problems
    await session.prompt("second")
    assert len(load_session(path).messages) == 4
    assert not other.path.exists()  # the replaced store was closed before it wrote anything


async def test_resume_refuses_while_busy_a_missing_file_and_a_foreign_file(tmp_path: Path) -> None:
    faux = FauxProvider()
    session = AgentSession(model=faux.model, stream_fn=faux.stream)
    with pytest.raises(FileNotFoundError, match="no session file"):
        session.resume(tmp_path / "nope.jsonl")
    (tmp_path / "x.jsonl").write_text('{"type":"message","id":"a","parentId":null}\n')
    with pytest.raises(SessionFileError, match="no session header"):
        session.resume(tmp_path / "x.jsonl")
    assert session.store is None and session.messages == []
    refused: list[SessionBusyError] = []

    def resume_while_busy(event: SessionEvent) -> None:
        if event.type == "agent_start":  # inside an operation
            try:
                session.resume(tmp_path / "x.jsonl")
            except SessionBusyError as error:
                refused.append(error)

    session.subscribe(resume_while_busy)
    faux.set_responses([faux_assistant_message("answer")])
    await session.prompt("hi")
    assert len(refused) == 1 and session.store is None


def test_sessions_dir_defaults_under_home_follows_the_environment_and_none_turns_saving_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PI_NOTEBOOK_SESSIONS__DIR", raising=False)
    assert Settings().sessions.dir == "~/.pi_notebook/sessions"
    monkeypatch.setenv("PI_NOTEBOOK_SESSIONS__DIR", "/elsewhere")
    assert Settings().sessions.dir == "/elsewhere"
    monkeypatch.setenv("PI_NOTEBOOK_SESSIONS__DIR", "none")
    assert Settings().sessions.dir is None and Settings.load().sessions.dir is None
    assert Settings(sessions={"dir": "/x"}).updated(sessions={"dir": "none"}).sessions.dir is None


def test_settings_load_leaves_the_packages_other_variables_alone() -> None:
    """``PI_NOTEBOOK_POLICY`` (and the other variables that are not settings) once made ``Settings.load()`` fail:
    ``settings.policy: Extra inputs are not permitted``."""
    environ = {
        "PI_NOTEBOOK_POLICY": "/etc/pi_notebook/site.toml",
        "PI_NOTEBOOK_CASSETTE_MODE": "none",
        "PI_NOTEBOOK_MCP_CONFIG": "none",
        "PI_NOTEBOOK_ACTIVITY_INTERVAL": "30",
        "PI_NOTEBOOK_RETRY__MAX_RETRIES": "5",
    }
    assert Settings.load(environ=environ).retry.max_retries == 5


def test_a_file_is_continued_by_one_store_at_a_time(tmp_path: Path) -> None:
    """Issue 30 item 6 (the two-kernel case is tests/notebook/test_two_kernels_one_session.py): the store that
    appends to a file holds its lock; another store of it is refused until the first closes."""
    first = SessionStore.new(tmp_path)
    first.append_message(UserMessage(content=[TextContent(text="hi")]))
    with pytest.raises(SessionInUseError, match=r"is in use by another (kernel|process)"):
        SessionStore(first.path)
    first.close()
    with SessionStore(first.path) as second:
        assert second.loaded is not None and len(second.loaded.messages) == 1


C_FORKED_HOLDER = """
import ctypes, os, sys
from pi_notebook.ai import TextContent, UserMessage
from pi_notebook.session import SessionStore
store = SessionStore.new(sys.argv[1])
store.append_message(UserMessage(content=[TextContent(text="hi")]))
read_end, write_end = os.pipe()
child = ctypes.CDLL(None).fork()  # libc's fork: Python's at-fork hooks do not run, so the child keeps the lock
if child == 0:
    os.closerange(0, 3)  # not the test's pipes: it reads until they close
    os.read(read_end, 1)
    os._exit(0)
print(store.path, child, flush=True)
os._exit(0)  # as a SIGKILL: no close, no exit handler
"""


def test_a_lock_left_by_a_child_of_an_ended_process_names_the_child(tmp_path: Path) -> None:
    """Issue 37 item 4: a forked child lets go of the lock (os.register_at_fork; the kernel test is
    tests/notebook/test_two_kernels_one_session.py); one forked behind Python's back keeps it, and the refusal
    names that child, not the ended process that took the lock."""
    done = subprocess.run(
        [sys.executable, "-c", C_FORKED_HOLDER, str(tmp_path)], capture_output=True, text=True, check=True, timeout=60
    )
    path, child = done.stdout.split()
    try:
        with pytest.raises(SessionInUseError) as refused:
            SessionStore(path)
        assert f"in use by pid {child}, started by a kernel that has ended (pid " in str(refused.value)
    finally:
        os.kill(int(child), signal.SIGKILL)
