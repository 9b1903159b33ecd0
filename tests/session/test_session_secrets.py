"""API keys never show (issue 10, items 7, 8 and 8b): a key with a trailing newline is stripped, a key with a
control character inside is refused without being sent or retried, and no spelling of a key reaches a message, an
event, the session file or a repr (over real loopback HTTP, through a session, for both wire formats). Provider
keys stay out of the bash tool's environment, and a key a tool prints is redacted (the real bash tool, called by
the faux model through a session)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from wire_apis import APIS

from pi_notebook.agent import Agent, Hooks, LoopConfig
from pi_notebook.ai import AssistantMessage, Model, StreamOptions, TextContent, ToolResultMessage, close_connections
from pi_notebook.ai.messages import message_to_json
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_notebook.session import AgentSession, SessionStore, Settings
from pi_notebook.testing import Fault, FaultServer, Reply
from pi_notebook.tools import bash_tool

VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "responses": "OPENAI_API_KEY",
    "google": "GEMINI_API_KEY",
}
CORE = "canary-5e1f0c7d9b2a"  # every spelling of the key (raw, repr, JSON, percent-encoded) contains this
CANARY = f"sk-{CORE}"


def last_reply(session: AgentSession) -> AssistantMessage:
    """The session's last message, which must be the model's reply."""
    message = session.messages[-1]
    assert isinstance(message, AssistantMessage), message
    return message


def provider_model(api: str, server: FaultServer, **fields: Any) -> Model:
    """A model of the real provider name, so its environment variable is read."""
    if api in ("openai", "responses"):
        wire = "openai-completions" if api == "openai" else "openai-responses"
        return Model(id="gpt-test", api=wire, provider="openai", base_url=server.openai_base_url, **fields)
    if api == "google":
        return Model(
            id="gemini-test", api="google-generative-ai", provider="google", base_url=server.google_base_url, **fields
        )
    return Model(
        id="claude-test", api="anthropic-messages", provider="anthropic", base_url=server.anthropic_base_url, **fields
    )


class Everything:
    """Every place a key could show: the events (as repr and as JSON of their messages), and whatever the test
    adds (the session file, reprs, messages)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.types: list[str] = []

    def __call__(self, event: Any, signal: Any = None) -> None:
        self.types.append(event.type)
        self.texts.append(repr(event))
        message = getattr(event, "message", None)
        if message is not None and hasattr(message, "model_dump_json"):
            self.texts.append(message_to_json(message))

    def hits(self, needle: str = CORE) -> list[str]:
        return [text for text in self.texts if needle in text]


def session_for(
    api: str, server: FaultServer, tmp_path: Path, model: Model | None = None, **options: Any
) -> tuple[AgentSession, Everything]:
    settings = Settings(retry={"base_delay_ms": 1, "max_retries": 2}, compaction={"enabled": False})
    store = SessionStore(tmp_path / f"{api}.jsonl")
    session = AgentSession(model=model or provider_model(api, server), settings=settings, store=store, **options)
    seen = Everything()
    session.subscribe(seen)
    session.agent.subscribe(seen)
    return session, seen


async def settle(session: AgentSession, seen: Everything, server: FaultServer) -> None:
    assert session.store is not None
    session.store.close()
    await close_connections()
    await server.wait_until_async(lambda s: s.open_connections == 0)
    seen.texts.append(session.store.path.read_text(encoding="utf-8"))
    seen.texts += [message_to_json(m) for m in session.messages if hasattr(m, "model_dump_json")]
    seen.texts += [repr(m) for m in session.messages]
    seen.texts += [repr(session), repr(session.agent), repr(vars(session.agent)), repr(session.agent.stream_options)]


def echo_fault() -> Any:
    """A 401 whose message quotes the key with its newline in three spellings (as proxies and SDKs do)."""
    raw = CANARY + "\n"
    return Fault.status(401, message=f"bad key {raw!r} / {quote(raw)} / {json.dumps(raw)} / {CANARY}")


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("source", ["env", "api_key", "get_api_key"])
async def test_a_key_with_a_trailing_newline_is_stripped_and_no_spelling_of_it_shows(
    api: str, source: str, server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = CANARY + "\n"
    options: dict[str, Any] = {}
    if source == "env":
        monkeypatch.setenv(VARIABLES[api], raw)
    else:
        monkeypatch.delenv(VARIABLES[api], raising=False)
        options = {"api_key": raw} if source == "api_key" else {"hooks": Hooks(get_api_key=lambda provider: raw)}
    server.script([Reply.text("hello"), echo_fault()])
    session, seen = session_for(api, server, tmp_path, **options)

    await session.prompt("first")
    assert last_reply(session).stop_reason == "stop"
    assert server.requests[0].api_key == CANARY  # sent without the newline

    await session.prompt("second")  # the server quotes the key back in its error
    failed = last_reply(session)
    assert failed.stop_reason == "error"
    assert "***" in (failed.error_message or "")
    assert len(server.requests) == 2  # a 401 is not retried
    await settle(session, seen, server)
    assert seen.hits() == []


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("inner", ["\x01", "\n", "\u00e9"])
async def test_a_key_with_a_control_or_non_ascii_character_inside_is_refused_unsent_and_not_retried(
    api: str, inner: str, server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLES[api], f"{CANARY[:8]}{inner}{CANARY[8:]}\n")
    session, seen = session_for(api, server, tmp_path)
    await session.prompt("hello")
    failed = last_reply(session)
    assert failed.stop_reason == "error"
    assert failed.error_message is not None
    assert failed.error_message.startswith(f"The API key for provider {failed.provider} (from {VARIABLES[api]}) ")
    assert server.requests == []
    assert "auto_retry_start" not in seen.types
    await settle(session, seen, server)
    assert seen.hits() == []
    assert seen.hits(CANARY[8:]) == []


@pytest.mark.parametrize("api", APIS)
async def test_a_credential_header_the_transport_refuses_is_scrubbed_and_not_retried(
    api: str, server: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(VARIABLES[api], "sk-a-valid-looking-key")
    model = provider_model(api, server, headers={"x-custom-token": CANARY + "\n"})
    session, seen = session_for(api, server, tmp_path, model=model)
    await session.prompt("hello")
    failed = last_reply(session)
    assert failed.stop_reason == "error"
    assert (failed.error_message or "").startswith("Invalid request, not sent: ")
    assert server.requests == []
    assert "auto_retry_start" not in seen.types
    await settle(session, seen, server)
    assert seen.hits() == []


def test_no_object_that_holds_a_key_shows_it() -> None:
    headers = {"Authorization": f"Bearer {CANARY}", "x-api-key": CANARY, "x-trace": "visible"}
    model = Model(id="m", api="openai-completions", provider="openai", headers=headers)
    options = StreamOptions(api_key=CANARY, headers=headers)
    config = LoopConfig(model=model, api_key=CANARY, stream_options=options)
    agent = Agent(model=model, api_key=CANARY, stream_options=options)
    session = AgentSession(model=model, api_key=CANARY, stream_options=options, settings=Settings())
    shown = [
        *(text for obj in (model, options, config, agent, session, session.agent) for text in (repr(obj), str(obj))),
        repr(vars(agent)),
        model.model_dump_json(),
        repr(model.model_dump()),
        repr(model.model_dump(by_alias=True)),
        session.settings.model_dump_json(),
    ]
    assert [text for text in shown if CORE in text] == []
    assert "visible" in repr(model)  # only credentials are masked
    # the key is still there to be used
    assert model.headers is not None and model.headers["x-api-key"] == CANARY
    assert agent.api_key is not None and agent.api_key.get_secret_value() == CANARY
    assert options.api_key_value() == CANARY


# ------------------------------------------------------------------ keys out of tool environments and results
KEYS = {
    "OPENAI_API_KEY": "sk-openai-canary-8c41d2e07f",
    "ANTHROPIC_API_KEY": "sk-ant-canary-19b7e3a6c5",
    "session": "sk-session-canary-4d0a6f92e1",
    "asked": "sk-asked-canary-7e25b1c0d8",
}
PRINT = 'env; echo "o=[$OPENAI_API_KEY] a=[$ANTHROPIC_API_KEY] s=[$MY_COPY] g=[$ASKED_COPY]"'


async def run_tool_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, **tool_options: Any
) -> tuple[str, Everything, list[ToolResultMessage]]:
    """A faux model calls the real bash tool with ``command``; returns the tool result's text, every place a key
    could show (events, the session file, the contexts the model was sent) and the tool results."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(name, KEYS[name])
    contexts: list[Any] = []

    def final(context: Any, options: Any, state: Any, model: Any) -> Any:
        contexts.append(context)
        return faux_assistant_message("done")

    faux = FauxProvider()
    faux.set_responses([faux_assistant_message([faux_tool_call("bash", {"command": command})], "toolUse"), final])
    tool = bash_tool(env={"MY_COPY": KEYS["session"], "ASKED_COPY": KEYS["asked"]}, **tool_options)
    store = SessionStore(tmp_path / "tools.jsonl")
    session = AgentSession(
        model=faux.model,
        stream_fn=faux.stream,
        tools=[tool],
        store=store,
        api_key=KEYS["session"],
        hooks=Hooks(get_api_key=lambda provider: KEYS["asked"]),
    )
    seen = Everything()
    session.subscribe(seen)
    session.agent.subscribe(seen)
    await session.prompt("print the environment")
    results = [m for m in session.messages if isinstance(m, ToolResultMessage)]
    store.close()
    seen.texts.append(store.path.read_text(encoding="utf-8"))
    seen.texts += [repr(context.messages) for context in contexts]
    block = results[0].content[0]
    assert isinstance(block, TextContent), block
    return block.text, seen, results


def key_hits(seen: Everything) -> dict[str, int]:
    return {name: len(seen.hits(key[3:])) for name, key in KEYS.items() if seen.hits(key[3:])}


async def test_provider_keys_are_left_out_of_the_bash_environment_and_known_keys_are_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, seen, _ = await run_tool_session(tmp_path, monkeypatch, PRINT)
    assert "o=[] a=[]" in text  # not in the tool's environment
    assert "s=[***] g=[***]" in text  # passed explicitly, printed, redacted
    assert "OPENAI_API_KEY=" not in text and "ANTHROPIC_API_KEY=" not in text
    assert "MY_COPY=***" in text
    assert "tool_execution_update" in seen.types
    assert key_hits(seen) == {}


async def test_with_provider_keys_passed_the_values_a_command_prints_are_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, seen, _ = await run_tool_session(tmp_path, monkeypatch, PRINT, provider_keys=True)
    assert "o=[***] a=[***] s=[***] g=[***]" in text
    assert "OPENAI_API_KEY=***" in text and "ANTHROPIC_API_KEY=***" in text
    assert key_hits(seen) == {}


async def test_a_key_in_a_failing_command_s_error_text_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, seen, results = await run_tool_session(
        tmp_path, monkeypatch, 'echo "o=[$OPENAI_API_KEY]"; exit 3', provider_keys=True
    )
    assert results[0].is_error
    assert text == "o=[***]\n\n\nCommand exited with code 3"
    assert key_hits(seen) == {}


async def test_gemini_keys_are_left_out_of_the_bash_environment_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "gm-canary-gemini-3c1a9e")
    monkeypatch.setenv("GOOGLE_API_KEY", "gg-canary-google-71b0d4")
    text, seen, _ = await run_tool_session(tmp_path, monkeypatch, 'echo "g=[$GEMINI_API_KEY] o=[$GOOGLE_API_KEY]"')
    assert "g=[] o=[]" in text
    assert not seen.hits("canary-gemini") and not seen.hits("canary-google")
