"""The ``%pi`` line parser: sub-commands, prompts (verbatim), the ``--`` escape, one-line errors, never an exit."""

from __future__ import annotations

import pytest

from pi_notebook.notebook._commands import USAGE, PiCommand, UsageError, parse_cell_line, parse_line


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("What can you do?", PiCommand("prompt", "What can you do?")),
        ("  Tell me   a story, 'please'  ", PiCommand("prompt", "Tell me   a story, 'please'")),
        ("What's up?", PiCommand("prompt", "What's up?")),  # an unbalanced quote is just text
        ("stop the ship", PiCommand("prompt", "stop the ship")),  # not a command word
        ("-- steer the ship", PiCommand("prompt", "steer the ship")),
        ("-- -v is fine", PiCommand("prompt", "-v is fine")),
        ("steer  go left,  then right ", PiCommand("steer", "go left,  then right")),
        ("steer -- -v first", PiCommand("steer", "-v first")),
        ("follow then write it up", PiCommand("follow", "then write it up")),
        ('compact keep the "numbers"', PiCommand("compact", 'keep the "numbers"')),
        ("compact", PiCommand("compact")),
        ("events", PiCommand("events")),
        ("events 3", PiCommand("events", number=3)),
        (
            "model openai-compatible:http://127.0.0.1:11434/v1:llama3.2:3b",
            PiCommand("model", "openai-compatible:http://127.0.0.1:11434/v1:llama3.2:3b"),
        ),
        (
            "model openai-compatible:http://127.0.0.1:4000/v1:m --context-window 2048 --key-env LITELLM_KEY "
            "--max-tokens 64",
            PiCommand(
                "model",
                "openai-compatible:http://127.0.0.1:4000/v1:m",
                flags={"context_window": "2048", "max_tokens": "64", "key_env": "LITELLM_KEY"},
            ),
        ),
        (
            "model --from-server openai-compatible:http://127.0.0.1:8080/v1",
            PiCommand("model", "openai-compatible:http://127.0.0.1:8080/v1", flags={"from_server": "true"}),
        ),
        ("model", PiCommand("model")),
        ("settings retry.max_retries=5 'a=b c'", PiCommand("settings", "retry.max_retries=5 'a=b c'")),
        ("interrupt on", PiCommand("interrupt", "on")),
        ("clear-queue", PiCommand("clear-queue")),
        ("wait", PiCommand("wait")),
        ("help", PiCommand("help")),
    ],
)
def test_lines_are_read_as_commands_or_verbatim_prompts(line: str, expected: PiCommand) -> None:
    assert parse_line(line) == expected


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("", "nothing to do"),
        ("   ", "nothing to do"),
        ("abort now", "abort takes no arguments"),
        ("events abc", "events: argument number: invalid int value: 'abc'"),
        ("events 1 2", "events takes at most one run number, got '2'"),
        ("-x what is this", "unrecognized arguments: -x (a prompt that starts with a dash: %pi -- <prompt>)"),
        ("--help", "unrecognized arguments: --help"),
        ("model m --context-window 0", "model: argument --context-window: expected a positive number of tokens"),
        ("model m --max-tokens lots", "model: argument --max-tokens: expected a positive number of tokens"),
        ("model m --key-env", "model: argument --key-env: expected one argument"),
        ("model a b", "model: unrecognized arguments: b"),
        ("model m --window 9", "model: unrecognized arguments: --window 9"),
        ("steer -h now", "steer: unknown option '-h' (a text that starts with a dash: %pi steer -- <text>)"),
    ],
)
def test_bad_lines_are_one_line_usage_errors_never_an_exit(line: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_line(line)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(message) or message in text


def test_a_cell_line_takes_no_words() -> None:
    parse_cell_line("")
    parse_cell_line("   ")
    for line in ("--flag", "body on the line"):
        with pytest.raises(UsageError, match=r"%%pi takes no arguments; the cell body is the prompt"):
            parse_cell_line(line)


def test_every_sub_command_is_in_the_usage() -> None:
    for word in ("steer", "follow", "abort", "continue", "compact", "wait", "status", "events", "queue",
                 "clear-queue", "model", "settings", "interrupt", "help"):  # fmt: skip
        assert f"%pi {word}" in USAGE
        assert parse_line(word).name == word


@pytest.mark.parametrize(
    ("line", "meant"),
    [
        ("stauts", "status"),  # two letters swapped
        ("statu", "status"),  # one missing
        ("models", "model"),  # one extra
        ("Setings retry.max_retries=5", "settings"),  # followed by what settings takes
        ("modle openai:gpt-4o-mini", "model"),
        ("evnts 3", "events"),
        ("resum latest", "resume"),
        ("contineu", "continue"),
    ],
)
def test_a_near_miss_of_a_command_asks_did_you_mean_instead_of_prompting(line: str, meant: str) -> None:
    """Issue 37 item 11: ``%pi stauts`` was sent to the model as a prompt."""
    word = line.split()[0]
    with pytest.raises(UsageError) as info:
        parse_line(line)
    shown = f"{word} ..." if " " in line else word
    assert str(info.value) == (
        f"did you mean %pi {meant}? ({word!r} is not a command; to send it to the model: %pi -- {shown})"
    )
    assert parse_line(f"-- {line}") == PiCommand("prompt", line)  # the way to send it anyway


@pytest.mark.parametrize(
    "line",
    [
        "about the data",
        "state the problem",
        "now go",
        "news",
        "waits for it",
        "settigns of the story",
        "tool it up",
        "modles",
    ],
)
def test_a_sentence_that_starts_like_a_command_is_still_a_prompt(line: str) -> None:
    assert parse_line(line) == PiCommand("prompt", line)


def test_a_misspelt_flag_names_the_flag_it_is_close_to() -> None:
    """Issue 37 item 12."""
    with pytest.raises(UsageError, match=r"^model: unrecognized arguments: --context-windw 9 \(did you mean "
                       r"--context-window\?\)$"):  # fmt: skip
        parse_line("model m --context-windw 9")
