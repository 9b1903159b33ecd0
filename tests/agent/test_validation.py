"""Tool-argument validation: the arguments handed on are a copy (the transcript keeps what the model sent), and
jsonschema is loaded on the first JSON-schema check, without ``rfc3987_syntax`` (seconds of import)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pi_notebook.agent._validation import validate_arguments

ROOT = Path(__file__).resolve().parents[2]

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["n"],
}


def test_the_validated_arguments_share_nothing_with_what_the_model_sent() -> None:
    raw = {"n": 3, "tags": ["a"], "extra": {"deep": [1, {"x": 2}]}}
    args = validate_arguments(SCHEMA, "t", raw)
    assert args == raw
    args["tags"].append("b")
    args["extra"]["deep"][1]["x"] = 99
    assert raw == {"n": 3, "tags": ["a"], "extra": {"deep": [1, {"x": 2}]}}


def test_coercion_changes_the_copy_only() -> None:
    raw = {"n": "5", "tags": [1, True]}
    assert validate_arguments(SCHEMA, "t", raw) == {"n": 5, "tags": ["1", "true"]}
    assert raw == {"n": "5", "tags": [1, True]}


def test_objects_that_are_not_json_data_are_deep_copied() -> None:
    class Box:
        def __init__(self, items: list[int]) -> None:
            self.items = items

    box = Box([1])
    args = validate_arguments({"type": "object"}, "t", {"box": box})
    assert args["box"] is not box
    assert args["box"].items == [1] and args["box"].items is not box.items


def _run(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", code]
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.timeout(150)
def test_loading_the_notebook_extension_does_not_import_jsonschema() -> None:
    assert _run("import sys, pi_notebook.notebook; print('jsonschema' in sys.modules)") == "False"


@pytest.mark.timeout(150)
@pytest.mark.skipif(importlib.util.find_spec("rfc3987_syntax") is None, reason="rfc3987_syntax is not installed here")
def test_the_first_check_imports_jsonschema_without_rfc3987_syntax_which_stays_importable() -> None:
    code = (
        "import sys\n"
        "from pi_notebook.agent._validation import validate_arguments\n"
        "print(validate_arguments({'type': 'object', 'properties': {'n': {'type': 'integer'}}}, 't', {'n': '2'}))\n"
        "print('jsonschema' in sys.modules, 'rfc3987_syntax' in sys.modules)\n"
        "import rfc3987_syntax\n"
        "print(rfc3987_syntax.is_valid_syntax('iri', 'http://example.com/a'))\n"
    )
    assert _run(code).splitlines() == ["{'n': 2}", "True False", "True"]
