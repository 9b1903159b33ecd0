"""Our session files, damaged and repaired ones included, load in Pi 0.83's own SessionManager (Node 22 and
``@earendil-works/pi-coding-agent`` 0.83 in ``$PI083_DIR/node_modules``, default ``~/.cache/pi-notebook/pi083``,
where ``bash tests/pi083/up.sh`` installs them; without them the tests skip, saying so)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from pi083 import MANAGER, NODE, require_pi

from pi_notebook.ai import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from pi_notebook.ai.messages import text_of
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
from pi_notebook.notebook._registry import SessionRegistry
from pi_notebook.session import CompactionSummaryMessage, SessionStore, load_session

READ_WITH_PI = """
const { SessionManager } = await import(process.argv[1]);
const manager = SessionManager.open(process.argv[2], process.argv[3]);
const text = (m) => typeof m.content === "string" ? m.content
  : (m.content ?? []).map((b) => b.text ?? (b.type === "toolCall" ? JSON.stringify(b.arguments) : "")).join("");
const messages = manager.buildSessionContext().messages;
console.log(JSON.stringify(messages.map((m) => [m.role, m.role === "compactionSummary" ? m.summary : text(m)])));
"""


def read_with_pi(path: Path) -> list[list[Any]]:
    require_pi()
    done = subprocess.run(
        [str(NODE), "--input-type=module", "-e", READ_WITH_PI, MANAGER.as_uri(), str(path), str(path.parent)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: list[list[Any]] = json.loads(done.stdout)
    return result


def ours(path: Path) -> list[list[Any]]:
    out: list[list[Any]] = []
    for message in load_session(path).messages:
        if isinstance(message, CompactionSummaryMessage):
            out.append([message.role, message.summary])
        elif isinstance(message, AssistantMessage):
            parts = [b.text if isinstance(b, TextContent) else "" for b in message.content]
            parts += [
                json.dumps(b.arguments, separators=(",", ":")) for b in message.content if isinstance(b, ToolCall)
            ]
            out.append([message.role, "".join(parts)])
        else:
            out.append([message.role, text_of(message)])  # type: ignore[arg-type]
    return out


def test_a_file_with_surrogates_a_compaction_and_a_repaired_torn_line_loads_in_pi(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    kept = UserMessage(content=[TextContent(text="kept é \ud800")])
    call = ToolCall(id="c1", name="bash", arguments={"command": "echo \udc80"})
    with SessionStore(path) as store:
        store.append_message(UserMessage(content="old question"))
        store.append_message(kept)
        store.append_message(AssistantMessage(content=[TextContent(text="half \ud83d"), call], stop_reason="toolUse"))
        summary = CompactionSummaryMessage(summary="summary \u2603", tokens_before=10)
        store.append_compaction(summary, kept)
        store.append_message(ToolResultMessage(tool_call_id="c1", tool_name="bash", content=[TextContent(text="ok")]))
    with open(path, "ab") as file:
        file.write(b'{"type":"message","id":"torn","parentId":null,"message":{"role":"user","content":"\xc3')
    with SessionStore(path) as store:
        store.append_message(UserMessage(content="after the tear"))
    expected = ours(path)
    assert [role for role, _ in expected] == ["compactionSummary", "user", "assistant", "toolResult", "user"]
    assert read_with_pi(path) == expected


LIST_AND_APPEND_WITH_PI = """
const { SessionManager } = await import(process.argv[1]);
const sessions = await SessionManager.list(process.argv[2]);  // Pi's default folder for this cwd
const manager = SessionManager.open(sessions[0].path);
manager.appendMessage({ role: "user", content: [{ type: "text", text: "appended by pi" }], timestamp: Date.now() });
const [info] = sessions;
const seen = { count: sessions.length, path: info.path, first: info.firstMessage, n: info.messageCount };
console.log(JSON.stringify(seen));
"""


def test_pi_finds_a_notebook_saved_session_in_its_own_folder_layout_and_appends_to_it(tmp_path: Path) -> None:
    require_pi()
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("saved by default")])
    registry = SessionRegistry()
    registry.notebook = "work/analysis.ipynb"
    # sessions.dir = <agent dir>/sessions: then our per-cwd folder is the one Pi itself uses
    entry = registry.configure(faux.model, faux.stream, settings={"sessions": {"dir": str(tmp_path / "sessions")}})
    asyncio.run(entry.session.prompt("hello from the notebook"))
    path = entry.file
    entry.dispose()
    assert path is not None and json.loads(path.read_text().splitlines()[0])["notebook"] == "work/analysis.ipynb"
    done = subprocess.run(
        [str(NODE), "--input-type=module", "-e", LIST_AND_APPEND_WITH_PI, MANAGER.as_uri(), os.getcwd()],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen == {"count": 1, "path": str(path), "first": "hello from the notebook", "n": 2}
    assert ours(path)[-1] == ["user", "appended by pi"] and len(load_session(path).messages) == 3
