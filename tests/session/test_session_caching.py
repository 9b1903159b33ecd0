"""Prompt caching through a session (issue 29): the ``cache_retention`` setting with Pi's default and environment
variable, the session id as the cache key, what each request asks to cache, and what caching saved, over real
loopback HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_notebook.ai import AssistantMessage, Model, ModelCost
from pi_notebook.ai.models import model_from_spec
from pi_notebook.notebook._describe import usage_line
from pi_notebook.session import AgentSession, SessionStore, Settings, SettingsError
from pi_notebook.testing import FaultServer, Reply, TokenUsage

CLAUDE_PRICES = ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)  # claude-sonnet-4-5, $/M


@pytest.fixture(autouse=True)
def openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-caching")  # openai-responses: specs need OpenAI's key


def claude(server: FaultServer) -> Model:
    return Model(
        id="claude-test",
        api="anthropic-messages",
        provider="anthropic-local",
        base_url=server.anthropic_base_url,
        cost=CLAUDE_PRICES,
    )


def test_the_default_is_short_and_pis_variable_makes_it_long(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PI_CACHE_RETENTION", raising=False)
    assert Settings().cache_retention == "short"
    monkeypatch.setenv("PI_CACHE_RETENTION", "long")
    assert Settings().cache_retention == "long"
    monkeypatch.setenv("PI_CACHE_RETENTION", "none")  # Pi reads only "long" from it
    assert Settings().cache_retention == "short"


def test_the_setting_takes_none_short_long_from_a_file_the_environment_or_an_update(tmp_path: Path) -> None:
    assert Settings.load(environ={"PI_NOTEBOOK_CACHE_RETENTION": "none"}).cache_retention == "none"
    assert Settings(cacheRetention="long").cache_retention == "long"  # Pi's spelling
    assert Settings().updated(cache_retention="none").cache_retention == "none"
    with pytest.raises(SettingsError, match=r"settings\.cache_retention: Input should be 'none', 'short' or 'long'"):
        Settings(cache_retention="forever")


async def sent(session: AgentSession, server: FaultServer, prompt: str = "hello") -> dict[str, Any]:
    server.script([Reply.text("ok")])
    await session.prompt(prompt)
    body: dict[str, Any] = server.requests[-1].json
    return body


@pytest.mark.parametrize(
    ("retention", "marker"), [("short", {"type": "ephemeral"}), ("long", {"type": "ephemeral", "ttl": "1h"})]
)
async def test_anthropic_requests_mark_system_prompt_last_tool_and_last_message(
    server: FaultServer, retention: str, marker: dict[str, str]
) -> None:
    session = AgentSession(model=claude(server), system_prompt="be brief", settings={"cache_retention": retention})
    body = await sent(session, server)
    assert body["system"] == [{"type": "text", "text": "be brief", "cache_control": marker}]
    assert body["messages"][-1]["content"][-1]["cache_control"] == marker
    second = await sent(session, server, "again")  # the breakpoint moves to the new last message
    assert "cache_control" not in str(second["messages"][0])
    assert second["messages"][-1]["content"][-1]["cache_control"] == marker


async def test_retention_none_asks_for_no_caching(server: FaultServer) -> None:
    session = AgentSession(model=claude(server), system_prompt="be brief", settings={"cache_retention": "none"})
    body = await sent(session, server)
    assert "cache_control" not in str(body)
    responses = model_from_spec("openai-responses:gpt-4o-mini", base_url=server.openai_base_url)
    session.model = responses
    body = await sent(session, server)
    assert "prompt_cache_key" not in body
    assert "session_id" not in server.requests[-1].headers


async def test_the_cache_key_is_the_session_files_id_and_a_new_file_starts_a_new_cache(
    server: FaultServer, tmp_path: Path
) -> None:
    store = SessionStore.new(tmp_path)
    model = model_from_spec("openai-responses:gpt-4o-mini", base_url=server.openai_base_url)
    session = AgentSession(model=model, store=store)
    first = await sent(session, server)
    assert first["prompt_cache_key"] == store.session_id
    assert server.requests[-1].headers["session_id"] == store.session_id  # Pi's session-affinity header
    assert (await sent(session, server, "again"))["prompt_cache_key"] == store.session_id
    fresh = SessionStore.new(tmp_path)
    session.use_store(fresh, messages=[])
    assert (await sent(session, server))["prompt_cache_key"] == fresh.session_id != store.session_id


async def test_a_session_without_a_file_has_a_cache_key_of_its_own(server: FaultServer) -> None:
    model = model_from_spec("openai-responses:gpt-4o-mini", base_url=server.openai_base_url)
    one, two = AgentSession(model=model), AgentSession(model=model)
    key = (await sent(one, server))["prompt_cache_key"]
    assert key and key == (await sent(one, server, "again"))["prompt_cache_key"]
    assert (await sent(two, server))["prompt_cache_key"] != key


async def test_the_usage_line_shows_cached_tokens_and_what_caching_saved(server: FaultServer) -> None:
    session = AgentSession(model=claude(server))
    first = TokenUsage(input_tokens=10, output_tokens=5, cache_write_tokens=30_000)
    second = TokenUsage(input_tokens=20, output_tokens=5, cache_read_tokens=30_000)
    server.script([Reply.text("one", usage=first)])
    await session.prompt("hello")
    # A first write costs a quarter more than plain input: 30,000 x ($3.75 - $3) / M.
    assert session.budget.cache_saved_usd == pytest.approx(-0.0225)
    assert "in 30010 tok (0 cached, 30000 written, cost $0.0225 more)" in usage_line(session)
    server.script([Reply.text("two", usage=second)])
    await session.prompt("again")
    reply = session.messages[-1]
    assert isinstance(reply, AssistantMessage)
    assert reply.usage.cost.cache_read == pytest.approx(30_000 * 0.3 / 1e6)  # the model's cache price
    assert session.budget.cache_saved_usd == pytest.approx(30_000 * (3.0 - 0.3) / 1e6)  # $0.081
    assert "in 30020 tok (30000 cached, saved $0.0810)" in usage_line(session)


async def test_a_free_model_shows_cache_reads_without_a_price(server: FaultServer) -> None:
    session = AgentSession(model=claude(server).model_copy(update={"cost": ModelCost()}))
    server.script([Reply.text("one", usage=TokenUsage(input_tokens=10, cache_write_tokens=500))])
    await session.prompt("hello")
    assert "cached" not in usage_line(session)  # a write alone, and nothing to save on a free model
    server.script([Reply.text("two", usage=TokenUsage(input_tokens=10, cache_read_tokens=500))])
    await session.prompt("again")
    assert "in 510 tok (500 cached) ·" in usage_line(session)
