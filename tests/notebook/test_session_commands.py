"""The ``%pi`` words of saved and named sessions: ``-s NAME``, ``sessions``, ``resume``, ``new``, ``use``."""

from __future__ import annotations

import pytest

from pi_notebook.notebook._commands import USAGE, PiCommand, UsageError, parse_cell_line, parse_line


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("-s review explain this", PiCommand("prompt", "explain this", session="review")),
        ("--session review explain", PiCommand("prompt", "explain", session="review")),
        ("-s review steer go left", PiCommand("steer", "go left", session="review")),
        ("resume -s b latest", PiCommand("resume", "latest", session="b")),
        ("resume", PiCommand("resume", "")),
        ("resume 3", PiCommand("resume", "3")),
        ("sessions", PiCommand("sessions")),
        ("new", PiCommand("new")),
        ("use side", PiCommand("use", "side")),
        ("explain -s here", PiCommand("prompt", "explain -s here")),  # after the prompt's first word: text
    ],
)
def test_session_words_and_the_session_option(line: str, expected: PiCommand) -> None:
    assert parse_line(line) == expected


def test_bad_session_names_and_arguments_are_one_line_errors() -> None:
    for line, message in (("-s a/b hi", "bad session name 'a/b'"), ("new now", "new takes no arguments"),
                          ("sessions 2", "sessions takes no arguments"), ("-s", "expected one argument")):  # fmt: skip
        with pytest.raises(UsageError, match=message) as info:
            parse_line(line)
        assert "\n" not in str(info.value)


def test_a_cell_may_name_its_session() -> None:
    assert parse_cell_line("-s review") == "review"
    assert parse_cell_line("") is None


def test_the_usage_lists_the_session_words() -> None:
    for word in ("%pi sessions", "%pi resume", "%pi new", "%pi use", "%pi -s NAME"):
        assert word in USAGE
