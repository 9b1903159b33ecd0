"""Cassettes over real loopback HTTP: record against the fault server, close it, replay through the same provider
code. Modes, matching, secrets, timing, Stop, transport failures, and the file format."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from wire_apis import APIS, model_for

from pi_notebook.ai import (
    AbortController,
    AssistantMessage,
    AssistantMessageEvent,
    Cassette,
    CassetteError,
    Context,
    Model,
    StreamOptions,
    TextContent,
    UserMessage,
    close_connections,
    complete,
    stream,
)
from pi_notebook.ai.cassette._format import Chunk, decode_bytes, encode_bytes
from pi_notebook.ai.cassette._match import Redactor, first_difference, without_fields
from pi_notebook.ai.retry import is_retryable_assistant_error
from pi_notebook.testing import Fault, FaultServer, Reply

CANARY = "sk-canary-7f3e9d1c5b"
ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "google": "GEMINI_API_KEY"}
AUTH_HEADER = {
    "openai": "authorization",
    "anthropic": "x-api-key",
    "responses": "authorization",
    "google": "x-goog-api-key",
}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "cassettes" / "demo.jsonl"


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The canary is the key while recording; no test here leaves a mode override behind."""
    for variable in ENV.values():
        monkeypatch.setenv(variable, CANARY)
    monkeypatch.delenv("PI_NOTEBOOK_CASSETTE_MODE", raising=False)


def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ENV.values():
        monkeypatch.delenv(variable)


def context(text: str = "hello") -> Context:
    return Context(system_prompt="be brief", messages=[UserMessage(content=[TextContent(text=text)])])


async def run_stream(
    model: Model,
    text: str = "hello",
    on_event: Callable[[AssistantMessageEvent], None] | None = None,
    **options: Any,
) -> tuple[list[str], AssistantMessage]:
    """The event types and the final message of one streamed request."""
    types: list[str] = []
    response = stream(model, context(text), StreamOptions(**options))
    async for event in response:
        types.append(event.type)
        if on_event is not None:
            on_event(event)
    return types, await response.result()


def first_text(message: AssistantMessage) -> str:
    """The text of the message's first block, which must be a text block."""
    block = message.content[0]
    assert isinstance(block, TextContent), block
    return block.text


def same_message(message: AssistantMessage) -> dict[str, Any]:
    return message.model_dump(exclude={"timestamp"})


async def close_server(server: FaultServer) -> None:
    await close_connections()
    server.close()


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in read(path).splitlines()]


def read(path: Path) -> str:
    """The file's text ('' when there is none); small, so reading it in a test's event loop is fine."""
    return path.read_text() if path.exists() else ""


# ------------------------------------------------------------------------------------------ record, replay


@pytest.mark.parametrize("api", APIS)
async def test_a_stream_replays_with_the_server_stopped_and_no_key(
    api: str, server: FaultServer, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script([Reply.text("hello from the server", chunk_chars=3)])
    model = model_for(api, server.base_url)
    with Cassette(path) as cassette:
        live = await run_stream(model)
    assert (cassette.recorded, cassette.replayed) == (1, 0)
    await close_server(server)
    no_keys(monkeypatch)
    with Cassette(path, mode="none") as cassette:
        replayed = await run_stream(model)
    assert (cassette.recorded, cassette.replayed, cassette.unplayed) == (0, 1, 0)
    assert live[1].stop_reason == "stop"
    assert replayed[0] == live[0]
    assert same_message(replayed[1]) == same_message(live[1])
    assert CANARY not in read(path)


@pytest.mark.parametrize("api", APIS)
async def test_a_429_then_success_replays_the_layer_one_retry_and_its_wait(
    api: str, server: FaultServer, path: Path
) -> None:
    server.script([Fault.rate_limit(headers={"retry-after-ms": "150"}), Reply.text("after the limit")])
    model = model_for(api, server.base_url)
    with Cassette(path):
        live = await run_stream(model, max_retries=2)
    await close_server(server)
    started = time.monotonic()
    with Cassette(path, mode="none") as cassette:
        replayed = await run_stream(model, max_retries=2)
    assert time.monotonic() - started >= 0.15  # the client honours the recorded retry-after-ms again
    assert cassette.replayed == 2
    assert [line["response"]["status"] for line in lines(path)[1:]] == [429, 200]
    assert same_message(replayed[1]) == same_message(live[1])
    assert first_text(replayed[1]) == "after the limit"


@pytest.mark.parametrize("api", APIS)
async def test_error_statuses_replay_with_the_same_error_text(api: str, server: FaultServer, path: Path) -> None:
    server.script([Fault.overflow()])
    model = model_for(api, server.base_url)
    with Cassette(path):
        live = await run_stream(model)
    await close_server(server)
    with Cassette(path, mode="none"):
        replayed = await run_stream(model)
    assert live[1].stop_reason == "error"
    assert replayed[1].error_message == live[1].error_message
    assert any(words in (live[1].error_message or "") for words in ("too long", "context window", "token count"))


@pytest.mark.parametrize("api", APIS)
async def test_a_reset_mid_stream_replays_the_partial_message_and_the_error(
    api: str, server: FaultServer, path: Path
) -> None:
    server.script([Reply.text("partial answer here", fault=Fault.reset(after_events=4))])
    model = model_for(api, server.base_url)
    with Cassette(path):
        live = await run_stream(model)
    await close_server(server)
    with Cassette(path, mode="none"):
        replayed = await run_stream(model)
    assert live[1].stop_reason == "error"
    assert lines(path)[1]["response"]["end"] == "error"
    assert replayed[0] == live[0]
    assert same_message(replayed[1]) == same_message(live[1])


async def test_a_refused_connection_is_recorded_and_replayed(path: Path) -> None:
    model = model_for("openai", FaultServer.refused_url())
    with Cassette(path):
        live = await run_stream(model)
    with Cassette(path, mode="none"):
        replayed = await run_stream(model)
    assert live[1].error_message and live[1].error_message.startswith("Connection error")
    assert replayed[1].error_message == live[1].error_message
    [line] = lines(path)[1:]
    assert line["response"] is None and line["error"]["type"] == "ConnectError"


async def test_a_tool_call_stream_replays_the_same_call(server: FaultServer, path: Path) -> None:
    server.script([Reply.tool_call("bash", {"command": "ls"}, id="call_1", chunk_chars=2)])
    model = model_for("anthropic", server.base_url)
    with Cassette(path):
        live = await run_stream(model)
    await close_server(server)
    with Cassette(path, mode="none"):
        replayed = await run_stream(model)
    assert live[1].stop_reason == "toolUse"
    assert replayed[0] == live[0]
    assert same_message(replayed[1]) == same_message(live[1])


# ------------------------------------------------------------------------------------------------- modes


async def test_none_with_an_unmatched_request_is_the_streams_error_naming_it_and_sends_nothing(
    server: FaultServer, path: Path
) -> None:
    server.script([Reply.text("recorded")])
    model = model_for("openai", server.base_url)
    with Cassette(path):
        await run_stream(model, "the recorded question")
    server.script([Reply.text("must not be sent")])
    with Cassette(path, mode="none"):
        types, message = await run_stream(model, "a question never recorded")
    assert len(server.requests) == 1  # the unmatched request never left the process
    assert types == ["error"]
    assert message.stop_reason == "error"
    text = message.error_message or ""
    assert text.startswith(f"CassetteError: cassette {path} (mode none) has no recorded response for POST ")
    assert f"{server.openai_base_url}/chat/completions" in text
    closest = "the closest recorded request (exchange 1 in the file, of 1 at this URL) differs first at "
    assert closest + 'messages[1].content: "the recorded question" != "a question never recorded"' in text
    # Never retried, whatever digits its URL holds (a port like 5031 reads as a 503 to the text classifier).
    assert message.request_failure is not None and message.request_failure.should_retry is False
    assert not is_retryable_assistant_error(message)


async def test_a_miss_names_the_closest_recording_and_goes_to_the_misses_file(
    server: FaultServer, path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The closest is the recording whose body agrees longest; each miss is a JSON line in the misses file."""
    server.script([Reply.text("a"), Reply.text("b"), Reply.text("c")])
    model = model_for("openai", server.base_url)
    with Cassette(path):
        for text in ("What is a cassette?", "What is a tape?", "Why replay?"):
            await run_stream(model, text)
    misses = tmp_path / "misses.jsonl"
    monkeypatch.setenv("PI_NOTEBOOK_CASSETTE_MISSES", str(misses))
    with Cassette(path, mode="none"):
        _, message = await run_stream(model, "What is a tapes?")
    expected = (
        "the closest recorded request (exchange 2 in the file, of 3 at this URL) differs first at "
        'messages[1].content: "What is a tape?" != "What is a tapes?" (recorded != sent)'
    )
    assert expected in (message.error_message or "")
    [line] = lines(misses)
    assert line["cassette"] == str(path)
    assert line["message"] in (message.error_message or "")
    assert expected in line["message"]


async def test_notes_are_written_while_recording_and_given_back_once_each_in_replay(
    server: FaultServer, path: Path
) -> None:
    server.script([Reply.text("a")])
    model = model_for("openai", server.base_url)
    key = {"tool": "python", "call": "call_1"}
    with Cassette(path) as cassette:
        assert cassette.recall("approval", key) is None  # nothing recorded yet
        cassette.remember("approval", key, {"action": "run"})
        await run_stream(model)
        cassette.remember("approval", key, {"action": "skip"})
    kinds = [list(line) for line in lines(path)]
    assert kinds == [["pi_notebook_cassette"], ["note"], ["request", "response"], ["note"]]
    with Cassette(path, mode="none") as cassette:
        cassette.remember("approval", key, {"action": "always"})  # replay-only: not written
        assert cassette.recall("approval", {"tool": "python", "call": "other"}) is None
        assert cassette.recall("approval", key) == {"action": "run"}
        assert cassette.recall("approval", key) == {"action": "skip"}
        assert cassette.recall("approval", key) is None
        assert cassette.unplayed == 1  # notes are not exchanges
    assert len(lines(path)) == 4


async def test_none_without_a_file_fails_on_entering(path: Path) -> None:
    with pytest.raises(CassetteError, match=r"does not exist \(mode none only replays\)"), Cassette(path, mode="none"):
        pass


async def test_once_records_when_the_file_is_missing_then_only_replays(server: FaultServer, path: Path) -> None:
    server.script([Reply.text("first")])
    model = model_for("openai", server.base_url)
    with Cassette(path) as cassette:
        assert not cassette.offline
        await run_stream(model, "one")
    with Cassette(path) as cassette:
        assert cassette.offline
        _, replayed = await run_stream(model, "one")
        _, unmatched = await run_stream(model, "two")
    assert first_text(replayed) == "first"
    assert "(mode once) has no recorded response" in (unmatched.error_message or "")
    assert len(server.requests) == 1


async def test_new_replays_what_it_has_and_appends_what_it_has_not(server: FaultServer, path: Path) -> None:
    model = model_for("openai", server.base_url)
    server.script([Reply.text("old answer")])
    with Cassette(path):
        await run_stream(model, "old")
    server.script([Reply.text("new answer")])
    with Cassette(path, mode="new") as cassette:
        _, old = await run_stream(model, "old")
        _, new = await run_stream(model, "new")
    assert (cassette.replayed, cassette.recorded) == (1, 1)
    assert cassette.describe().endswith("mode new, replaying, recording new requests, timing fast; "
                                        "1 replayed, 1 recorded, 0 not replayed yet")  # fmt: skip
    assert (first_text(old), first_text(new)) == ("old answer", "new answer")
    assert len(server.requests) == 2
    assert len(lines(path)) == 3


async def test_all_records_everything_again_and_rewrites_the_file(server: FaultServer, path: Path) -> None:
    model = model_for("openai", server.base_url)
    server.script([Reply.text("first take", chunk_chars=50), Reply.text("second take", chunk_chars=50)])
    with Cassette(path):
        await run_stream(model)
    with Cassette(path, mode="all"):
        await run_stream(model)
    [header, exchange] = lines(path)
    assert header == {"pi_notebook_cassette": 1}
    assert "second take" in json.dumps(exchange)
    assert len(server.requests) == 2


async def test_the_environment_forces_replay_only(
    server: FaultServer, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = model_for("openai", server.base_url)
    monkeypatch.setenv("PI_NOTEBOOK_CASSETTE_MODE", "none")
    with pytest.raises(CassetteError, match="mode none from PI_NOTEBOOK_CASSETTE_MODE only replays"), Cassette(path):
        pass
    monkeypatch.delenv("PI_NOTEBOOK_CASSETTE_MODE")
    server.script([Reply.text("recorded")])
    with Cassette(path):
        await run_stream(model, "known")
    monkeypatch.setenv("PI_NOTEBOOK_CASSETTE_MODE", "none")
    with Cassette(path, mode="all") as cassette:
        assert cassette.effective_mode == "none"
        _, known = await run_stream(model, "known")
        _, unknown = await run_stream(model, "unknown")
    assert first_text(known) == "recorded"
    assert "(mode none from PI_NOTEBOOK_CASSETTE_MODE)" in (unknown.error_message or "")
    assert len(server.requests) == 1
    monkeypatch.setenv("PI_NOTEBOOK_CASSETTE_MODE", "sometimes")
    with pytest.raises(CassetteError, match="'sometimes' is not a cassette mode"), Cassette(path):
        pass


async def test_without_a_key_recording_still_fails_as_without_a_cassette(
    server: FaultServer, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_keys(monkeypatch)
    with Cassette(path):
        _, message = await run_stream(model_for("openai", server.base_url))
    assert message.error_message == "No API key for provider openai: set OPENAI_API_KEY or pass api_key"
    assert read(path) == ""


async def test_a_key_env_model_replays_with_no_key_in_mode_none(
    server: FaultServer, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``%pi model ... --key-env VAR``: the variable holds the key while recording; replay-only needs none."""
    server.script([Reply.text("answered with the proxy's key")])
    model = model_for("openai", server.base_url).model_copy(update={"provider": "litellm", "key_env": "PROXY_KEY"})
    monkeypatch.setenv("PROXY_KEY", CANARY)
    with Cassette(path):
        _, live = await run_stream(model)
    assert server.requests[0].api_key == CANARY
    assert CANARY not in read(path)
    await close_server(server)
    monkeypatch.delenv("PROXY_KEY")
    with Cassette(path, mode="none") as cassette:
        _, replayed = await run_stream(model)
    assert cassette.replayed == 1
    assert first_text(replayed) == first_text(live) == "answered with the proxy's key"
    with Cassette(path):  # mode once with the file there: replay-only too
        _, again = await run_stream(model)
    assert first_text(again) == "answered with the proxy's key"
    _, without = await run_stream(model)  # no cassette: the key is required, as before
    assert without.error_message == f"No API key for model {model.id}: set the environment variable PROXY_KEY"


def test_bad_arguments_and_bad_files_are_clear_errors(path: Path) -> None:
    with pytest.raises(ValueError, match="unknown cassette mode 'sometimes'"):
        Cassette(path, mode="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown cassette timing 'slow'"):
        Cassette(path, timing="slow")  # type: ignore[arg-type]
    path.parent.mkdir(parents=True)
    path.write_text('{"something": "else"}\n')
    with pytest.raises(CassetteError, match="line 1: not a pi_notebook cassette"):
        Cassette(path).load()
    path.write_text('{"pi_notebook_cassette": 1}\n{"request": {}}\n')
    with pytest.raises(CassetteError, match="line 2: 'method'"):
        Cassette(path).load()
    with pytest.raises(CassetteError, match="is not a file"):
        Cassette(path.parent).load()


# ---------------------------------------------------------------------------------------------- matching


async def test_identical_requests_replay_in_recorded_order_each_once(server: FaultServer, path: Path) -> None:
    model = model_for("openai", server.base_url)
    server.script([Reply.text("first"), Reply.text("second")])
    with Cassette(path):
        await run_stream(model)
        await run_stream(model)
    with Cassette(path, mode="none"):
        answers = [(await run_stream(model))[1] for _ in range(3)]
    assert [first_text(a) for a in answers[:2]] == ["first", "second"]
    assert "its 2 recorded response(s) were all replayed already" in (answers[2].error_message or "")


async def test_one_object_keeps_its_place_a_new_one_starts_over(server: FaultServer, path: Path) -> None:
    model = model_for("openai", server.base_url)
    server.script([Reply.text("first"), Reply.text("second")])
    with Cassette(path):
        await run_stream(model)
        await run_stream(model)
    cassette = Cassette(path, mode="none")
    with cassette:
        _, first = await run_stream(model)
    with cassette:
        _, second = await run_stream(model)
    with Cassette(path, mode="none"):
        _, again = await run_stream(model)
    texts = [first_text(m) for m in (first, second, again)]
    assert texts == ["first", "second", "first"]


async def test_ignored_body_fields_do_not_take_part_in_matching(server: FaultServer, path: Path) -> None:
    model = model_for("openai", server.base_url)
    server.script([Reply.text("warm")])
    with Cassette(path):
        await run_stream(model, temperature=0.1)
    with Cassette(path, mode="none"):
        _, strict = await run_stream(model, temperature=0.9)
    with Cassette(path, mode="none", ignore_body_fields=["temperature"]):
        _, loose = await run_stream(model, temperature=0.9)
    assert "differs first at temperature: 0.1 != 0.9 (recorded != sent)" in (strict.error_message or "")
    assert first_text(loose) == "warm"


def test_field_paths_match_keys_and_list_items_with_a_wildcard() -> None:
    body = {"a": 1, "meta": {"id": 2, "keep": 3}, "items": [{"t": 1, "x": 2}, {"t": 3, "x": 4}]}
    trimmed = without_fields(body, [["a"], ["meta", "id"], ["items", "*", "t"]])
    assert trimmed == {"meta": {"keep": 3}, "items": [{"x": 2}, {"x": 4}]}
    assert without_fields(body, [["items", "1"]])["items"] == [{"t": 1, "x": 2}]
    assert str(first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]})) == "a[1].b: 2 != 3"
    assert str(first_difference({"a": [1]}, {"a": [1, {"b": [2]}]})) == 'a[1]: (absent) != {"b": [2]}'
    assert str(first_difference({"a": 1, "z": 1}, {"z": 1})) == "a: 1 != (absent)"
    assert str(first_difference({"a": 1}, {"a": 1.0})) == "a: 1 != 1.0"
    assert str(first_difference(1, "1")) == 'the body: 1 != "1"'
    assert first_difference([1], [1]) is None


def test_a_difference_in_a_long_text_is_shown_around_where_it_starts() -> None:
    before = "You are a helpful assistant. " * 10
    found = first_difference({"messages": [{"content": before + "Be brief."}]}, {"messages": [{"content": before}]})
    assert found is not None and found.path == "messages[0].content"
    recorded, sent = str(found).removeprefix("messages[0].content: ").split(" != ")
    assert recorded.startswith('…"') and recorded.endswith('Be brief."')
    assert sent.startswith('…"') and sent.endswith('assistant. "')
    assert len(recorded) < 80


# ----------------------------------------------------------------------------------------------- secrets


@pytest.mark.parametrize("api", APIS)
async def test_no_key_reaches_the_file_from_headers_environment_bodies_or_settings(
    api: str, server: FaultServer, path: Path
) -> None:
    other = "org-secret-4d2a9b"
    server.script(
        [
            Fault.status(401, message=f"Incorrect API key provided: {CANARY}"),
            Reply.text(f"your key is {CANARY} and {other}", chunk_chars=200),
        ]
    )
    model = model_for(api, server.base_url)
    with Cassette(path, secrets=[other]):
        _, unauthorized = await run_stream(model)
        _, echoed = await run_stream(model, f"remember {other}", api_key="sk-from-options-8c1e")
    text = read(path)
    assert unauthorized.stop_reason == "error"
    assert CANARY in first_text(echoed)  # live, the client sees it all
    for secret in (CANARY, other, "sk-from-options-8c1e"):
        assert secret not in text
    first, second = lines(path)[1:]
    assert first["request"]["headers"][AUTH_HEADER[api]] == "[redacted]"
    assert "Incorrect API key provided: " + "*" * len(CANARY) in first["response"]["body"][0][1]
    assert "remember [redacted]" in json.dumps(second["request"]["json"])
    await close_server(server)
    with Cassette(path, mode="none", secrets=[other]):  # the same secret in the prompt still matches
        _, replayed = await run_stream(model, f"remember {other}", api_key="sk-from-options-8c1e")
    assert replayed.stop_reason == "stop"


async def test_credential_headers_and_environment_secrets_of_any_name_are_masked_by_the_one_rule(
    server: FaultServer, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30 item 8: headers whose names say auth/key/token/secret/cookie/signature (not only the five the
    cassette listed) are ``[redacted]``, and a secret in an environment variable not named ``*_API_KEY``
    (``SERVICE_TOKEN``, ``DB_PASSWORD``) is masked wherever it appears."""
    headers = {
        "X-Auth-Token": "auth-token-canary-51c9e2",
        "Ocp-Apim-Subscription-Key": "apim-canary-0b7d44",
        "X-Hub-Signature-256": "sha256=signature-canary-93aa",
        "X-Trace-Id": "trace-visible-1234",
    }
    monkeypatch.setenv("SERVICE_TOKEN", "service-token-canary-6e1f")
    monkeypatch.setenv("DB_PASSWORD", "db-password-canary-2c8b")
    echo = "service-token-canary-6e1f db-password-canary-2c8b"
    server.script([Reply.text(f"echo {echo}", chunk_chars=7)])
    model = model_for("openai", server.base_url).model_copy(update={"headers": headers})
    with Cassette(path):
        _, reply = await run_stream(model, f"send {echo}")
    assert reply.stop_reason == "stop"
    text = read(path)
    for secret in ["service-token-canary-6e1f", "db-password-canary-2c8b", *list(headers.values())[:3]]:
        assert secret not in text
    recorded = lines(path)[1]["request"]["headers"]
    assert recorded["x-auth-token"] == recorded["ocp-apim-subscription-key"] == "[redacted]"
    assert recorded["x-hub-signature-256"] == "[redacted]"
    assert recorded["x-trace-id"] == "trace-visible-1234"  # only credentials are hidden


def test_a_secret_split_across_chunks_is_masked_in_both() -> None:
    redactor = Redactor([CANARY]).with_header_secrets([("authorization", "Bearer sk-other-123456")])
    chunks = [Chunk(0.1, b'data: "sk-can'), Chunk(0.2, b'ary-7f3e9d1c5b" sk-other-123456'), Chunk(0.3, b"!")]
    masked = redactor.chunks(chunks)
    rest = len(CANARY) - len("sk-can")
    assert [c.data for c in masked] == [b'data: "******', b"*" * rest + b'" ***************', b"!"]
    assert [c.at for c in masked] == [0.1, 0.2, 0.3]
    assert Redactor(["short"]).text("short") == "short"  # too short to search for without masking prose


# ---------------------------------------------------------------------------------------- timing and Stop


async def test_fast_replay_does_not_wait_and_real_replay_keeps_the_recorded_gaps(
    server: FaultServer, path: Path
) -> None:
    server.script([Reply.text("slow words " * 3, chunk_chars=4, delay_s=0.04)])
    model = model_for("openai", server.base_url)
    with Cassette(path):
        await run_stream(model)
    span = lines(path)[1]["response"]["body"][-1][0]
    assert span >= 0.3
    timings = {}
    for timing in ("fast", "real"):
        started = time.monotonic()
        with Cassette(path, mode="none", timing=timing):
            _, message = await run_stream(model)
        timings[timing] = time.monotonic() - started
        assert message.stop_reason == "stop"
    assert timings["real"] >= span
    assert timings["fast"] < span / 2


async def test_stop_during_a_real_time_replay_aborts_mid_body(server: FaultServer, path: Path) -> None:
    server.script([Reply.text("word " * 40, chunk_chars=5, delay_s=0.03)])
    model = model_for("openai", server.base_url)
    with Cassette(path):
        await run_stream(model)
    span = lines(path)[1]["response"]["body"][-1][0]
    controller = AbortController()

    def stop_on_third_delta(event: AssistantMessageEvent, seen: list[int] = [0]) -> None:  # noqa: B006 - a counter
        seen[0] += event.type == "text_delta"
        if seen[0] == 3:
            controller.abort()

    started = time.monotonic()
    with Cassette(path, mode="none", timing="real"):
        types, message = await run_stream(model, on_event=stop_on_third_delta, signal=controller.signal)
    assert message.stop_reason == "aborted"
    assert types.count("text_delta") == 3
    assert first_text(message) == "word word word "
    assert time.monotonic() - started < span  # it did not play the rest of the body first


async def test_a_body_stopped_while_recording_goes_quiet_in_replay_until_the_idle_timeout(
    server: FaultServer, path: Path
) -> None:
    server.script([Reply.text("word " * 40, chunk_chars=5, delay_s=0.02)])
    model = model_for("openai", server.base_url)
    controller = AbortController()

    def stop_on_first_delta(event: AssistantMessageEvent) -> None:
        if event.type == "text_delta":
            controller.abort()

    with Cassette(path):
        _, live = await run_stream(model, on_event=stop_on_first_delta, signal=controller.signal)
    assert live.stop_reason == "aborted"
    assert lines(path)[1]["response"]["end"] == "closed"
    with Cassette(path, mode="none"):
        _, replayed = await run_stream(model, idle_timeout_ms=100)
    assert replayed.stop_reason == "error"
    assert (replayed.error_message or "").startswith("Request timed out: no data received within the idle timeout")
    assert "the cassette's recording ends here" in (replayed.error_message or "")


async def test_stop_while_a_replayed_body_is_quiet_aborts_at_once(server: FaultServer, path: Path) -> None:
    server.script([Reply.text("word " * 40, chunk_chars=5, delay_s=0.02)])
    model = model_for("openai", server.base_url)
    controller = AbortController()

    def stop_on_first_delta(event: AssistantMessageEvent) -> None:
        if event.type == "text_delta":
            controller.abort()

    with Cassette(path):
        await run_stream(model, on_event=stop_on_first_delta, signal=controller.signal)
    controller = AbortController()
    with Cassette(path, mode="none"):
        response = stream(model, context(), StreamOptions(signal=controller.signal))
        task = asyncio.ensure_future(response.result())
        async for event in response:
            if event.type == "text_delta":
                asyncio.get_running_loop().call_soon(controller.abort)  # once the replay has nothing more
        message = await task
    assert message.stop_reason == "aborted"


# ------------------------------------------------------------------------------------------ format, wiring


async def test_the_file_is_jsonl_with_readable_sse_chunks_and_their_times(server: FaultServer, path: Path) -> None:
    server.script([Reply.text("readable", chunk_chars=2)])
    with Cassette(path):
        await run_stream(model_for("openai", server.base_url))
    raw = read(path).splitlines()
    assert len(raw) == 2
    exchange = json.loads(raw[1])
    assert exchange["request"]["method"] == "POST"
    assert exchange["request"]["json"]["messages"][-1]["content"] == "hello"
    response = exchange["response"]
    assert response["status"] == 200
    assert response["headers"]["content-type"].startswith("text/event-stream")
    times = [at for at, _ in response["body"]]
    assert times == sorted(times) and times[0] >= response["at"]
    assert all(isinstance(piece, str) for _, piece in response["body"])
    assert any('"content": "re"' in piece for _, piece in response["body"])


async def test_a_cassette_answers_even_when_an_environment_proxy_is_set(
    server: FaultServer, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script([Reply.text("through the cassette")])
    model = model_for("openai", server.base_url)
    with Cassette(path):
        await run_stream(model)
    await close_server(server)
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", FaultServer.refused_url())
    await close_connections()  # the next client is built with the proxy mounted
    _, without = await run_stream(model)
    with Cassette(path, mode="none"):
        _, replayed = await run_stream(model)
    assert (without.error_message or "").startswith("Connection error")  # the proxy was used...
    assert first_text(replayed) == "through the cassette"  # ...and routed


async def test_no_cassette_no_file_and_complete_works_too(server: FaultServer, path: Path) -> None:
    server.script([Reply.text("plain"), Reply.text("recorded")])
    model = model_for("openai", server.base_url)
    message = await complete(model, context())
    assert first_text(message) == "plain"
    assert read(path) == ""
    async with Cassette(path) as cassette:
        await complete(model, context())
    assert cassette.recorded == 1
    assert repr(cassette) == f"Cassette({str(path)!r}, mode='once', timing='fast')"


async def test_concurrent_tasks_each_use_their_own_cassette(server: FaultServer, tmp_path: Path) -> None:
    model = model_for("openai", server.base_url)
    paths = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for path, answer in zip(paths, ("from a", "from b"), strict=True):
        server.script([Reply.text(answer)])
        with Cassette(path):
            await run_stream(model)
    await close_server(server)

    async def replay(path: Path) -> str:
        async with Cassette(path, mode="none"):
            await asyncio.sleep(0)  # both tasks are inside their cassettes before either sends
            _, message = await run_stream(model)
        return first_text(message)

    assert list(await asyncio.gather(replay(paths[0]), replay(paths[1]))) == ["from a", "from b"]
    _, outside = await run_stream(model)
    assert (outside.error_message or "").startswith("Connection error")  # no cassette leaked out of the tasks


def test_bytes_that_are_not_utf8_are_kept_as_base64() -> None:
    split = "é".encode()  # one character in two chunks, as a network read may cut it
    assert encode_bytes(b"data: caf" + split[:1]) == {"base64": "ZGF0YTogY2Fmww=="}
    assert decode_bytes(encode_bytes(split[1:] + b"\n\n")) == split[1:] + b"\n\n"
    assert decode_bytes("plain text") == b"plain text"


async def test_a_request_given_up_before_any_response_replays_as_a_silent_server(
    server: FaultServer, path: Path
) -> None:
    server.script([Fault.stall()])  # the request is read; no response head ever comes
    model = model_for("anthropic", server.base_url)
    with Cassette(path):
        _, live = await run_stream(model, timeout_ms=150)
    [line] = lines(path)[1:]
    assert line["response"] is None and line["error"]["type"] == "Cancelled"
    await close_server(server)
    with Cassette(path, mode="none"):
        _, replayed = await run_stream(model, timeout_ms=150)
        _, idle = await run_stream(model, idle_timeout_ms=100)  # a second ask: nothing recorded for it
    assert live.error_message == replayed.error_message == "Request timed out after 150 ms"
    assert "were all replayed already" in (idle.error_message or "")
