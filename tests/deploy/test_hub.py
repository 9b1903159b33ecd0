"""Two users on a real JupyterHub (configurable-http-proxy, the dummy authenticator, SimpleLocalProcessSpawner: one
single-user server per user, each with its own home), driven as a browser drives them: the REST API and kernel
websockets through the hub's proxy. Each user's runs, saved sessions and keys are their own: ``%pi sessions`` and
``%pi resume`` never show another user's files, even from a sessions folder that an admin shared by mistake with
every user's working directory the same (``/home/jovyan`` on Kubernetes). The admin's site policy
(``PI_NOTEBOOK_POLICY`` in the spawner's environment) binds every user, who cannot loosen it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hub import Hub
from ws_kernel import RemoteKernel

pytestmark = pytest.mark.timeout(300)

KEY = "sk-alice-7f3a9c1e5b"
SETUP = """
import os
{before}
%load_ext pi_notebook
from pi_notebook.notebook import configure
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
faux = FauxProvider(token_size=(1, 1))
faux.set_responses([faux_assistant_message("noted")])
configure(model=faux.model, stream_fn=faux.stream)
from pi_notebook.notebook import get_session
"""


POLICY = """
[tools]
ask = ["python", "bash"]
[limits]
"budget.max_cost_usd" = 2
[models]
allow = ["openai:gpt-4o-mini"]
"""


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    root = tmp_path_factory.mktemp("hub")
    (root / "policy.toml").write_text(POLICY)
    hub = Hub(root, environment={"PI_NOTEBOOK_POLICY": str(root / "policy.toml")})
    yield hub
    hub.close()


def kernel(hub: Hub, user: str) -> RemoteKernel:
    return RemoteKernel.start(hub.server(user), hub.token).connect()


def files_under(folder: Path) -> str:
    """Everything under ``folder``, as text (to look for what must not be there)."""
    return "".join(path.read_text(errors="replace") for path in folder.rglob("*") if path.is_file())


def test_each_users_runs_sessions_and_keys_are_their_own(hub: Hub) -> None:
    alice, bob = kernel(hub, "alice"), kernel(hub, "bob")
    try:
        before = f"os.environ['OPENAI_API_KEY'] = {KEY!r}"
        assert alice.run(SETUP.format(before=before)).stdout == ""
        out = alice.run("run = %pi remember my secret plan\nawait run\n%pi sessions").stdout
        assert "1 saved session(s) in " + str(hub.home("alice")) in out
        assert "'remember my secret plan'" in out

        assert bob.run(SETUP.format(before="")).stdout == ""  # no greeting about alice's session
        assert bob.run("%pi sessions").stdout.startswith(f"pi: no saved sessions in {hub.home('bob')}")
        assert bob.run("%pi resume").stdout == "pi: no saved session to resume here (%pi sessions lists them)\n"
        status = bob.run("print(os.environ.get('OPENAI_API_KEY'))\n%pi status").stdout.splitlines()
        assert status[0] == "None"  # alice's key is not in bob's kernel
        assert "runs: 0; transcript: 0 messages" in status  # nor are her runs
        assert "secret plan" not in files_under(hub.home("bob"))
        assert KEY not in files_under(hub.home("bob"))
        assert KEY not in files_under(hub.home("alice") / ".pi_notebook")  # (her IPython history has it: her cell)
    finally:
        alice.shutdown()
        bob.shutdown()


def test_a_sessions_folder_shared_by_mistake_lists_only_the_users_own_files(hub: Hub) -> None:
    shared, work = hub.root / "shared-volume", hub.root / "work"  # one folder and one working directory for all
    work.mkdir()
    before = f"os.environ['PI_NOTEBOOK_SESSIONS__DIR'] = {str(shared)!r}\nos.chdir({str(work)!r})"
    alice, bob = kernel(hub, "alice"), kernel(hub, "bob")
    try:
        alice.run(SETUP.format(before=before))
        alice.run("run = %pi my plan for the shared volume\nawait run")
        [written] = shared.rglob("*.jsonl")  # the same folder both would use
        assert '"user":"alice"' in written.read_text().splitlines()[0]

        assert bob.run(SETUP.format(before=before)).stdout == ""
        assert bob.run("%pi sessions").stdout.startswith("pi: no saved sessions in ")
        assert bob.run("%pi resume").stdout == "pi: no saved session to resume here (%pi sessions lists them)\n"
        assert "1 saved session(s)" in alice.run("%pi sessions").stdout
    finally:
        alice.shutdown()
        bob.shutdown()


def test_the_admins_policy_binds_every_user_and_none_can_loosen_it(hub: Hub) -> None:
    policy = hub.root / "policy.toml"
    carol = kernel(hub, "carol")
    try:
        carol.run(SETUP.format(before=""))
        out = carol.run("%pi settings").stdout
        assert f"locked by policy ({policy}):" in out
        assert "budget.max_cost_usd = 2.0  (locked by policy: at most 2)" in out
        refused = carol.run("%pi settings budget.max_cost_usd=50").stdout
        assert refused == f"pi: budget.max_cost_usd is locked by policy: at most 2 (asked for 50) ({policy})\n"
        model = carol.run("%pi model openai:gpt-4o").stdout
        assert model.startswith("pi: model openai:gpt-4o is not allowed by policy")
        out = carol.run(
            "os.environ['PI_NOTEBOOK_POLICY'] = os.devnull\n"
            "try:\n"
            "    configure(settings={'tools': {'approval': {'bash': 'auto'}}})\n"
            "except Exception as exc:\n"
            "    print(type(exc).__name__, str(exc).split(' (')[0])\n"
            "print(get_session().settings.budget.max_cost_usd)"
        ).stdout
        assert out == "PolicyError tools.approval.bash is locked by policy: bash always asks\n2.0\n"
    finally:
        carol.shutdown()
