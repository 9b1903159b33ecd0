"""Output handling (PI-SPEC §8): tail truncation with Pi's footers, the full output in a temp file, streaming
UTF-8 decoding, invalid bytes, and bounded memory for huge output."""

from __future__ import annotations

import re
import tracemalloc
from pathlib import Path

from bash_helpers import Watcher, is_file, run, run_error, text_of

from pi_notebook.tools import bash_tool
from pi_notebook.tools._output import OutputAccumulator, format_size, truncate_tail

FOOTER = re.compile(r"\n\n\[(?P<body>.*)\. Full output: (?P<path>.*/pi-bash-[0-9a-f]{16}\.log)\]$")


def footer(text: str) -> tuple[str, Path]:
    match = FOOTER.search(text)
    assert match, f"no footer in {text[-300:]!r}"
    return match.group("body"), Path(match.group("path"))


def seq(first: int, last: int) -> str:
    return "".join(f"{i}\n" for i in range(first, last + 1))


async def test_truncation_by_lines_keeps_the_last_2000_and_saves_everything() -> None:
    result = await run(bash_tool(), "seq 1 3000")
    text = text_of(result)
    body, path = footer(text)
    assert body == "Showing lines 1001-3000 of 3000"
    assert text.startswith("1001\n") and text[: text.index("\n\n[")] == seq(1001, 3000).rstrip("\n")
    assert path.read_text() == seq(1, 3000)
    assert result.details["full_output_path"] == str(path)
    assert result.details["truncation"]["truncated_by"] == "lines"


async def test_a_trailing_newline_is_not_an_extra_line() -> None:
    result = await run(bash_tool(), "seq 1 2000")
    assert text_of(result) == seq(1, 2000)
    assert result.details is None


async def test_truncation_by_bytes_names_the_limit() -> None:
    # 1000 lines of 99 bytes + newline: 512 lines (51199 bytes with separators) fit in 50 KB.
    result = await run(bash_tool(), "for i in $(seq 1 1000); do printf '%099d\\n' $i; done")
    body, path = footer(text_of(result))
    assert body == "Showing lines 489-1000 of 1000 (50.0KB limit)"
    assert path.stat().st_size == 100_000
    assert result.details["truncation"]["truncated_by"] == "bytes"


async def test_a_single_oversized_last_line_shows_its_end() -> None:
    result = await run(bash_tool(), "head -c 60000 /dev/zero | tr '\\0' x")
    text = text_of(result)
    body, path = footer(text)
    assert body == "Showing last 50.0KB of line 1 (line is 58.6KB)"
    assert text.startswith("x" * 51200 + "\n\n[")
    assert path.stat().st_size == 60000


async def test_custom_limits_are_used_in_the_footer() -> None:
    result = await run(bash_tool(max_lines=3, max_bytes=1024), "seq 1 10")
    body, _ = footer(text_of(result))
    assert body == "Showing lines 8-10 of 10"


async def test_a_timed_out_command_keeps_the_truncated_tail_and_the_full_output_path() -> None:
    error = await run_error(bash_tool(), "seq 1 3000; sleep 100", timeout=1)
    text = str(error)
    assert text.endswith("\n\nCommand timed out after 1 seconds")
    body, path = footer(text.removesuffix("\n\nCommand timed out after 1 seconds"))
    assert body == "Showing lines 1001-3000 of 3000"
    assert path.read_text() == seq(1, 3000)
    assert error.details["full_output_path"] == str(path)


async def test_progress_snapshots_carry_the_truncation_and_the_path() -> None:
    watcher = Watcher()
    await run(bash_tool(), "seq 1 3000", on_update=watcher)
    last = watcher.updates[-1]
    assert last.details["truncation"]["total_lines"] == 3000
    assert is_file(last.details["full_output_path"])
    assert text_of(last).startswith("1001\n")


async def test_invalid_utf8_bytes_become_replacement_characters() -> None:
    result = await run(bash_tool(), "printf 'a\\377b\\n\\300'")
    assert text_of(result) == "a\ufffdb\n\ufffd"


async def test_utf8_written_in_pieces_decodes_whole() -> None:
    # Two-byte characters written three bytes at a time, with pauses so reads see split characters.
    command = "for i in 1 2 3 4 5 6; do printf '\\303\\251\\303'; sleep 0.02; printf '\\251'; done; echo"
    assert text_of(await run(bash_tool(), command)) == "éé" * 6 + "\n"


def test_a_character_split_across_chunks_decodes_correctly() -> None:
    output = OutputAccumulator()
    for chunk in (b"caf", b"\xc3", b"\xa9 \xe2\x82", b"\xac\n", b"\xf0\x9f", b"\x98\x80"):
        output.append(chunk)
    output.finish()
    assert output.snapshot().content == "café €\n😀"
    assert output.total_lines == 2


def test_an_incomplete_character_at_the_end_becomes_a_replacement_character() -> None:
    output = OutputAccumulator()
    output.append(b"ok\xe2\x82")
    output.finish()
    assert output.snapshot().content == "ok\ufffd"


async def test_huge_output_stays_bounded_in_memory_and_is_saved_whole() -> None:
    total = 32 * 1024 * 1024
    tracemalloc.start()
    try:
        result = await run(bash_tool(), f"yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c {total}")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024
    body, path = footer(text_of(result))
    assert path.stat().st_size == total
    assert len(text_of(result).encode()) < 51 * 1024 + 200
    assert body.endswith("(50.0KB limit)")


def test_the_rolling_tail_is_bounded_whatever_is_appended() -> None:
    output = OutputAccumulator(max_bytes=1000)
    try:
        for i in range(10_000):
            output.append(f"line {i}\n".encode())
            assert output._tail_bytes <= 4 * 1000 + 20
        output.finish()
        assert output.snapshot().content.endswith("\nline 9999")  # a truncated tail is whole lines joined
    finally:
        output.close()


def test_truncate_tail_cuts_the_oversized_last_line_at_a_character_boundary() -> None:
    cut = truncate_tail("é" * 10, max_lines=10, max_bytes=5)
    assert (cut.content, cut.last_line_partial, cut.truncated_by) == ("éé", True, "bytes")


def test_format_size_matches_pi() -> None:
    assert [format_size(n) for n in (0, 1023, 1024, 51200, 60000, 1536 * 1024)] == [
        "0B",
        "1023B",
        "1.0KB",
        "50.0KB",
        "58.6KB",
        "1.5MB",
    ]
