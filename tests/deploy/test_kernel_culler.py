"""Jupyter Server's own kernel culler (``MappingKernelManager.cull_idle_timeout``, ``cull_connected=False``, no browser
connected) against a real Jupyter Server: a kernel whose ``%pi`` run has a tool silent for longer than the cull
timeout is not culled while the run works, and is culled as any other once the run has settled; an idle kernel
beside it is culled. The timeout is short (``CULL_S``); the tool is silent until the idle kernel beside it has been
culled, so for longer than the timeout however slowly that kernel started (the issue's example is a 3-minute silent
tool: what matters is a tool silent for longer than the timeout). The activity signal's interval
(``PI_NOTEBOOK_ACTIVITY_INTERVAL``) is set below the timeout, as the README tells an admin to.

The agent's tool is ``python`` (``time.sleep``): it holds the kernel's main thread, so the signal must come from
its own thread."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from python_runs import silent_run
from served import Served, free_port
from ws_kernel import RemoteKernel, wait_until

pytestmark = pytest.mark.timeout(240)

CULL_S = 8
"""The kernel culler's timeout (its check runs every second)."""
ACTIVITY_S = 2


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("culling")
    port, token = free_port(), secrets.token_hex(16)
    served = Served(
        [
            sys.executable, "-m", "jupyter", "server", "--no-browser", "--allow-root", f"--port={port}",
            "--ip=127.0.0.1", f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}",
            f"--MappingKernelManager.cull_idle_timeout={CULL_S}", "--MappingKernelManager.cull_interval=1",
            "--MappingKernelManager.cull_connected=False",
        ],
        log=root / "jupyter-server.log",
        ready=f"http://127.0.0.1:{port}/api/status?token={token}",
        env={"JUPYTER_RUNTIME_DIR": str(root / ".run"), "PI_NOTEBOOK_ACTIVITY_INTERVAL": str(ACTIVITY_S)},
        cwd=root,
    )  # fmt: skip
    yield f"http://127.0.0.1:{port}", token
    served.close()
    print(f"server log: {Path(served.log)}")  # noqa: T201


def test_a_kernel_whose_run_has_a_silent_tool_is_not_culled_until_the_run_settles(
    server: tuple[str, str], tmp_path: Path
) -> None:
    base, token = server
    done = tmp_path / "done"  # the working run's tool says nothing until this file exists
    working = RemoteKernel.start(base, token).connect()
    out = working.run(silent_run(done))
    assert out.error is None, out.error
    working.close()  # no browser: cull_connected=False would spare a connected kernel
    idle = RemoteKernel.start(base, token).connect()
    assert idle.run("%load_ext pi_notebook").error is None
    idle.close()

    # The idle kernel, whose last activity came after the working one's last message, is culled first (however
    # long it took to start: the working run's tool stays silent until told)...
    wait_until(lambda: not idle.alive(), 6 * CULL_S, "the idle kernel is culled")
    # ...while the working one, silent since its tool started, is kept alive by its run.
    assert working.alive()

    done.touch()
    working.connect()
    report = working.run("await run\nprint(run.aborted, run.messages[-2].content[0].text, run.messages[-1].content)")
    assert report.stdout.startswith("False slept "), report.stdout  # the tool ran to its end, the run settled
    working.close()
    # Settled: culled as any other kernel.
    wait_until(lambda: not working.alive(), 6 * CULL_S, "the settled kernel is culled")


NEVER_STOPS = """
%load_ext pi_notebook
from pi_notebook.notebook import configure
from pi_notebook.kernel import python_tool
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
code = '''import time
while True:
    try:
        while True:
            try:
                time.sleep(0.05)
            except BaseException:
                pass
    except BaseException:
        pass'''
faux = FauxProvider(token_size=(1, 1))
faux.set_responses([faux_assistant_message([faux_tool_call("python", {"code": code})], "toolUse")])
settings = {"tools": {"approval": "auto"}, "budget": {"wall_time_ms": 1000}}
configure(model=faux.model, stream_fn=faux.stream, tools=[python_tool()], settings=settings)
run = %pi loop
"""


def test_a_kernel_whose_code_never_stops_is_culled_once_the_wall_time_has_failed_to_stop_it(
    server: tuple[str, str],
) -> None:
    """Issue 37 item 21: code that swallows every interrupt outlives ``budget.wall_time_ms`` and its escalation and
    holds the kernel's main thread; its run could not settle, so the activity signal kept the kernel from the culler
    forever. Once the escalation has failed the run is over for the signal, and the culler reclaims the kernel."""
    base, token = server
    stuck = RemoteKernel.start(base, token).connect()
    out = stuck.run(NEVER_STOPS)
    assert out.error is None, out.error
    stuck.close()
    wait_until(lambda: not stuck.alive(), 6 * CULL_S, "the kernel whose code never stops is culled")
