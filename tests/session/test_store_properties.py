"""Hostile cuts and corruptions of a session file: no valid entry before the damage is ever lost, and a
store that continues the damaged file adds its entries after everything that was kept."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_notebook.ai import UserMessage
from pi_notebook.ai.messages import text_of
from pi_notebook.session import SessionStore, load_session

ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=12)  # lone surrogates included
GARBAGE = st.binary(max_size=40).map(lambda data: b"\xff" + data.replace(b"\n", b""))  # never JSON


def texts_of(path: Path) -> list[str]:
    return [text_of(message) for message in load_session(path).messages]  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(ANY_TEXT, min_size=1, max_size=6), data=st.data())
def test_no_entry_before_a_cut_or_a_corrupt_line_is_lost(texts: list[str], data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "s.jsonl"
        with SessionStore(path) as store:
            for text in texts:
                store.append_message(UserMessage(content=text))
        lines = path.read_bytes().splitlines(keepends=True)  # the header, then one line per text
        last = lines.pop()
        cut = data.draw(st.integers(0, len(last)), label="cut")
        kept = list(texts)
        if cut < len(last) - 1:  # only cutting the newline leaves the entry whole
            kept.pop()
        corrupt = data.draw(st.sets(st.integers(1, len(lines) - 1), max_size=2) if len(lines) > 1 else st.just(set()))
        for index in sorted(corrupt, reverse=True):
            lines[index] = data.draw(GARBAGE, label="garbage") + b"\n"
            del kept[index - 1]
        inserted = data.draw(st.lists(st.tuples(st.integers(1, len(lines)), GARBAGE), max_size=2), label="inserted")
        for position, garbage in inserted:
            lines.insert(position, garbage + b"\n")
        path.write_bytes(b"".join(lines) + last[:cut])
        loaded = load_session(path)
        assert [text_of(m) for m in loaded.messages] == kept  # type: ignore[arg-type]
        assert loaded.skipped_lines == len(corrupt) + len(inserted) + (0 < cut < len(last) - 1)
        with SessionStore(path) as store:
            store.append_message(UserMessage(content="after"))
        assert texts_of(path) == [*kept, "after"]


WRITER = textwrap.dedent(
    """
    import os, sys
    from pi_notebook.ai import UserMessage
    from pi_notebook.session import SessionStore

    bulk = "x" * 100_000  # large lines: a kill is more likely to land inside one write
    for path in sys.stdin:  # one round per line: a forked writer (imports once) that the test kills
        pid = os.fork()
        if pid == 0:
            store = SessionStore(path.strip())
            for index in range(200):
                store.append_message(UserMessage(content=f"m{index} {bulk}"))
                print(os.getpid(), index, flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        print("reaped", flush=True)
    """
)


def kill_while_writing(writer: subprocess.Popen[str], path: Path, target: int) -> int:
    """Start a writer on ``path``, SIGKILL it once it reported entry ``target``; the last entry it reported."""
    assert writer.stdin is not None and writer.stdout is not None
    writer.stdin.write(f"{path}\n")
    writer.stdin.flush()
    reported, killed = -1, False
    for line in writer.stdout:  # printed after the entry's write returned
        if line.strip() == "reaped":
            return reported
        pid, index = map(int, line.split())
        if not killed:
            reported = index
            if index >= target:
                os.kill(pid, signal.SIGKILL)
                killed = True
    raise AssertionError("the writer process ended")


@pytest.mark.timeout(180)  # 8 forked writers of 100 KB lines: slow on a loaded 2-core machine
def test_writers_killed_mid_write_leave_files_that_load_and_continue(tmp_path: Path) -> None:
    chooser = random.Random(1234)
    command = [sys.executable, "-c", WRITER]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as writer:
        try:
            for round_ in range(8):
                path = tmp_path / f"killed{round_}.jsonl"
                reported = kill_while_writing(writer, path, chooser.randint(0, 100))
                loaded = load_session(path)
                names = [text_of(m).split()[0] for m in loaded.messages]  # type: ignore[arg-type]
                assert names == [f"m{i}" for i in range(len(names))] and len(names) > reported
                assert all(problem.skipped for problem in loaded.problems) and loaded.skipped_lines <= 1
                with SessionStore(path) as store:
                    store.append_message(UserMessage(content="after"))
                resumed = load_session(path)
                assert [text_of(m).split()[0] for m in resumed.messages] == [*names, "after"]  # type: ignore[arg-type]
                assert resumed.skipped_lines == loaded.skipped_lines
        finally:
            writer.kill()
