"""Pi's ``edit`` tool: exact-text replacements in one file, returning a diff.

``edit_tool(cwd)`` returns an :class:`~pi_notebook.agent.AgentTool` named ``edit`` with Pi 0.83's parameters
(``path`` and ``edits: [{oldText, newText}, ...]``), description and texts. As in Pi, ``prepare_arguments``
also accepts ``edits`` sent as a JSON string and the older top-level ``oldText``/``newText`` shape.

Matching (``_edits``): every ``oldText`` must be found once in the original file (exactly, or after Pi's fuzzy
normalisation of whitespace, quotes and dashes), edits must not overlap and must change something; the errors
are Pi's (``Could not find the exact text in <path>...``, ``Found 2 occurrences of the text in <path>...``).
A UTF-8 BOM and CRLF line endings are kept. The result is ``Successfully replaced N block(s) in <path>.`` with
``details = {"diff": <Pi's numbered diff>, "patch": <unified diff>, "firstChangedLine": <line in new file>}``.

Differences from Pi: the file is replaced atomically (``_atomic``; never half-written, even on ``kill -9``),
and bytes that are not valid UTF-8 are kept as they were (Pi rewrites them as U+FFFD); a line holding such
bytes cannot be matched, and when an ``oldText`` contains U+FFFD the not-found error says so. Edits of the same
file from parallel calls run one at a time (``_mutation``). The abort signal is checked between the steps and
while writing; an abort before the rename leaves the file untouched. Devices, pipes and sockets are refused. In a run
that keeps a checkpoint (``_file_journal``) the bytes read are recorded before the file is replaced.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..agent import AgentTool, AgentToolResult, ToolPrompt
from ..ai import AbortSignal, TextContent
from ._atomic import write_atomic
from ._common import FileToolError, Stop, in_thread, not_regular, required_string
from ._diff import diff_lines, generate_diff_string, generate_unified_patch
from ._edits import Edit, apply_edits, detect_line_ending, normalize_to_lf, restore_line_endings, strip_bom
from ._file_journal import FileJournal, file_journal, note_after, note_before
from ._mutation import file_mutation_lock
from ._paths import node_error, resolve_to_cwd

__all__ = ["edit_tool", "parse_edits", "prepare_edit_arguments", "preview_edit"]

DESCRIPTION = (
    "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping "
    "region of the original file. If two changes affect the same block or nearby lines, merge them into one edit "
    "instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes."
)
PROMPT = ToolPrompt(
    "Make precise file edits with exact text replacement, including multiple disjoint edits in one call",
    (
        "Use edit for precise changes (edits[].oldText must match exactly)",
        "When changing multiple separate locations in one file, use one edit call with multiple entries in edits[] "
        "instead of multiple edit calls",
        "Each edits[].oldText is matched against the original file, not after earlier edits are applied. Do not emit "
        "overlapping or nested edits. Merge nearby changes into one edit.",
        "Keep edits[].oldText as small as possible while still being unique in the file. Do not pad with large "
        "unchanged regions.",
    ),
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["path", "edits"],
    "properties": {
        "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["oldText", "newText"],
                "properties": {
                    "oldText": {
                        "type": "string",
                        "description": (
                            "Exact text for one targeted replacement. It must be unique in the original file and "
                            "must not overlap with any other edits[].oldText in the same call."
                        ),
                    },
                    "newText": {"type": "string", "description": "Replacement text for this targeted edit."},
                },
            },
            "description": (
                "One or more targeted replacements. Each edit is matched against the original file, not "
                "incrementally. Do not include overlapping or nested edits. If two changes touch the same block or "
                "nearby lines, merge them into one edit instead."
            ),
        },
    },
}
_INVALID = "Edit tool input is invalid. edits must contain at least one replacement."


def prepare_edit_arguments(raw: dict[str, Any]) -> dict[str, Any]:
    """Pi's ``prepareEditArguments``: ``edits`` as a JSON string, and legacy top-level ``oldText``/``newText``."""
    if not isinstance(raw, Mapping):
        return raw
    args = dict(raw)
    if isinstance(args.get("edits"), str):
        try:
            parsed = json.loads(args["edits"])
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            args["edits"] = parsed
    old, new = args.get("oldText"), args.get("newText")
    if not isinstance(old, str) or not isinstance(new, str):
        return args
    edits = list(args["edits"]) if isinstance(args.get("edits"), list) else []
    edits.append({"oldText": old, "newText": new})
    rest = {k: v for k, v in args.items() if k not in ("oldText", "newText")}
    return {**rest, "edits": edits}


def _clean(text: str) -> str:
    """Text from the model, with any lone surrogate (possible in JSON) made U+FFFD, as Node would write it."""
    if not any("\ud800" <= ch <= "\udfff" for ch in text):
        return text
    return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)


def parse_edits(args: Any) -> list[Edit]:
    """``edits`` as the model sent them (after ``prepare_edit_arguments``); raises ``FileToolError`` with Pi's texts."""
    items = args.get("edits") if isinstance(args, Mapping) else None
    if not isinstance(items, list) or not items:
        raise FileToolError(_INVALID)
    edits = []
    for item in items:
        old = item.get("oldText") if isinstance(item, Mapping) else None
        new = item.get("newText") if isinstance(item, Mapping) else None
        if not isinstance(old, str) or not isinstance(new, str):
            raise FileToolError("Edit tool input is invalid. Each edit needs string oldText and newText.")
        edits.append(Edit(_clean(old), _clean(new)))
    return edits


def _check_access(absolute: str, path: str) -> None:
    try:
        os.stat(absolute)
    except OSError as exc:
        code = node_error(exc, "access").code
        raise FileToolError(f"Could not edit file: {path}. Error code: {code}.", code) from None
    if not os.access(absolute, os.R_OK | os.W_OK):
        raise FileToolError(f"Could not edit file: {path}. Error code: EACCES.", "EACCES")


def _display(text: str) -> str:
    """What Pi (decoding with U+FFFD) shows for text we hold with undecodable bytes escaped."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _apply(content: str, edits: list[Edit], path: str) -> tuple[str, str]:
    try:
        return apply_edits(content, edits, path)
    except FileToolError as exc:
        lossy = any("\udc80" <= ch <= "\udcff" for ch in content)
        if lossy and str(exc).startswith("Could not find") and any("\ufffd" in e.old_text for e in edits):
            raise FileToolError(
                f"{exc} (The file is not valid UTF-8: text shown as \ufffd stands for bytes the edit tool keeps "
                "as they are and cannot match; change those lines another way, e.g. with bash.)"
            ) from None
        raise


def _edit(
    absolute: str, path: str, edits: list[Edit], stop: Stop, journal: FileJournal | None = None
) -> dict[str, Any]:
    _check_access(absolute, path)
    stop.check()
    if not os.path.isdir(absolute) and not os.path.isfile(absolute):
        raise not_regular("edit", path)
    try:
        with open(absolute, "rb") as file:
            raw = file.read()
    except OSError as exc:
        raise node_error(exc, "read") from None
    stop.check()
    bom, content = strip_bom(raw.decode("utf-8", "surrogateescape"))
    ending = detect_line_ending(content)
    base, new = _apply(normalize_to_lf(content), edits, path)
    stop.check()
    shown_base, shown_new = _display(base), _display(new)
    changes = diff_lines(shown_base, shown_new, stop)
    diff, first_changed = generate_diff_string(shown_base, shown_new, changes=changes)
    patch = generate_unified_patch(path, shown_base, shown_new, changes=changes)
    data = (bom + restore_line_endings(new, ending)).encode("utf-8", "surrogateescape")
    note_before(journal, absolute, raw)  # the run's checkpoint: the bytes read above, before the file changes
    try:
        write_atomic(absolute, data, stop)
    except OSError as exc:
        raise node_error(exc, "open", absolute) from None
    note_after(journal, absolute)
    return {"diff": diff, "patch": patch, "firstChangedLine": first_changed}


def edit_tool(cwd: str | Path | None = None) -> AgentTool:
    """Pi's ``edit`` tool resolving relative paths against ``cwd`` (``None``: the process's working directory at
    each call). See the module docstring; ``execute`` raises :class:`FileToolError` with Pi's texts.
    """
    root = None if cwd is None else os.fspath(cwd)

    async def execute(tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: Any) -> AgentToolResult:
        edits = parse_edits(args)
        path = required_string(args, "path", "edit")
        absolute = resolve_to_cwd(path, root if root is not None else os.getcwd())
        journal = file_journal.get()
        async with file_mutation_lock(absolute):
            details = await in_thread(lambda stop: _edit(absolute, path, edits, stop, journal), signal)
        text = f"Successfully replaced {len(edits)} block(s) in {path}."
        return AgentToolResult(content=[TextContent(text=text)], details=details)

    return AgentTool(
        name="edit",
        label="edit",
        description=DESCRIPTION,
        parameters=PARAMETERS,
        execute=execute,
        prepare_arguments=prepare_edit_arguments,
        approval="ask",
        preview=lambda args: f"{args.get('path')}\n\n{preview_edit(args, cwd)}",
        preview_syntax="diff",
        prompt=PROMPT,
    )


def preview_edit(args: Any, cwd: str | Path | None = None) -> str:
    """What an ``edit`` call would change, as Pi's display diff, without writing (for an approval prompt).
    A call that would fail gives its error text instead."""
    try:
        edits = parse_edits(prepare_edit_arguments(dict(args)) if isinstance(args, Mapping) else args)
        path = required_string(args, "path", "edit")
        absolute = resolve_to_cwd(path, os.fspath(cwd) if cwd is not None else os.getcwd())
        with open(absolute, "rb") as file:
            content = strip_bom(file.read().decode("utf-8", "surrogateescape"))[1]
        base, new = _apply(normalize_to_lf(content), edits, path)
    except FileToolError as exc:
        return f"(this edit would fail: {exc})"
    except OSError as exc:
        return f"(this edit would fail: {exc.strerror or exc})"
    return generate_diff_string(_display(base), _display(new))[0]
