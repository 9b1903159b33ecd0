"""A site policy in real kernels, as a user meets it: ``%pi settings`` shows what it locks, an attempt to loosen a
setting, switch to a model it does not allow or give the agent a tool it switches off is one line (``%pi``) or a
``PolicyError`` (``configure()``) and changes nothing; what it allows still works. The policy comes from the file
``PI_NOTEBOOK_POLICY`` names, and from ``sys.prefix/etc/pi_notebook/policy.toml`` (a kernel in a virtual environment
of its own); changing the variable inside the kernel does not lift it."""

from __future__ import annotations

import json
import os
import re
import sys
import sysconfig
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_harness import Kernel

from pi_notebook.ai import TextContent, UserMessage
from pi_notebook.ai.models import model_from_spec
from pi_notebook.session import SessionStore, load_session
from pi_notebook.testing import FaultServer, Reply

pytestmark = pytest.mark.timeout(120)

POLICY = """
[tools]
ask = ["python"]
disabled = ["write"]
[limits]
"budget.max_cost_usd" = 2
[models]
allow = ["openai:gpt-4o-mini"]
"""
SETUP = """
%load_ext pi_notebook
from pi_notebook.notebook import configure, get_session, get_notebook_session
from pi_notebook.session import PolicyError
"""


def without_policy_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "PI_NOTEBOOK_POLICY"}


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kernel, Path]]:
    path = tmp_path_factory.mktemp("policy") / "policy.toml"
    path.write_text(POLICY)
    kernel = Kernel(env={**without_policy_env(), "PI_NOTEBOOK_POLICY": str(path)})
    assert kernel.run(SETUP).stdout == ""
    yield kernel, path
    kernel.shutdown()


def line(kernel: Kernel, code: str) -> str:
    return kernel.run(code).stdout


def test_pi_settings_shows_what_the_policy_locks(kernel: tuple[Kernel, Path]) -> None:
    k, path = kernel
    out = line(k, "%pi settings")
    assert f"locked by policy ({path}):" in out
    assert "  budget.max_cost_usd = 2.0  (locked by policy: at most 2)" in out
    assert "  tools.approval.python = ask  (locked by policy: it always asks)" in out
    assert "  tools off: write  (locked by policy)" in out
    assert "  models allowed: openai:gpt-4o-mini  (locked by policy)" in out
    assert json.loads(out.split("\nlocked by policy")[0])["budget"]["max_cost_usd"] == 2.0


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("budget.max_cost_usd=10", "budget.max_cost_usd is locked by policy: at most 2 (asked for 10)"),
        ("budget.max_cost_usd=none", "budget.max_cost_usd is locked by policy: at most 2 (asked for none)"),
        ("tools.approval.python=auto", "tools.approval.python is locked by policy: python always asks"),
    ],
)
def test_loosening_a_setting_is_one_line_and_changes_nothing(
    kernel: tuple[Kernel, Path], change: str, said: str
) -> None:
    k, path = kernel
    out = line(k, f"%pi settings {change}")
    assert out.startswith(f"pi: {said}") and out.endswith(f"({path})\n") and out.count("\n") == 1
    assert line(k, "s = get_session().settings\nprint(s.budget.max_cost_usd, s.tools.approval)") == "2.0 {}\n"


def test_what_the_policy_allows_still_changes(kernel: tuple[Kernel, Path]) -> None:
    k, _ = kernel
    assert line(k, "%pi settings budget.max_cost_usd=0.5 tools.approval.edit=auto") == (
        "pi: settings updated: budget.max_cost_usd=0.5 tools.approval.edit=auto\n"
    )
    assert line(k, "print(get_session().settings.budget.max_cost_usd)") == "0.5\n"
    line(k, "%pi settings budget.max_cost_usd=2")


def test_a_model_the_policy_does_not_allow_is_refused_and_the_model_kept(kernel: tuple[Kernel, Path]) -> None:
    k, path = kernel
    out = line(k, "%pi model openai:gpt-4o")
    assert out == f"pi: model openai:gpt-4o is not allowed by policy (allowed: openai:gpt-4o-mini) ({path})\n"
    assert line(k, "%pi model").startswith("pi: model faux ")


def test_pi_tools_marks_the_locked_and_the_switched_off(kernel: tuple[Kernel, Path]) -> None:
    k, path = kernel
    out = line(k, "%pi tools")
    assert any(row.startswith("python") and "ask (locked by policy)" in row for row in out.splitlines())
    assert not any(row.startswith("write ") for row in out.splitlines())  # not given to the agent
    assert f"write: off by policy ({path})" in out


def test_configure_obeys_the_policy_and_a_refusal_keeps_the_session(kernel: tuple[Kernel, Path]) -> None:
    k, _ = kernel
    out = line(
        k,
        "before = get_session()\n"
        "for kwargs in ({'model': 'openai:gpt-4o'}, {'settings': {'budget': {'max_cost_usd': 10}}},\n"
        "               {'tools': [__import__('pi_notebook.tools', fromlist=['write_tool']).write_tool('.')]}):\n"
        "    try:\n"
        "        configure(**kwargs)\n"
        "    except PolicyError as exc:\n"
        "        print('refused:', str(exc).split(' (')[0])\n"
        "print(get_session() is before)\n"
        "configure(model='openai:gpt-4o-mini')\n"
        "print(get_notebook_session().model_spec, get_session().settings.budget.max_cost_usd)",
    )
    assert out.splitlines() == [
        "refused: model openai:gpt-4o is not allowed by policy",
        "refused: budget.max_cost_usd is locked by policy: at most 2",
        "refused: write is switched off by policy",
        "True",
        "openai:gpt-4o-mini 2.0",
    ]
    line(k, "configure()")


def test_changing_the_variable_in_the_kernel_does_not_lift_the_policy(kernel: tuple[Kernel, Path]) -> None:
    k, _ = kernel
    lift = "import os\nos.environ['PI_NOTEBOOK_POLICY'] = '/dev/null'\n%reload_ext pi_notebook\nconfigure()\n"
    out = line(k, lift + "%pi settings budget.max_cost_usd=10")
    assert out.startswith("pi: budget.max_cost_usd is locked by policy")


def test_a_blanket_auto_leaves_the_tools_that_must_ask_asking(kernel: tuple[Kernel, Path]) -> None:
    k, _ = kernel
    assert line(k, "%pi settings tools.approval=auto") == "pi: settings updated: tools.approval=auto\n"
    try:
        tools = line(k, "%pi tools")
        assert re.search(r"^python +ask \(locked by policy\)", tools, re.M), tools
        assert re.search(r"^bash +auto ", tools, re.M), tools
    finally:
        line(k, "configure(settings={})")  # (configure() keeps the settings)


RELAY = """
import dataclasses
from pi_notebook.ai import stream
from pi_notebook.ai.models import model_from_spec
from pi_notebook.ai.providers.faux import FauxProvider
relayed = model_from_spec("openai:gpt-4o", base_url={url!r})
def relay(model, context, options):
    return stream(relayed, context, dataclasses.replace(options, api_key="sk-relayed-key"))
configure(model=FauxProvider().model, stream_fn=relay)
"""


def test_the_model_and_server_actually_requested_are_checked(kernel: tuple[Kernel, Path], server: FaultServer) -> None:
    """Issue 37 item 22: with an allow-list and no ``base_urls``, ``--base-url`` sent an allowed model's key to any
    server; ``configure(model=<faux>, stream_fn=<relay>)`` passed the allow-list and sent the key to a refused
    model's server."""
    k, path = kernel
    out = line(k, f"%pi model openai:gpt-4o-mini --base-url {server.openai_base_url}")
    assert out == (
        f"pi: base URL {server.openai_base_url} is not allowed by policy: openai:gpt-4o-mini goes to "
        f"https://api.openai.com/v1 (a [models] base_urls list allows other servers) ({path})\n"
    )
    assert line(k, "%pi model").startswith("pi: model faux ")
    server.script([Reply.text("the key arrived")])
    k.run(RELAY.format(url=server.openai_base_url))
    error = line(k, "run = %pi hello\nr = await run\nprint(run.messages[-1].error_message)")
    assert error == f"model openai:gpt-4o is not allowed by policy (allowed: openai:gpt-4o-mini) ({path})\n"
    assert server.requests == []  # nothing was sent: no key reached the server
    line(k, "configure(settings={})")


def test_a_resumed_session_whose_model_the_policy_refuses_starts_no_run(
    kernel: tuple[Kernel, Path], tmp_path: Path
) -> None:
    """Issue 37 item 22: the resumed session's model was refused, and the next prompt was answered by the offline
    model (its reply appended to the real session's file)."""
    k, path = kernel
    file = tmp_path / "session.jsonl"
    with SessionStore(file) as store:
        store.record_model(model_from_spec("openai:gpt-4o"))
        store.append_message(UserMessage(content=[TextContent(text="a question")]))
    refused = (
        f"the resumed session's model openai:gpt-4o is not allowed by policy (allowed: openai:gpt-4o-mini) ({path})"
    )
    out = line(k, f"%pi resume {file}")
    assert f"pi: {refused}; set one it allows with %pi model SPEC before the next prompt\n" in out, out
    assert line(k, "%pi go on").startswith(f"pi: {refused}")
    assert len(load_session(file).messages) == 1  # nothing was added to its file
    line(k, "configure(settings={})")


def test_a_policy_in_the_environments_etc_applies_to_its_kernels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = tmp_path / "env"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(prefix)
    site = next((prefix / "lib").glob("python3*/site-packages"))
    (site / "outer.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # this environment's packages too
    (prefix / "etc" / "pi_notebook").mkdir(parents=True)
    (prefix / "etc" / "pi_notebook" / "policy.toml").write_text(POLICY)
    spec = tmp_path / "kernels" / "own-prefix"
    spec.mkdir(parents=True)
    argv = [str(prefix / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "own prefix", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", f"{tmp_path}{os.pathsep}{os.environ.get('JUPYTER_PATH', '')}")
    kernel = Kernel(env=without_policy_env(), kernel_name="own-prefix")
    try:
        assert kernel.run("import sys\nprint(sys.prefix)").stdout == f"{prefix}\n"
        kernel.run(SETUP)
        out = kernel.run("%pi settings budget.max_cost_usd=10").stdout
        assert out.startswith("pi: budget.max_cost_usd is locked by policy: at most 2 (asked for 10)")
        assert out.endswith(f"({prefix}/etc/pi_notebook/policy.toml)\n")
    finally:
        kernel.shutdown()
    assert sys.prefix != str(prefix)


def test_a_policy_file_that_cannot_be_read_is_said_at_load_and_refuses_runs(tmp_path: Path) -> None:
    broken = tmp_path / "policy.toml"
    broken.write_text("[limits\n")
    kernel = Kernel(env={**without_policy_env(), "PI_NOTEBOOK_POLICY": str(broken)})
    try:
        load = kernel.run("%load_ext pi_notebook").stdout
        assert load.startswith(f"pi: the site policy {broken} cannot be read: ") and load.count("\n") == 1
        out = kernel.run("%pi hello").stdout
        assert out.startswith(f"pi: the site policy {broken} cannot be read: ")
        assert kernel.run("from pi_notebook.notebook._registry import REGISTRY\nprint(REGISTRY.find())").stdout == (
            "None\n"
        )  # no session was made
    finally:
        kernel.shutdown()
