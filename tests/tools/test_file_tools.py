"""The file tools' own contracts beside Pi's texts (those are in ``test_file_tools_pi.py``): aborts between files
and chunks, serialised mutations, atomic replacement details, ignore rules, binary and non-UTF-8 files, the
streamed ``read`` selection, and the tools run through a real agent loop."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from file_tools_fixture import load
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_notebook.agent import AgentTool, AgentToolResult
from pi_notebook.ai import AbortController, AbortSignal, TextContent, ToolResultMessage
from pi_notebook.tools import (
    FileToolError,
    _search,
    edit_tool,
    find_tool,
    grep,
    grep_tool,
    ls_tool,
    read_only_tools,
    read_tool,
    write_tool,
)
from pi_notebook.tools._collate import collation_key
from pi_notebook.tools._common import js_to_fixed
from pi_notebook.tools._ignore import IgnoreRules, PatternSet
from pi_notebook.tools._output import format_size
from pi_notebook.tools._read_text import OffsetBeyondEnd, select_lines
from pi_notebook.tools._truncate import truncate_head


def text_of(result: AgentToolResult) -> str:
    """The result's text; every block must be text."""
    assert all(isinstance(block, TextContent) for block in result.content), result.content
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def call(tool: AgentTool, args: dict[str, Any], signal: AbortSignal | None = None) -> AgentToolResult:
    signal = signal if signal is not None else AbortController().signal
    if tool.prepare_arguments is not None:
        args = tool.prepare_arguments(args)
    return await tool.execute("call", args, signal, lambda _: None)


# -- aborts ------------------------------------------------------------------------------------------------


def _big_tree(root: Path, dirs: int = 40, files: int = 40) -> None:
    line = b"nothing to see here, just filler text for the search\n" * 400
    for d in range(dirs):
        folder = root / f"d{d:03d}"
        folder.mkdir()
        for f in range(files):
            (folder / f"f{f:03d}.txt").write_bytes(line)


def _spy(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> tuple[list[int], threading.Event]:
    """Count calls of ``module.name`` (still calling it) and signal the first one."""
    calls: list[int] = []
    first = threading.Event()
    real: Callable[..., Any] = getattr(module, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        first.set()
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls, first


async def test_abort_stops_a_grep_over_a_large_tree_between_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _big_tree(tmp_path)
    calls, started = _spy(monkeypatch, grep, "search_file")
    finished = threading.Event()
    real_grep = grep._grep

    def traced_grep(*args: Any) -> Any:
        try:
            return real_grep(*args)
        finally:
            finished.set()

    monkeypatch.setattr(grep, "_grep", traced_grep)
    controller = AbortController()
    task = asyncio.ensure_future(call(grep_tool(tmp_path), {"pattern": "needle"}, controller.signal))
    await asyncio.to_thread(started.wait, 30)
    controller.abort()
    with pytest.raises(FileToolError, match=r"^Operation aborted$") as caught:
        await task
    assert caught.value.aborted
    searched = len(calls)
    assert await asyncio.to_thread(finished.wait, 30)  # the worker thread ended too
    assert len(calls) <= searched + 1  # at most a file it had already picked was opened after the abort
    assert len(calls) < 40 * 40


async def test_abort_stops_a_find_over_a_large_tree(tmp_path: Path) -> None:
    _big_tree(tmp_path, dirs=60, files=60)
    controller = AbortController()
    controller.abort()
    with pytest.raises(FileToolError, match=r"^Operation aborted$"):
        await call(find_tool(tmp_path), {"pattern": "*.txt"}, controller.signal)


async def test_the_event_loop_keeps_running_while_grep_matches_and_a_slow_pattern_times_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.txt").write_text("a" * 40 + "b\n")  # (a|aa)+$ backtracks exponentially on this line
    monkeypatch.setattr(grep, "SEARCH_TIMEOUT_S", 0.5)
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0.005)

    ticking = asyncio.ensure_future(ticker())
    try:
        with pytest.raises(FileToolError, match=r"^Search timed out in a\.txt: the pattern is too slow"):
            await call(grep_tool(tmp_path), {"pattern": "(a|aa)+$"})
    finally:
        done.set()
        await ticking
    assert ticks >= 10  # the regex module releases the GIL: the loop ran while the search was stuck


async def test_abort_returns_at_once_while_a_slow_pattern_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.txt").write_text("a" * 40 + "b\n")
    monkeypatch.setattr(grep, "SEARCH_TIMEOUT_S", 1.0)
    entered, left = threading.Event(), threading.Event()
    real = _search.search_file  # what grep.search_file is until the test patches it

    def search_file(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        try:
            return real(*args, **kwargs)
        finally:
            left.set()

    monkeypatch.setattr(grep, "search_file", search_file)
    controller = AbortController()
    task = asyncio.ensure_future(call(grep_tool(tmp_path), {"pattern": "(a|aa)+$"}, controller.signal))
    await asyncio.to_thread(entered.wait, 30)
    controller.abort()
    with pytest.raises(FileToolError, match=r"^Operation aborted$"):
        await task
    assert not left.is_set()  # returned while the regex was still stuck (it gives up after its 1 s timeout)
    await asyncio.to_thread(left.wait, 30)


async def test_abort_stops_a_read_of_a_large_file_between_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_notebook.tools import _read_text

    (tmp_path / "big.txt").write_bytes(b"x" * 100 + b"\n" * (8 << 20))
    controller = AbortController()
    real = _read_text.read_chunks

    def chunks(file: Any, stop: Any) -> Any:
        for index, chunk in enumerate(real(file, stop)):
            if index == 1:
                controller.signal._fire("test")  # abort from the worker, between two chunks
            yield chunk

    monkeypatch.setattr("pi_notebook.tools.read.read_chunks", chunks)
    with pytest.raises(FileToolError, match=r"^Operation aborted$"):
        await call(read_tool(tmp_path), {"path": "big.txt"}, controller.signal)


async def test_cancelling_a_write_leaves_the_old_or_new_file_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("old")
    task = asyncio.ensure_future(call(write_tool(tmp_path), {"path": "f.txt", "content": "n" * (32 << 20)}))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert target.read_bytes() in (b"old", b"n" * (32 << 20))
    left = [p.name for p in tmp_path.iterdir()]  # noqa: ASYNC240
    assert left == ["f.txt"]  # the worker finished and cleaned up before the task ended


# -- serialised mutations -----------------------------------------------------------------------------------


async def test_parallel_edits_of_one_file_all_land(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("".join(f"slot {i}\n" for i in range(30)))
    tool = edit_tool(tmp_path)
    edits = [
        call(tool, {"path": "f.txt", "edits": [{"oldText": f"slot {i}\n", "newText": f"done {i}\n"}]})
        for i in range(30)
    ]
    results = await asyncio.gather(*edits)
    assert all(text_of(r) == "Successfully replaced 1 block(s) in f.txt." for r in results)
    assert (tmp_path / "f.txt").read_text() == "".join(f"done {i}\n" for i in range(30))


async def test_edits_through_a_symlink_and_its_target_share_one_queue(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\nb\n")
    (tmp_path / "link.txt").symlink_to("f.txt")
    tool = edit_tool(tmp_path)
    await asyncio.gather(
        call(tool, {"path": "f.txt", "edits": [{"oldText": "a\n", "newText": "A\n"}]}),
        call(tool, {"path": "link.txt", "edits": [{"oldText": "b\n", "newText": "B\n"}]}),
    )
    assert (tmp_path / "f.txt").read_text() == "A\nB\n"
    assert (tmp_path / "link.txt").is_symlink()


async def test_parallel_writes_of_one_file_apply_in_call_order(tmp_path: Path) -> None:
    tool = write_tool(tmp_path)
    await asyncio.gather(*(call(tool, {"path": "f.txt", "content": f"version {i}"}) for i in range(10)))
    assert (tmp_path / "f.txt").read_text() == "version 9"


# -- writing ------------------------------------------------------------------------------------------------


async def test_write_keeps_the_mode_and_a_new_file_follows_the_umask(tmp_path: Path) -> None:
    existing = tmp_path / "script.sh"
    existing.write_text("old")
    existing.chmod(0o751)
    await call(write_tool(tmp_path), {"path": "script.sh", "content": "new"})
    assert existing.stat().st_mode & 0o777 == 0o751
    mask = os.umask(0o027)
    try:
        await call(write_tool(tmp_path), {"path": "fresh.txt", "content": "x"})
    finally:
        os.umask(mask)
    assert (tmp_path / "fresh.txt").stat().st_mode & 0o777 == 0o640


async def test_write_counts_javascript_characters_and_stores_utf8(tmp_path: Path) -> None:
    result = await call(write_tool(tmp_path), {"path": "f.txt", "content": "é🎉\ud800"})
    assert text_of(result) == "Successfully wrote 4 bytes to f.txt"  # é 1, 🎉 2 (surrogate pair), lone half 1
    assert (tmp_path / "f.txt").read_bytes() == "é🎉\ufffd".encode()


async def test_a_tool_without_cwd_uses_the_process_directory_at_each_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    await call(write_tool(), {"path": "here.txt", "content": "x"})
    assert text_of(await call(read_tool(), {"path": "here.txt"})) == "x"
    assert text_of(await call(ls_tool(), {})) == "here.txt"


# -- reading ------------------------------------------------------------------------------------------------


def _pi_selection(text: str, offset: int | None, limit: int | None, max_lines: int, max_bytes: int) -> Any:
    """Pi's read.ts selection on the whole string (the reference for the streamed version)."""
    lines = text.split("\n")
    start = max(0, offset - 1) if offset else 0
    if start >= len(lines):
        return ("beyond", len(lines))
    if limit is not None:
        end = min(start + limit, len(lines))
        selected = "\n".join(lines[start : max(end, start)])
        shown = end - start
    else:
        selected = "\n".join(lines[start:])
        shown = None
    t = truncate_head(selected, max_lines, max_bytes)
    return (len(lines), start, shown, t)


@pytest.mark.timeout(180)
@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab é\r", max_size=12), max_size=25),
    trailing=st.booleans(),
    offset=st.one_of(st.none(), st.integers(-2, 30)),
    limit=st.one_of(st.none(), st.integers(-3, 30)),
    max_lines=st.integers(1, 8),
    max_bytes=st.integers(1, 40),
    cuts=st.lists(st.integers(0, 400), max_size=6),
)
def test_the_streamed_selection_is_pis(
    lines: list[str],
    trailing: bool,
    offset: int | None,
    limit: int | None,
    max_lines: int,
    max_bytes: int,
    cuts: list[int],
) -> None:
    text = "\n".join(lines) + ("\n" if trailing else "")
    points = sorted({c for c in cuts if c < len(text)})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True) if text[a:b]]
    expected = _pi_selection(text, offset, limit, max_lines, max_bytes)
    if expected[0] == "beyond":
        with pytest.raises(OffsetBeyondEnd) as beyond:
            select_lines(chunks, offset, limit, max_lines, max_bytes)
        assert beyond.value.total_lines == expected[1]
        return
    got = select_lines(chunks, offset, limit, max_lines, max_bytes)
    total, start, shown, truncation = expected
    assert (got.total_file_lines, got.start, got.user_limited_lines) == (total, start, shown)
    assert got.truncation == truncation
    if truncation.first_line_exceeds_limit:
        assert got.first_line_bytes == len(text.split("\n")[start].encode())


async def test_read_counts_lines_of_a_file_larger_than_it_keeps(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_bytes(b"".join(b"entry %06d\n" % i for i in range(300_000)))
    result = await call(read_tool(tmp_path), {"path": "log.txt", "offset": 299_999})
    assert text_of(result) == "entry 299998\nentry 299999\n"
    first = await call(read_tool(tmp_path), {"path": "log.txt"})
    assert text_of(first).endswith("[Showing lines 1-2000 of 300001. Use offset=2001 to continue.]")


# -- grep and find: ignore rules, binary files, encodings ------------------------------------------------------


def test_a_pattern_matches_the_path_itself_not_through_an_ignored_parent() -> None:
    patterns = PatternSet(["build/", "*.log", "!keep.log", "docs/**"])
    assert patterns.match("build", is_dir=True) is True
    assert patterns.match("build", is_dir=False) is None  # "build/" is for directories only
    assert patterns.match("build/out.txt", is_dir=False) is None  # the walker never enters build/
    assert patterns.match("sub/x.log", is_dir=False) is True
    assert patterns.match("sub/keep.log", is_dir=False) is False
    assert patterns.match("docs", is_dir=True) is None
    assert patterns.match("docs/a/b.md", is_dir=False) is True


def test_git_rules_stop_at_the_repository_and_dot_ignore_wins_over_gitignore(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    repo = outer / "repo"
    (repo / ".git" / "info").mkdir(parents=True)
    (outer / ".gitignore").write_text("*.txt\n")  # above the repository: not applied
    (repo / ".gitignore").write_text("*.tmp\nlocal.cfg\n")
    (repo / ".git" / "info" / "exclude").write_text("*.secret\n")
    (repo / ".ignore").write_text("!keep.tmp\n")
    rules = IgnoreRules.for_root(str(repo), "grep", require_git=True)
    assert rules.matched("a.txt", False) is None
    assert rules.matched("a.tmp", False) is True
    assert rules.matched("keep.tmp", False) is False
    assert rules.matched("x.secret", False) is True
    assert rules.matched("local.cfg", False) is True


def test_the_global_git_ignore_file_applies_inside_repositories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    (config / "git").mkdir(parents=True)
    (config / "git" / "ignore").write_text(".DS_Store\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    assert IgnoreRules.for_root(str(repo), "grep", require_git=True).matched(".DS_Store", False) is True
    plain = tmp_path / "plain"
    plain.mkdir()
    assert IgnoreRules.for_root(str(plain), "grep", require_git=True).matched(".DS_Store", False) is None


async def test_grep_skips_a_file_from_its_first_nul_block_but_searches_a_named_binary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_search, "BLOCK", 64)
    lines = b"".join(b"needle %03d padding padding\n" % i for i in range(10))
    (tmp_path / "late.bin").write_bytes(lines + b"\x00 needle after the nul\n")
    (tmp_path / "early.bin").write_bytes(b"\x00needle\n")
    text = text_of(await call(grep_tool(tmp_path), {"pattern": "needle", "limit": 1000}))
    assert "early.bin" not in text
    assert "late.bin:1: needle 000" in text
    assert "after the nul" not in text
    named = text_of(await call(grep_tool(tmp_path), {"pattern": "needle", "path": "early.bin"}))
    assert named == "early.bin:1: \x00needle"


async def test_grep_reads_latin1_files_without_failing(tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_bytes("café crème\n".encode("latin-1"))
    text = text_of(await call(grep_tool(tmp_path), {"pattern": "caf"}))
    assert text == "old.txt:1: caf\ufffd cr\ufffdme"


async def test_grep_line_numbers_are_right_across_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_search, "BLOCK", 50)
    (tmp_path / "n.txt").write_text("".join(f"{'hit' if i % 7 == 0 else 'miss'} {i}\n" for i in range(1, 200)))
    text = text_of(await call(grep_tool(tmp_path), {"pattern": "^hit", "path": "n.txt"}))
    assert text.split("\n") == [f"n.txt:{i}: hit {i}" for i in range(7, 200, 7)]


async def test_find_honours_gitignore_outside_a_repository_and_grep_does_not(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / "a.log").write_text("needle\n")
    (tmp_path / "b.txt").write_text("needle\n")
    assert text_of(await call(find_tool(tmp_path), {"pattern": "*"})).split("\n") == [".gitignore", "b.txt"]
    assert text_of(await call(grep_tool(tmp_path), {"pattern": "needle"})).split("\n") == [
        "a.log:1: needle",
        "b.txt:1: needle",
    ]


# -- small pieces -------------------------------------------------------------------------------------------


def test_sizes_and_fixed_decimals_round_ties_up_as_javascript() -> None:
    assert format_size(1280) == "1.3KB"  # 1.25 KB: toFixed(1) gives 1.3; Python's format gives 1.2
    assert format_size(51200) == "50.0KB"
    assert js_to_fixed(1.125, 2) == "1.13"
    assert js_to_fixed(2000 / 667, 2) == "3.00"


def test_ls_orders_names_as_node_localecompare() -> None:
    collation = load()[1]["collation"]
    assert "".join(sorted(collation["ascii"], key=collation_key)).lower() == "".join(collation["ascii"]).lower()
    ours = sorted(collation["names"], key=collation_key)
    assert [n.lower() for n in ours] == [n.lower() for n in collation["sorted"]]


def test_read_only_tools_are_pis_read_only_set() -> None:
    assert [tool.name for tool in read_only_tools("/tmp")] == ["read", "grep", "find", "ls"]


# -- through the agent loop ----------------------------------------------------------------------------------


async def test_the_tools_work_through_an_agent_run(tmp_path: Path) -> None:
    from pi_notebook.agent import Agent
    from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_text, faux_tool_call
    from pi_notebook.tools import coding_tools

    (tmp_path / "notes.md").write_text("# Notes\nstatus: draft\n")
    faux = FauxProvider()
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("read", {"path": "notes.md"})], "toolUse"),
            faux_assistant_message(
                [faux_tool_call("edit", {"path": "notes.md", "oldText": "draft", "newText": "final"})], "toolUse"
            ),
            faux_assistant_message([faux_text("done")]),
        ]
    )
    agent = Agent(stream_fn=faux.stream, model=faux.model, tools=coding_tools(tmp_path))
    await agent.prompt("finish the notes")
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [r.is_error for r in results] == [False, False]
    assert results[0].content == [TextContent(text="# Notes\nstatus: draft\n")]
    assert results[1].details["diff"] == " 1 # Notes\n-2 status: draft\n+2 status: final"
    assert (tmp_path / "notes.md").read_text() == "# Notes\nstatus: final\n"


# -- hostile inputs -----------------------------------------------------------------------------------------


async def test_devices_and_pipes_are_refused_not_waited_on_or_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    cases: list[tuple[AgentTool, dict[str, Any], str]] = [
        (read_tool(tmp_path), {"path": "pipe"}, "read"),  # opening a pipe blocks until a writer comes
        (grep_tool(tmp_path), {"pattern": "x", "path": "pipe"}, "search"),
        (write_tool(tmp_path), {"path": "pipe", "content": "x"}, "write"),  # a rename would replace it
        (edit_tool(tmp_path), {"path": "pipe", "edits": [{"oldText": "a", "newText": "b"}]}, "edit"),
    ]
    for tool, args, verb in cases:
        with pytest.raises(FileToolError, match=r"not a regular file \(a device, pipe or socket\)$") as refused:
            await call(tool, args)
        assert verb in str(refused.value)
    assert fifo.is_fifo()


async def test_reading_one_huge_line_keeps_memory_small(tmp_path: Path) -> None:
    import tracemalloc

    (tmp_path / "min.json").write_bytes(b"[" + b"1," * (15 << 20) + b"1]\n")
    tracemalloc.start()
    try:
        result = await call(read_tool(tmp_path), {"path": "min.json"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert text_of(result).startswith("[Line 1 is 30.0MB, exceeds 50.0KB limit. Use bash: sed -n '1p' min.json")
    assert peak < 8 << 20  # the file is 30 MB; one chunk and its decoded text are held at a time


async def test_file_names_that_are_not_utf8_are_shown_with_replacement_characters(tmp_path: Path) -> None:
    with open(os.path.join(os.fsencode(tmp_path), b"caf\xe9.txt"), "w") as file:  # noqa: ASYNC230
        file.write("needle\n")
    for result in [
        await call(ls_tool(tmp_path), {}),
        await call(find_tool(tmp_path), {"pattern": "*.txt"}),
    ]:
        assert text_of(result) == "caf\ufffd.txt"
    assert text_of(await call(grep_tool(tmp_path), {"pattern": "needle"})) == "caf\ufffd.txt:1: needle"


async def test_edit_keeps_undecodable_bytes_and_says_why_a_replacement_character_cannot_match(tmp_path: Path) -> None:
    (tmp_path / "mixed.txt").write_bytes(b"caf\xe9 au lait\nplain line\n")
    await call(edit_tool(tmp_path), {"path": "mixed.txt", "edits": [{"oldText": "plain", "newText": "PLAIN"}]})
    assert (tmp_path / "mixed.txt").read_bytes() == b"caf\xe9 au lait\nPLAIN line\n"
    shown = text_of(await call(read_tool(tmp_path), {"path": "mixed.txt"}))
    assert shown.startswith("caf\ufffd au lait")  # what the model sees, and may copy into oldText
    with pytest.raises(FileToolError, match=r"^Could not find the exact text in mixed\.txt\. .*not valid UTF-8"):
        await call(edit_tool(tmp_path), {"path": "mixed.txt", "edits": [{"oldText": "caf\ufffd", "newText": "x"}]})
