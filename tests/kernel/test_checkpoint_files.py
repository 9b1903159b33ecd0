"""A run's checkpoint of files (``pi_notebook.kernel._checkpoint_files``), filled by the real ``write``, ``edit`` and
``bash`` tools through their journal: what each file held before the first change, what the run left, the byte cap,
and giving it back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pi_notebook.ai import AbortController
from pi_notebook.kernel._checkpoint import Checkpoint
from pi_notebook.kernel._checkpoint_files import CheckpointBudget, FileCheckpoint, file_stamp, restore_file
from pi_notebook.notebook._rewind_plan import RewindReceipt, plan, shown_path
from pi_notebook.tools import FileToolError, bash_tool, edit_tool, write_tool
from pi_notebook.tools._file_journal import file_journal


def key(path: Path) -> str:
    """How the checkpoint keys a file: its real path."""
    return os.path.realpath(path)


async def call(tool_name: str, cwd: Path, **args: object) -> None:
    tool = {"write": write_tool, "edit": edit_tool, "bash": bash_tool}[tool_name](cwd)
    await tool.execute("call-1", args, AbortController().signal, lambda _: None)


async def test_write_and_edit_record_the_content_before_their_first_change_and_what_they_left(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    checkpoint = FileCheckpoint(CheckpointBudget(1_000_000))
    file_journal.set(checkpoint)
    await call("edit", tmp_path, path="notes.txt", edits=[{"oldText": "two", "newText": "TWO"}])
    await call("write", tmp_path, path="notes.txt", content="replaced\n")
    await call("write", tmp_path, path="new/deep/data.csv", content="a,b\n")
    notes = checkpoint.files[key(tmp_path / "notes.txt")]
    assert notes.content == b"one\ntwo\n"  # the first change's "before", not the second's
    assert notes.after is not None and notes.after == file_stamp(str(tmp_path / "notes.txt"))
    assert notes.after[0] == len(b"replaced\n")
    data = checkpoint.files[key(tmp_path / "new/deep/data.csv")]
    assert data.content is None and not data.existed
    assert data.made == str(tmp_path / "new")  # the outermost folder the tool created
    assert checkpoint.bytes_held == len(b"one\ntwo\n")


async def test_restoring_gives_the_bytes_back_and_removes_what_the_run_created_with_its_empty_folders(
    tmp_path: Path,
) -> None:
    (tmp_path / "keep").mkdir()
    (tmp_path / "notes.txt").write_bytes(b"caf\xc3\xa9 \xff raw\r\n")  # not UTF-8, CRLF: bytes come back as they were
    checkpoint = FileCheckpoint(CheckpointBudget(1_000_000))
    file_journal.set(checkpoint)
    await call("write", tmp_path, path="notes.txt", content="new")
    await call("write", tmp_path, path="made/inner/x.txt", content="x")
    await call("write", tmp_path, path="keep/y.txt", content="y")
    outcomes = [restore_file(entry) for entry in checkpoint.files.values()]
    assert outcomes == ["restored", "removed", "removed"]
    assert (tmp_path / "notes.txt").read_bytes() == b"caf\xc3\xa9 \xff raw\r\n"
    assert not (tmp_path / "made").exists()
    assert (tmp_path / "keep").is_dir()  # it was there before: only folders the tool made go


async def test_a_file_past_the_runs_byte_cap_is_recorded_as_too_large_never_half_kept(tmp_path: Path) -> None:
    (tmp_path / "small.txt").write_text("s" * 10)
    (tmp_path / "big.bin").write_bytes(b"b" * 100)
    checkpoint = FileCheckpoint(CheckpointBudget(50))
    file_journal.set(checkpoint)
    await call("write", tmp_path, path="small.txt", content="changed")
    await call("write", tmp_path, path="big.bin", content="changed")
    big = checkpoint.files[key(tmp_path / "big.bin")]
    assert big.content is None and big.too_large == 100 and big.existed
    assert checkpoint.budget.used == 10


async def test_a_failed_edit_records_nothing_as_changed(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("one\n")
    checkpoint = FileCheckpoint(CheckpointBudget(1_000_000))
    file_journal.set(checkpoint)
    with pytest.raises(FileToolError, match="Could not find"):
        await call("edit", tmp_path, path="notes.txt", edits=[{"oldText": "absent", "newText": "x"}])
    assert checkpoint.files == {}  # the edit failed before it wrote: nothing to take back


async def test_bash_commands_are_recorded_as_untracked(tmp_path: Path) -> None:
    checkpoint = FileCheckpoint(CheckpointBudget(1_000_000))
    file_journal.set(checkpoint)
    await call("bash", tmp_path, command="echo hi > made-by-bash.txt")
    assert checkpoint.untracked_calls == [("bash", "echo hi > made-by-bash.txt")]
    assert checkpoint.files == {}


async def test_without_a_journal_the_tools_record_nothing(tmp_path: Path) -> None:
    file_journal.set(None)
    await call("write", tmp_path, path="a.txt", content="a")
    assert (tmp_path / "a.txt").read_text() == "a"


async def test_a_file_the_user_replaced_with_a_folder_is_kept_or_named_never_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("before")
    checkpoint = Checkpoint(1, None, CheckpointBudget(1_000_000))
    checkpoint.activate()
    await call("write", tmp_path, path="out.txt", content="by the agent")
    (tmp_path / "out.txt").unlink()
    (tmp_path / "out.txt").mkdir()  # the user made a folder of that name since
    merged = plan([checkpoint])
    assert [c.line() for c in merged.conflicts(None)] == [
        f"file `{shown_path(key(tmp_path / 'out.txt'))}`: changed since the run"
    ]
    kept = RewindReceipt([1])
    merged.restore_files(kept, overwrite=False)
    assert kept.kept == [f"file `{shown_path(key(tmp_path / 'out.txt'))}`"] and (tmp_path / "out.txt").is_dir()
    overwritten = RewindReceipt([1])
    merged.restore_files(overwritten, overwrite=True)
    [line] = overwritten.not_restored
    assert line.endswith(": Is a directory") and (tmp_path / "out.txt").is_dir()
