"""Streamed tool-call arguments that are not valid JSON are salvaged as Pi does, and what was sent is kept
(issue 17 item 9)."""

from __future__ import annotations

from typing import Any

import pytest

from pi_notebook.ai import MessageBuilder, ToolCall
from pi_notebook.ai._builder import parse_arguments, repair_json


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"a": 2, "b": 3}', {"a": 2, "b": 3}),
        ("", {}),
        ("   ", {}),
        ('{"a": 2, "b": ', {"a": 2}),  # cut off: the complete members (Pi: partial-json)
        ('{"a": 2, "b": 3', {"a": 2, "b": 3}),
        ('{"path": "C:\\dir\\new"}', {"path": "C:\\dir\new"}),  # invalid escape \d doubled, \n a newline
        ('{"text": "line1\nline2"}', {"text": "line1\nline2"}),  # a raw newline inside a string
        ('{"text": "tab\there"}', {"text": "tab\there"}),
        ("[1, 2]", {}),  # not an object
        ('"just a string"', {}),
        ("not json at all", {}),
        ("{a: 2}", {}),
    ],
)
def test_arguments_are_parsed_repaired_or_salvaged_as_pi_does(raw: str, expected: dict[str, Any]) -> None:
    assert parse_arguments(raw) == expected


def test_repair_leaves_valid_json_alone_and_fixes_only_inside_strings() -> None:
    valid = '{"a": "x\\n\\u00e9\\"", "b": [1, 2]}'
    assert repair_json(valid) == valid
    assert repair_json('{"a": "C:\\dir"}\n') == '{"a": "C:\\\\dir"}\n'  # the newline outside a string stays raw


def builder_with_call(*fragments: str) -> tuple[MessageBuilder, int]:
    builder = MessageBuilder("openai-completions", "p", "m")
    index = builder.toolcall_start("call_1", "add").content_index
    for fragment in fragments:
        builder.toolcall_delta(index, fragment)
    return builder, index


def test_a_call_whose_arguments_do_not_parse_keeps_the_text_sent() -> None:
    builder, index = builder_with_call('{"a": 2, ', '"b": ')
    call = builder.toolcall_end(index).tool_call
    assert (call.arguments, call.unparsed_arguments) == ({"a": 2}, '{"a": 2, "b": ')
    assert "unparsed" not in call.model_dump_json()  # in memory only: session files hold what Pi's hold


def test_a_call_cut_off_by_an_error_keeps_the_text_too() -> None:
    builder, _ = builder_with_call('{"a": ')
    message = builder.error("error", "connection lost").error
    call = message.content[0]
    assert isinstance(call, ToolCall)
    assert (call.arguments, call.unparsed_arguments) == ({}, '{"a": ')


def test_valid_arguments_keep_no_text() -> None:
    builder, index = builder_with_call('{"a": 2, ', '"b": 3}')
    call = builder.toolcall_end(index).tool_call
    assert (call.arguments, call.unparsed_arguments) == ({"a": 2, "b": 3}, None)
