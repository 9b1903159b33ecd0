"""Replays ``tests/fixtures/pi-file-tools`` scenarios against our tools (helpers for the Pi-comparison tests)."""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_notebook.agent import AgentTool
from pi_notebook.ai import AbortController, ImageContent, TextContent
from pi_notebook.tools import FileToolError, coding_tools

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pi-file-tools"


def load() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    scenarios = json.loads((FIXTURES / "scenarios.json").read_text("utf-8"))["scenarios"]
    recorded = json.loads((FIXTURES / "pi-file-tools.json").read_text("utf-8"))
    return scenarios, recorded


def file_bytes(spec: Any) -> bytes:
    if isinstance(spec, str):
        return spec.encode("utf-8")
    if "base64" in spec:
        return base64.b64decode(spec["base64"])
    if "numbered" in spec:
        return "".join(f"line {i}\n" for i in range(1, spec["numbered"] + 1)).encode("utf-8")
    if "repeat" in spec:
        line: str = spec["repeat"]["line"]
        count: int = spec["repeat"]["count"]
        return (line + "\n").encode("utf-8") * count
    raise ValueError(f"unknown file spec {spec!r}")


def build(cwd: Path, files: dict[str, Any]) -> None:
    (cwd / "home").mkdir(parents=True, exist_ok=True)
    for name, spec in files.items():
        path = cwd / name
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(spec, dict) and "symlink" in spec:
            os.symlink(spec["symlink"], path)
        else:
            path.write_bytes(file_bytes(spec))


def substitute(value: Any, cwd: str) -> Any:
    if isinstance(value, str):
        return value.replace("<cwd>", cwd)
    if isinstance(value, list):
        return [substitute(v, cwd) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, cwd) for k, v in value.items()}
    return value


def anonymise(value: Any, cwd: str) -> Any:
    if isinstance(value, str):
        return value.replace(cwd, "<cwd>")
    if isinstance(value, list):
        return [anonymise(v, cwd) for v in value]
    if isinstance(value, dict):
        return {k: anonymise(v, cwd) for k, v in value.items()}
    return value


@dataclass
class Outcome:
    content: list[dict[str, Any]] | None
    details: Any
    error: str | None
    files: dict[str, dict[str, Any]]


def _content(block: Any) -> dict[str, Any]:
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    assert isinstance(block, ImageContent)
    return {"type": "image", "data": block.data, "mimeType": block.mime_type}


def _read_back(cwd: Path, rel: str) -> dict[str, Any]:
    path = cwd / rel
    try:
        data = path.read_bytes()
    except OSError as exc:
        return {"missing": exc.errno}
    out: dict[str, Any] = {"base64": base64.b64encode(data).decode()}
    if path.is_symlink():
        out["symlink"] = True
    return out


async def run(scenario: dict[str, Any], cwd: Path) -> Outcome:
    tools: dict[str, AgentTool] = {tool.name: tool for tool in coding_tools(cwd)}
    tool = tools[scenario["tool"]]
    controller = AbortController()
    if scenario.get("aborted"):
        controller.abort()
    args = substitute(scenario["args"], str(cwd))
    if tool.prepare_arguments is not None:
        args = tool.prepare_arguments(args)
    content = details = error = None
    try:
        result = await tool.execute("call-1", args, controller.signal, lambda _: None)
        content = anonymise([_content(block) for block in result.content], str(cwd))
        details = anonymise(result.details, str(cwd))
    except FileToolError as exc:
        error = anonymise(str(exc), str(cwd))
    files = {rel: _read_back(cwd, rel) for rel in scenario.get("check", [])}
    return Outcome(content, details, error, files)


def split_notice(text: str) -> tuple[list[str], str]:
    """Body lines and the trailing ``[...]`` notice (empty if none)."""
    body, sep, notice = text.rpartition("\n\n[")
    if not sep or not notice.endswith("]"):
        return (text.split("\n") if text else []), ""
    return body.split("\n"), "[" + notice
