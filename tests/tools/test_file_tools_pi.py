"""Our file tools against Pi 0.83's own, scenario by scenario (``tests/fixtures/pi-file-tools``: Pi's outputs
recorded by ``record.mjs`` running Pi's ``read``/``write``/``edit``/``ls``/``grep``/``find`` on Node 22).

Texts, ``details`` and the files left behind must be Pi's. Where the comparison is looser, ``DEVIATIONS`` below
says why: ripgrep and fd list files in a varying order (compared as sets), resized images come from a different
encoder (compared by size and type), and a few deliberate differences the tools' docstrings describe.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from file_tools_fixture import Outcome, build, load, run, split_notice
from PIL import Image

from pi_notebook.tools import coding_tools

SCENARIOS, RECORDED = load()
PI = {record["name"]: record for record in RECORDED["results"]}


def _image_size(data: str) -> tuple[int, int]:
    with Image.open(io.BytesIO(base64.b64decode(data))) as image:
        return image.size


def _same_image_meta(pi: dict[str, Any], ours: Outcome) -> None:
    assert ours.error is None
    assert ours.content is not None
    assert [b["type"] for b in ours.content] == [b["type"] for b in pi["content"]]
    assert ours.content[0] == pi["content"][0]  # the note: type, conversion and dimensions
    assert ours.content[1]["mimeType"] == pi["content"][1]["mimeType"]
    assert _image_size(ours.content[1]["data"]) == _image_size(pi["content"][1]["data"])


def _same_text_unordered(pi: dict[str, Any], ours: Outcome) -> None:
    assert ours.error == pi.get("error")
    assert ours.details == pi.get("details")
    if pi.get("content") is None:
        assert ours.content is None
        return
    assert ours.content is not None
    pi_body, pi_notice = split_notice(pi["content"][0]["text"])
    body, notice = split_notice(ours.content[0]["text"])
    assert sorted(body) == sorted(pi_body)
    assert notice == pi_notice


def _same_count_and_notice(pi: dict[str, Any], ours: Outcome) -> None:
    assert ours.details == pi["details"]
    assert ours.content is not None
    pi_body, pi_notice = split_notice(pi["content"][0]["text"])
    body, notice = split_notice(ours.content[0]["text"])
    assert len(body) == len(pi_body)
    assert notice == pi_notice


def _regex_error(pi: dict[str, Any], ours: Outcome) -> None:
    assert pi["error"].startswith("rg: regex parse error:")
    assert ours.error is not None
    assert ours.error.startswith("regex parse error:\n    (unclosed\nerror: ")


def _fd_limit_error(pi: dict[str, Any], ours: Outcome) -> None:
    assert pi["error"].startswith("error: Invalid value '2.5' for '--max-results <count>'")
    assert ours.error == "error: invalid value '2.5' for '--max-results <count>': invalid digit found in string"


def _newline_refused(pi: dict[str, Any], ours: Outcome) -> None:
    assert pi["error"].startswith('rg: the literal "\\n" is not allowed in a regex\n\nConsider enabling multiline')
    assert ours.error == 'the literal "\\n" is not allowed in a regex (grep matches within one line)'


def _ls_order(pi: dict[str, Any], ours: Outcome) -> None:
    assert ours.details == pi["details"]
    assert ours.content is not None
    pi_names = pi["content"][0]["text"].split("\n")
    names = ours.content[0]["text"].split("\n")
    assert [n.lower() for n in names] == [n.lower() for n in pi_names]  # equal names keep readdir order in Pi
    assert sorted(names) == sorted(pi_names)


def _edit_keeps_invalid_bytes(pi: dict[str, Any], ours: Outcome) -> None:
    assert ours.content == pi["content"]
    assert ours.details == pi["details"]
    written = base64.b64decode(ours.files["bad.txt"]["base64"])
    assert written == b"OK LINE\nbad \xff here\ntrunc \xe2\x82 end\nsurr \xed\xa0\x80 x\nover \xc0\xaf y\nlast\n"
    assert b"\xef\xbf\xbd" in base64.b64decode(pi["files"]["bad.txt"]["base64"])  # Pi rewrites them as U+FFFD


DEVIATIONS: dict[str, tuple[str, Callable[[dict[str, Any], Outcome], None]]] = {
    "read_png_large": ("Pillow resizes where Pi uses Photon: different bytes, same size and type", _same_image_meta),
    "read_bmp": ("Pillow converts BMP to PNG where Pi uses Photon", _same_image_meta),
    "grep_invalid_regex": ("Python's regex explains the error, not Rust's", _regex_error),
    "find_limit": (
        "fd returns an arbitrary subset at the limit; ours is the first in path order",
        _same_count_and_notice,
    ),
    "find_limit_fraction": (
        "fd's command-line parser words the error (fd 8.6 here, fd 10's wording ours)",
        _fd_limit_error,
    ),
    "grep_newline_in_pattern": ("ripgrep's advice to use --multiline does not apply to the tool", _newline_refused),
    "grep_literal_newline": ("ripgrep's advice to use --multiline does not apply to the tool", _newline_refused),
    "ls_basic": ("names equal but for case keep the directory's order in Pi, code-point order here", _ls_order),
    "edit_non_utf8": ("bytes that are not UTF-8 are kept, where Pi rewrites them as U+FFFD", _edit_keeps_invalid_bytes),
}


def _exact(pi: dict[str, Any], ours: Outcome) -> None:
    assert ours.error == pi.get("error")
    assert ours.content == pi.get("content")
    assert ours.details == pi.get("details")
    for rel, recorded in (pi.get("files") or {}).items():
        assert ours.files[rel] == recorded, rel


def test_every_scenario_has_a_recording() -> None:
    assert [s["name"] for s in SCENARIOS] == [r["name"] for r in RECORDED["results"]]
    assert set(DEVIATIONS) <= set(PI)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
async def test_tool_matches_pi(scenario: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = tmp_path / scenario["name"]
    cwd.mkdir()
    build(cwd, scenario["files"])
    monkeypatch.setenv("HOME", str(cwd / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    ours = await run(scenario, cwd)
    pi = PI[scenario["name"]]
    if scenario["name"] in DEVIATIONS:
        DEVIATIONS[scenario["name"]][1](pi, ours)
    elif scenario.get("unordered"):
        _same_text_unordered(pi, ours)
        for rel, recorded in (pi.get("files") or {}).items():
            assert ours.files[rel] == recorded, rel
    else:
        _exact(pi, ours)


@pytest.mark.parametrize("name", ["read", "write", "edit", "ls", "grep", "find", "bash"])
def test_definitions_are_pis(name: str) -> None:
    tool = {t.name: t for t in coding_tools("/cwd")}[name]
    recorded = RECORDED["definitions"][name]
    assert (tool.name, tool.label, tool.description) == (recorded["name"], recorded["label"], recorded["description"])
    assert tool.json_schema() == recorded["parameters"]
    prompt = tool.prompt
    assert prompt is not None
    expected = [g for g in recorded["promptGuidelines"] if not g.startswith("Inspect PI_*")]  # not exposed here
    assert (prompt.snippet, list(prompt.guidelines)) == (recorded["promptSnippet"], expected)
