"""The site policy (``session/_policy.py``): read from TOML files (every one that exists, the strictest wins), it
fixes settings, caps limits, makes tools ask or switches them off, and allows models; an ``AgentSession`` obeys it
(settings, model, tools, approvals) and a looser request raises ``PolicyError`` and changes nothing. A policy file
that cannot be read is an error, never a policy quietly off. Kernels, ``%pi`` and JupyterHub:
tests/notebook/test_policy_kernel.py and tests/deploy/test_hub.py."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_helpers import ToolLog, recording_tool

from pi_notebook.agent import AgentTool
from pi_notebook.ai import AssistantMessage, AssistantMessageEventStream, Context, Model, StreamOptions, stream
from pi_notebook.ai.models import model_from_spec
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_notebook.session import AgentSession, Approval, Policy, PolicyError, Settings, site_policy
from pi_notebook.session._policy import policy_files
from pi_notebook.testing import FaultServer, Reply

POLICY = """
[tools]
ask = ["python", "bash"]
disabled = ["write"]

[limits]
"budget.max_cost_usd" = 2.0
budget.wall_time_ms = 3_600_000

[fixed]
cache_retention = "none"

[models]
allow = ["openai:gpt-4o-mini", "anthropic:claude-*"]
base_urls = ["https://api.openai.com/", "https://api.anthropic.com"]
"""


def read(tmp_path: Path, text: str, name: str = "policy.toml") -> Policy:
    path = tmp_path / name
    path.write_text(text)
    return Policy.read([path])


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``PI_NOTEBOOK_POLICY`` names a policy file for this test (the cached site policy is read again)."""
    path = tmp_path / "site-policy.toml"
    path.write_text(POLICY)
    monkeypatch.setenv("PI_NOTEBOOK_POLICY", str(path))
    site_policy.cache_clear()
    yield path
    site_policy.cache_clear()


def tool(name: str, log: ToolLog | None = None) -> AgentTool:
    return recording_tool(name, log)


def test_the_files_are_the_environments_then_the_systems_then_the_named_one() -> None:
    paths = policy_files({"PI_NOTEBOOK_POLICY": "/srv/policy.toml"})
    assert [path.parts[-3:] for path in paths[:2]] == [("etc", "pi_notebook", "policy.toml")] * 2
    assert str(paths[1]) == "/etc/pi_notebook/policy.toml"
    assert paths[2] == Path("/srv/policy.toml")
    assert len(policy_files({})) == 2


def test_a_policy_file_reads_into_its_rules(tmp_path: Path) -> None:
    policy = read(tmp_path, POLICY)
    assert policy.active and policy.sources == (tmp_path / "policy.toml",)
    assert policy.ask == {"python", "bash"} and policy.disabled == {"write"}
    assert policy.limits == {"budget.max_cost_usd": 2.0, "budget.wall_time_ms": 3_600_000.0}
    assert policy.fixed == {"cache_retention": "none"}


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[tool]\nask = []", "unknown section [tool]"),
        ("[tools]\nalways = ['python']", "unknown key 'always' in [tools]"),
        ("[limits]\n'budget.max_dollars' = 2", "no setting 'budget.max_dollars'"),
        ("[limits]\n'steering_mode' = 2", "[limits] steering_mode must be a number"),
        ("[limits]\n'budget.max_cost_usd' = -1", "settings.budget.max_cost_usd"),
        ("[fixed]\ncache_retention = 'forever'", "settings.cache_retention"),
        ("[tools]\nask = 'python'", "[tools] ask must be a list of names"),
        ("[models\nallow = []", "cannot be read"),
    ],
)
def test_a_policy_that_cannot_be_read_or_says_what_a_policy_cannot_is_an_error(
    tmp_path: Path, text: str, error: str
) -> None:
    with pytest.raises(PolicyError, match=r"site policy .*policy\.toml") as caught:
        read(tmp_path, text)
    assert error in str(caught.value)


def test_every_file_applies_and_the_strictest_wins(tmp_path: Path) -> None:
    one = tmp_path / "one.toml"
    one.write_text("[limits]\n'budget.max_cost_usd' = 5\n[tools]\nask = ['python']\n[models]\nallow = ['openai:*']")
    two = tmp_path / "two.toml"
    two.write_text("[limits]\n'budget.max_cost_usd' = 2\n[tools]\nask = ['bash']\n[models]\nallow = ['*:gpt-4o-mini']")
    policy = Policy.read([one, tmp_path / "missing.toml", two])
    assert policy.limits["budget.max_cost_usd"] == 2.0
    assert policy.ask == {"python", "bash"}
    policy.check_model(model_from_spec("openai:gpt-4o-mini"))
    with pytest.raises(PolicyError, match="model openai:gpt-4o is not allowed by policy"):
        policy.check_model(model_from_spec("openai:gpt-4o"))  # allowed by one file, not the other


def test_limits_fill_what_is_unset_and_refuse_what_is_higher(tmp_path: Path) -> None:
    policy = read(tmp_path, POLICY)
    settings = policy.enforce(Settings())
    assert settings.budget.max_cost_usd == 2.0  # unset: the site's ceiling
    assert settings.budget.wall_time_ms == 3_600_000
    assert policy.enforce(Settings(budget={"max_cost_usd": 0.5})).budget.max_cost_usd == 0.5  # lower is fine
    with pytest.raises(PolicyError, match=r"budget.max_cost_usd is locked by policy: at most 2 \(asked for 10\)"):
        policy.enforce(Settings(budget={"max_cost_usd": 10}))


def test_fixed_values_are_set_and_another_value_is_refused(tmp_path: Path) -> None:
    policy = read(tmp_path, POLICY)
    assert policy.enforce(Settings()).cache_retention == "none"
    with pytest.raises(PolicyError, match="cache_retention is locked by policy: 'none' \\(asked for 'long'\\)"):
        policy.enforce(Settings(cache_retention="long"))


@pytest.mark.parametrize("approval", [{"python": "auto"}, {"*": "auto", "bash": "auto"}])
def test_a_tool_that_must_ask_cannot_be_set_to_auto(tmp_path: Path, approval: object) -> None:
    with pytest.raises(PolicyError, match=r"tools\.approval\.(bash|python) is locked by policy"):
        read(tmp_path, POLICY).enforce(Settings(tools={"approval": approval}))


@pytest.mark.parametrize("approval", ["auto", {"*": "auto"}])
def test_a_blanket_auto_is_kept_and_the_tools_that_must_ask_still_ask(tmp_path: Path, approval: object) -> None:
    """One setting for every other tool; the approval gate asks for the locked ones (see the approval tests)."""
    settings = read(tmp_path, POLICY).enforce(Settings(tools={"approval": approval}))
    assert settings.tools.approval == approval


def test_other_tools_may_be_set_to_auto(tmp_path: Path) -> None:
    read(tmp_path, POLICY).enforce(Settings(tools={"approval": {"edit": "auto", "python": "ask"}}))


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"budget": {"max_cost_usd": None}}, "budget.max_cost_usd is locked by policy: at most 2 (asked for none)"),
        ({"cache_retention": "short"}, "cache_retention is locked by policy: 'none' (asked for 'short')"),
        ({"budget": {"max_cost_usd": 3}}, "budget.max_cost_usd is locked by policy: at most 2 (asked for 3)"),
    ],
)
def test_a_change_that_lifts_a_limit_or_moves_a_fixed_value_is_refused(
    tmp_path: Path, changes: dict[str, object], error: str
) -> None:
    policy = read(tmp_path, POLICY)
    current = policy.enforce(Settings())
    with pytest.raises(PolicyError) as caught:
        policy.check_changes(changes, current.updated(**changes))
    assert str(caught.value).startswith(error)


def test_a_change_to_what_is_already_fixed_or_lower_is_accepted(tmp_path: Path) -> None:
    """Compared as the settings hold them: ``none`` typed for a fixed ``"none"``, ``2`` for a ceiling of 2.0."""
    policy = read(tmp_path, POLICY)
    current = policy.enforce(Settings())
    for changes in ({"cache_retention": "none"}, {"budget": {"max_cost_usd": 2}}, {"budget": {"max_cost_usd": 1}}):
        policy.check_changes(changes, current.updated(**changes))


def test_models_and_base_urls(tmp_path: Path) -> None:
    policy = read(tmp_path, POLICY)
    policy.check_model(model_from_spec("anthropic:claude-sonnet-4-5"))
    policy.check_model(FauxProvider().model)  # offline: always allowed
    with pytest.raises(PolicyError, match=r"base URL http://evil\.example/v1 is not allowed by policy"):
        policy.check_model(model_from_spec("openai:gpt-4o-mini", base_url="http://evil.example/v1"))


def test_a_model_relabelled_faux_is_checked_by_what_it_reaches(tmp_path: Path) -> None:
    relabelled = model_from_spec("openai:gpt-4o-mini").model_copy(
        update={"provider": "faux", "base_url": "https://evil.example/v1"}
    )
    with pytest.raises(PolicyError, match="not allowed by policy"):
        read(tmp_path, POLICY).check_model(relabelled)


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://api.openai.com/v1", True),
        ("https://API.openai.com:443/v1", True),  # the same server, spelled otherwise
        ("https://api.anthropic.com", True),
        ("https://api.anthropic.com/v1", True),
        ("https://api.anthropic.com.evil.example", False),  # a text prefix of an allowed URL
        ("https://api.anthropic.com@evil.example", False),
        ("http://api.openai.com/v1", False),  # another scheme
        ("https://api.openai.com:8443/v1", False),  # another port
        ("not a url", False),
    ],
)
def test_a_base_url_is_allowed_by_server_and_whole_path_segments(tmp_path: Path, url: str, allowed: bool) -> None:
    policy = read(tmp_path, POLICY)
    if allowed:
        policy.check_base_url(url)
    else:
        with pytest.raises(PolicyError, match="is not allowed by policy"):
            policy.check_base_url(url)


def test_a_path_prefix_allows_whole_segments_only(tmp_path: Path) -> None:
    policy = read(tmp_path, '[models]\nbase_urls = ["https://gw.example/team-a"]')
    policy.check_base_url("https://gw.example/team-a/v1")
    with pytest.raises(PolicyError):
        policy.check_base_url("https://gw.example/team-ab/v1")


def test_a_session_obeys_the_site_policy(site: Path) -> None:
    faux = FauxProvider()
    session = AgentSession(model=faux.model, stream_fn=faux.stream, tools=[tool("read"), tool("python")])
    assert session.policy.sources == (site,)
    assert session.settings.budget.max_cost_usd == 2.0
    with pytest.raises(PolicyError, match=r"budget\.max_cost_usd is locked by policy"):
        session.settings = session.settings.updated(budget={"max_cost_usd": 100})
    assert session.settings.budget.max_cost_usd == 2.0  # unchanged
    with pytest.raises(PolicyError, match="model openai:gpt-4o is not allowed"):
        session.model = model_from_spec("openai:gpt-4o")
    assert session.model is faux.model
    with pytest.raises(PolicyError, match="write is switched off by policy"):
        session.tools = [tool("write")]
    assert [t.name for t in session.tools] == ["read", "python"]
    assert session.approval_mode("python") == "ask"
    with pytest.raises(PolicyError, match="write is switched off by policy"):
        AgentSession(model=faux.model, stream_fn=faux.stream, tools=[tool("write")])


def test_a_broken_site_policy_stops_sessions_at_every_use(site: Path) -> None:
    site.write_text("[tools\n")
    site_policy.cache_clear()
    faux = FauxProvider()
    for _ in range(2):  # not cached away
        with pytest.raises(PolicyError, match=r"site policy .* cannot be read"):
            AgentSession(model=faux.model, stream_fn=faux.stream)


async def test_a_tool_that_must_ask_asks_every_time_and_does_not_run_with_nobody_to_ask(site: Path) -> None:
    log = ToolLog()
    python = tool("python", log)  # a tool that would not ask by itself (approval="auto")
    faux = FauxProvider()
    calls = [faux_tool_call("python", {}, id=f"c{n}") for n in range(3)]
    faux.set_responses([faux_assistant_message([call], "toolUse") for call in calls] + [faux_assistant_message("ok")])
    session = AgentSession(model=faux.model, stream_fn=faux.stream, tools=[python])
    await session.prompt("go")  # nobody to ask: refused, although the tool itself would not ask
    assert log.started == []
    assert "the site policy says it must ask" in _results(session)[0]

    answers = ["always", "run", "skip"]
    asked: list[str] = []

    async def approver(request: object, signal: object) -> Approval:
        asked.append(request.tool_name)  # type: ignore[attr-defined]
        return Approval(answers.pop(0))  # type: ignore[arg-type]

    faux.set_responses([faux_assistant_message([call], "toolUse") for call in calls] + [faux_assistant_message("ok")])
    session.approver = approver
    await session.prompt("again")
    assert asked == ["python", "python", "python"]  # "always" did not stop it asking
    assert log.started == ["c0", "c1"]  # always ran once, run ran, skip did not
    assert session.approved_always == frozenset()


async def test_a_tool_that_must_ask_asks_even_for_a_call_it_would_run_without_asking(site: Path) -> None:
    """A looking tool asks only outside the working directory (``needs_approval``); the policy's ``ask`` wins."""
    import dataclasses

    log = ToolLog()
    python = dataclasses.replace(tool("python", log), approval="ask", needs_approval=lambda args: None)
    faux = FauxProvider()
    faux.set_responses(
        [faux_assistant_message([faux_tool_call("python", {}, id="c0")], "toolUse"), faux_assistant_message("ok")]
    )
    asked: list[str] = []

    async def approver(request: object, signal: object) -> Approval:
        asked.append(request.tool_name)  # type: ignore[attr-defined]
        return Approval("skip")

    session = AgentSession(model=faux.model, stream_fn=faux.stream, tools=[python], approver=approver)
    await session.prompt("go")
    assert asked == ["python"]
    assert log.started == []


def _results(session: AgentSession) -> list[str]:
    from pi_notebook.ai import ToolResultMessage

    return [m.content[0].text for m in session.messages if isinstance(m, ToolResultMessage)]  # type: ignore[union-attr]


# -- the model and URL actually requested (issue 37 item 22) ---------------------------------------------------


ALLOW_ONLY = '[models]\nallow = ["openai:gpt-4o-mini"]\n'


def test_with_an_allow_list_and_no_base_urls_a_vendors_model_goes_to_its_vendor_only(tmp_path: Path) -> None:
    """``--base-url`` sent an allowed model's key to any server when the policy listed no ``base_urls``."""
    policy = read(tmp_path, ALLOW_ONLY)
    policy.check_model(model_from_spec("openai:gpt-4o-mini"))
    policy.check_model(model_from_spec("openai-responses:gpt-4o-mini"))  # the same vendor's server
    to_openai = r"base URL http://evil\.example/v1 is not allowed by policy: openai:gpt-4o-mini goes to https://api"
    with pytest.raises(PolicyError, match=to_openai):
        policy.check_model(model_from_spec("openai:gpt-4o-mini", base_url="http://evil.example/v1"))
    local = read(tmp_path, '[models]\nallow = ["openai-compatible:*"]\n')  # its spec names its server
    local.check_model(model_from_spec("openai-compatible:http://127.0.0.1:8000/v1:smollm2"))


@pytest.mark.parametrize("spec", ["openai:gpt-4o", "openai:gpt-4o-mini"])  # a model, a server it does not allow
async def test_a_relay_behind_a_faux_model_cannot_send_a_key_where_the_policy_forbids(
    site: Path, server: FaultServer, spec: str
) -> None:
    """A faux-labelled model passes the allow-list (it sends nothing itself); a ``stream_fn`` that relays it to a
    real server sent that server the key. The request is checked as it leaves: nothing is sent."""
    server.script([Reply.text("the key arrived")])
    relayed = model_from_spec(spec, base_url=server.openai_base_url)

    def relay(model: Model, context: Context, options: StreamOptions) -> AssistantMessageEventStream:
        return stream(relayed, context, dataclasses.replace(options, api_key="sk-relayed-key"))

    session = AgentSession(model=FauxProvider().model, stream_fn=relay)
    retries: list[object] = []
    session.subscribe(lambda event: retries.append(event) if event.type == "auto_retry_start" else None)
    await session.prompt("hi")
    reply = session.messages[-1]
    assert isinstance(reply, AssistantMessage) and reply.stop_reason == "error"
    refused = f"model {spec} is not allowed" if spec == "openai:gpt-4o" else f"base URL {relayed.base_url}/chat"
    assert (reply.error_message or "").startswith(refused), reply.error_message
    assert (reply.error_message or "").endswith(f"({site})")
    assert server.requests == []
    assert retries == []  # refused before it was sent: no retry layer repeats it
