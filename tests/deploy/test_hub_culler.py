"""``jupyterhub-idle-culler`` on a real JupyterHub: it stops a user's whole server once the hub's ``last_activity`` for
it is older than its timeout; the single-user server reports its activity (its kernels' included) to the hub every
``JUPYTERHUB_ACTIVITY_INTERVAL`` seconds. A user whose ``%pi`` run has a tool silent for longer than the timeout
keeps their server while the run works, and loses it as any idle user once the run has settled; an idle user beside
them loses theirs. Short timeout and intervals; the tool is silent until the idle user's server is culled (see
test_kernel_culler.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hub import Hub
from python_runs import silent_run
from ws_kernel import RemoteKernel, wait_until

pytestmark = pytest.mark.timeout(300)

CULL_S = 15
"""The culler's ``--timeout``; it looks every ``CULL_EVERY_S``."""
CULL_EVERY_S = 2
REPORT_S = 2
"""``JUPYTERHUB_ACTIVITY_INTERVAL``: how often a single-user server tells the hub its last activity."""


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    culler = [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={CULL_S}", f"--cull-every={CULL_EVERY_S}"]
    scopes = ["list:users", "read:users:activity", "read:servers", "delete:servers"]
    hub = Hub(
        tmp_path_factory.mktemp("hub-culler"),
        environment={"JUPYTERHUB_ACTIVITY_INTERVAL": str(REPORT_S), "PI_NOTEBOOK_ACTIVITY_INTERVAL": "1"},
        services=[{"name": "idle-culler", "command": culler}],
        roles=[{"name": "idle-culler", "scopes": scopes, "services": ["idle-culler"]}],
    )
    yield hub
    hub.close()


def test_a_users_server_with_a_working_run_is_not_culled_until_the_run_settles(hub: Hub, tmp_path: Path) -> None:
    done = tmp_path / "done"  # the working run's tool says nothing until this file exists
    working = RemoteKernel.start(hub.server("carol"), hub.token).connect()
    assert working.run(silent_run(done)).error is None
    working.close()
    idle = RemoteKernel.start(hub.server("dave"), hub.token).connect()
    assert idle.run("%load_ext pi_notebook").error is None
    idle.close()

    wait_until(lambda: not hub.running("dave"), 4 * CULL_S, "the idle user's server is culled")
    assert hub.running("carol")  # silent since its tool started, before dave's last message

    done.touch()
    working.connect()
    report = working.run("await run\nprint(run.aborted, run.messages[-2].content[0].text)")
    assert report.stdout == "False slept\n", report.stdout
    working.close()
    wait_until(lambda: not hub.running("carol"), 4 * CULL_S, "the settled user's server is culled")
