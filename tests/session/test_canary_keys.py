"""Issue 30 item 2: a canary key configured each way a session can know one (``key_env``, ``api_key=``,
``get_api_key``, a credential header, an environment variable whose name says secret) is found nowhere after a run
(over real loopback HTTP, and with the faux model) whose tools print the environment and a file holding the key
(bash and python, output past the tail so the full output goes to a temp log), whose model writes the key into a
tool call's arguments and streams it, in small pieces, in its reply: not in the tools' environments, the results,
the events the session's listeners get, the session file, the cassette, the temp logs, the request bodies the
server received, the logs.
(``tests/notebook/test_canary_kernel.py`` does the same in a real kernel, comm messages included.)"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.agent import Hooks, MessageEndEvent, MessageStartEvent, MessageUpdateEvent
from pi_notebook.ai import Cassette, TextContent, ToolResultMessage, close_connections
from pi_notebook.ai.messages import message_to_json
from pi_notebook.ai.models import model_from_spec
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_notebook.kernel import python_tool
from pi_notebook.session import AgentSession, SessionStore, Settings
from pi_notebook.testing import FaultServer, Reply
from pi_notebook.testing._fault_script import ToolCallBlock
from pi_notebook.tools import bash_tool

CANARY = "canary-3f8a61d2c7e9b40"
WAYS = ["key_env", "api_key", "get_api_key", "header", "environment"]
FILLER = 70_000  # bytes of filler lines, past the 50 KB tail: the full output goes to a temp log


def configured(way: str, server: FaultServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The session's arguments with the canary configured ``way`` (and only so)."""
    for name in ("LLM_PROXY", "SERVICE_SECRET", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    spec = f"openai-compatible:{server.openai_base_url}:m"
    if way == "key_env":  # a variable whose name does not say "key": only key_env makes it one
        monkeypatch.setenv("LLM_PROXY", CANARY)
        return {"model": model_from_spec(spec, key_env="LLM_PROXY")}
    model = model_from_spec(spec)
    if way == "api_key":
        return {"model": model, "api_key": CANARY}
    if way == "get_api_key":
        return {"model": model, "hooks": Hooks(get_api_key=lambda provider: CANARY)}
    if way == "header":
        return {"model": model.model_copy(update={"headers": {"X-Auth-Token": CANARY}})}
    monkeypatch.setenv("SERVICE_SECRET", CANARY)  # never sent anywhere; the tools must not see it either
    return {"model": model}


def faux_script(replies: list[Reply]) -> FauxProvider:
    """The same turns from the faux model, streamed one 4-character token at a time."""
    faux = FauxProvider(token_size=(1, 1))
    messages = []
    for reply in replies:
        block = reply.blocks[0]
        if isinstance(block, ToolCallBlock):
            call = faux_tool_call(block.name, dict(block.arguments), id=block.id)  # type: ignore[arg-type]
            messages.append(faux_assistant_message([call], "toolUse"))
        else:
            messages.append(faux_assistant_message(block.text))  # type: ignore[union-attr]
    faux.set_responses(messages)
    return faux


def script(secret_file: Path) -> list[Reply]:
    bash = (
        f"cat {secret_file}; yes filler-line | head -n {FILLER // 12}; "
        f'env; echo "in env: [$LLM_PROXY][$SERVICE_SECRET]"; cat {secret_file}'
    )
    python = (
        "import os\n"
        f"secret = {str(secret_file)!r}\n"
        "with open(secret) as file:\n    print(file.read())\n"
        f"print('filler-line\\n' * {FILLER // 12})\n"
        "print(dict(os.environ))\n"
        "print('in environ:', os.environ.get('LLM_PROXY'), os.environ.get('SERVICE_SECRET'))\n"
        "with open(secret) as file:\n    print(file.read())"
    )
    return [
        Reply.tool_call("bash", {"command": bash}, id="call-bash"),
        Reply.tool_call("python", {"code": python}, id="call-python"),
        Reply.tool_call("bash", {"command": f"echo 'passed on: {CANARY}'"}, id="call-echo"),
        Reply.text(f"The key is {CANARY}, and again: {CANARY}.", chunk_chars=3),
    ]


class Seen:
    """What the session's listeners were given, as text: each event (a streaming step's delta; the message of
    ``message_start``/``message_update`` is the live partial the provider is still filling, see
    ``session._redact_reply``), and every message as it ended."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.deltas: list[str] = []

    def __call__(self, event: Any) -> None:
        if isinstance(event, MessageUpdateEvent):
            step = event.assistant_message_event
            self.deltas.append(getattr(step, "delta", ""))
            self.texts.append(f"{step.type}: {getattr(step, 'delta', '')}")
            return
        if isinstance(event, MessageStartEvent):
            self.texts.append(f"message_start {event.message.role}")
            return
        self.texts.append(repr(event))
        if isinstance(event, MessageEndEvent):
            self.texts.append(message_to_json(event.message))


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


@pytest.mark.parametrize("backend", ["fault server", "faux"])
@pytest.mark.parametrize("way", WAYS)
async def test_a_canary_key_configured_any_way_is_found_nowhere(
    way: str,
    backend: str,
    server: FaultServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the temp logs: ours alone, not a shared /tmp's
    options = configured(way, server, monkeypatch)
    secret_file = tmp_path / "dot-env"
    secret_file.write_text(f"KEY={CANARY}\n")
    replies = script(secret_file)
    if backend == "faux":
        faux = faux_script(replies)
        options["stream_fn"] = faux.stream
    else:
        server.script(replies)
    store = SessionStore(tmp_path / "session.jsonl")
    settings = Settings(retry={"enabled": False}, compaction={"enabled": False})
    tools = [bash_tool(tmp_path), python_tool(namespace={})]
    session = AgentSession(settings=settings, store=store, tools=tools, **options)
    seen = Seen()
    session.subscribe(seen)
    cassette = tmp_path / "cassette.jsonl"
    with Cassette(cassette, mode="all"):
        await session.prompt("print the environment")
    store.close()
    await close_connections()

    results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    texts = [block.text for m in results for block in m.content if isinstance(block, TextContent)]
    bash_text, python_text, echo_text = texts
    assert "in env: [][]" in bash_text and "KEY=***" in bash_text  # not in its environment; the file redacted
    assert "in environ: None None" in python_text and "KEY=***" in python_text
    assert echo_text == "passed on: ***\n"  # the call's arguments were redacted before it ran
    assert session.messages[-1].content[0].text == "The key is ***, and again: ***."  # type: ignore[union-attr]
    logs = [m.details["full_output_path"] for m in results[:2]]
    assert all(logs), "both outputs were long enough for a temp log"
    assert len(server.requests) == (4 if backend == "fault server" else 0)

    places = {
        "events": "\n".join(seen.texts),
        "streamed deltas, joined": "".join(seen.deltas),
        "session file": read(store.path),
        "cassette": read(cassette) if backend == "fault server" else "",
        "logs": caplog.text,
        **{f"temp log {n}": read(Path(path)) for n, path in enumerate(logs)},
        **{f"request {n} body": request.body.decode() for n, request in enumerate(server.requests)},
        **{f"request {n} path": request.path for n, request in enumerate(server.requests)},
    }
    assert [place for place, text in places.items() if CANARY in text] == []
    assert "KEY=***" in places["temp log 0"]  # the log kept the output, redacted
    if backend == "faux":
        return
    if way in ("key_env", "api_key", "get_api_key"):
        assert {request.api_key for request in server.requests} == {CANARY}  # the key itself was still used
    if way == "header":
        assert {request.headers.get("x-auth-token") for request in server.requests} == {CANARY}
