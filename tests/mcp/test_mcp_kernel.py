"""``%pi mcp`` in a real kernel (jupyter_client): add a stdio server written with the SDK, list it and its tools, a
run that calls them (a read-only tool runs; one that changes things is refused at once where nobody can answer),
``configure()`` keeping the servers, remove killing the server's processes; bad lines as one line; the
``mcpServers`` file read at ``%load_ext`` without waiting for a server that hangs; and a kernel killed with SIGKILL
(or shut down at once) taking its servers' processes with it."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from kernel_harness import Kernel
from mcp_helpers import SERVER

pytestmark = pytest.mark.timeout(240)

README = Path(__file__).resolve().parents[2] / "README.md"

ADD = f"%pi mcp add test -- {sys.executable} {SERVER}"
PID = "from pi_notebook.notebook._registry import REGISTRY; print(REGISTRY.mcp.get({name!r}).pid)"
RUN = """
from pi_notebook.notebook import configure, _approval
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
_approval.FRONTEND_WAIT_S = 0  # as under nbclient: nobody can answer
faux = FauxProvider(token_size=(1, 1))
calls = [faux_tool_call("mcp__test__echo", {"text": "from the kernel"}, id="c1"),
         faux_tool_call("mcp__test__note", {"text": "x"}, id="c2")]
faux.set_responses([faux_assistant_message(calls, "toolUse"), faux_assistant_message("done")])
configure(model=faux.model, stream_fn=faux.stream, settings={"retry": {"enabled": False}})
run = %pi go
report = await run
print("RESULTS " + json.dumps([(m.content[0].text, m.is_error) for m in run.messages if m.role == "toolResult"]))
"""


def wait_for(condition: Callable[[], bool], what: str, deadline_s: float = 15.0) -> None:
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > deadline_s:
            raise AssertionError(f"not {what} within {deadline_s} s")
        time.sleep(0.01)


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_add_list_tools_run_and_remove(kernel: Kernel) -> None:
    added = kernel.run(ADD, timeout=90)
    assert added.error is None
    assert added.text.startswith("pi: MCP server test: ready (pi-notebook-test-server) in ")
    assert "offered as mcp__test__*" in added.text
    listed = kernel.run("%pi mcp list").text
    assert listed.startswith(f"test: ready; 11 tools; {sys.executable} {SERVER}")
    tools = kernel.run("%pi mcp tools test").text
    assert "mcp__test__echo  auto  Return the text as it was given." in tools
    assert "mcp__test__note  ask  Append a note" in tools
    assert "mcp__test__echo" in kernel.run("%pi tools").text

    ran = kernel.run("import json\n" + RUN, timeout=90)
    results = json.loads(ran.stdout.split("RESULTS ", 1)[1])
    assert results[0] == ["from the kernel", False]
    assert results[1][1] and results[1][0].startswith("mcp__test__note was not run: it needs the user's approval")
    assert "test: ready" in kernel.run("%pi mcp list").text  # configure() kept the server

    pid = int(kernel.run(PID.format(name="test")).text)
    assert running(pid)
    removed = kernel.run("%pi mcp remove test")
    assert removed.text.startswith("pi: MCP server test removed")
    assert not running(pid)
    assert "mcp__test__echo" not in kernel.run("%pi tools").text
    assert kernel.run("%pi mcp list").text.startswith("pi: no MCP servers")


def test_configure_makes_its_mcp_servers_the_kernels_and_otherwise_keeps_them(kernel: Kernel) -> None:
    kernel.run(ADD, timeout=90)
    servers = {"other": {"command": sys.executable, "args": [str(SERVER)]}}
    kernel.run(f"from pi_notebook.notebook import configure\nconfigure(mcp_servers={servers!r})")
    wait_for(lambda: kernel.run("%pi mcp list").text.startswith("other: ready"), "other ready", 60)
    assert "test:" not in kernel.run("%pi mcp list").text  # replaced: exactly those given
    kernel.run("configure()")
    assert kernel.run("%pi mcp list").text.startswith("other: ready")  # kept
    kernel.run("configure(mcp_servers={})")
    assert kernel.run("%pi mcp list").text.startswith("pi: no MCP servers")


def test_the_readmes_lines_for_the_reference_servers_run_as_written(kernel: Kernel) -> None:
    section = README.read_text().split("## MCP servers", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith(("%pi mcp add time", "%pi mcp add git"))]
    assert len(lines) == 2
    for line in lines:  # trailing comments included
        assert ": ready (mcp-" in kernel.run(line, timeout=90).text, line
    listed = kernel.run("%pi mcp list").text
    assert "time: ready; 2 tools; mcp-server-time --local-timezone UTC" in listed
    assert "git: ready; 12 tools; mcp-server-git --repository ." in listed
    assert "mcp__git__git_commit  ask" in kernel.run("%pi mcp tools git").text
    for name in ("time", "git"):
        kernel.run(f"%pi mcp remove {name}")


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("%pi mcp", "pi: mcp takes add, list, tools, remove, restart"),
        ("%pi mcp remove nope", "pi: no MCP server 'nope' (servers: "),
        ("%pi mcp add x", "pi: mcp add NAME -- COMMAND [ARGS...] (stdio) or mcp add NAME URL (streamable HTTP)"),
        ("%pi mcp add bad__name -- x", "pi: bad MCP server name 'bad__name'"),
        ("%pi mcp add x --header 'X-Api-Key: abcdefgh12345' http://127.0.0.1:9/mcp", "holds a key: write it as ${VAR}"),
        ("%pi mcp add x --env TOKEN=${NOT_SET_ANYWHERE} -- x", "the environment variable NOT_SET_ANYWHERE is not set"),
    ],
)
def test_a_bad_line_is_one_line_and_no_traceback(kernel: Kernel, line: str, said: str) -> None:
    outcome = kernel.run(line)
    assert outcome.error is None
    assert said in outcome.text
    assert "Traceback" not in outcome.text


def test_the_servers_file_starts_at_load_ext_without_waiting_for_a_server_that_hangs(tmp_path: Path) -> None:
    config = {
        "mcpServers": {
            "hung": {"command": sys.executable, "args": [str(SERVER), "--hang-initialize"], "startupTimeout": 3000},
            "test": {"command": sys.executable, "args": [str(SERVER)]},
        }
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    kernel = Kernel(env={**os.environ, "PI_NOTEBOOK_MCP_CONFIG": str(path)})
    try:
        loaded = kernel.run("%load_ext pi_notebook", timeout=120)
        assert f"pi: MCP servers from {path}: hung, test (%pi mcp list shows their state)" in loaded.text
        first = kernel.run("%pi mcp list").text
        assert first.startswith("hung: starting")  # %load_ext did not wait for it
        wait_for(
            lambda: "hung: failed: it did not answer initialize within 3 s" in kernel.run("%pi mcp list").text,
            "hung failed",
            30,
        )
        wait_for(lambda: "test: ready" in kernel.run("%pi mcp list").text, "test ready", 30)
    finally:
        kernel.shutdown()


@pytest.mark.parametrize("how", ["sigkill", "shutdown_now"])
def test_a_dying_kernel_takes_its_servers_processes_with_it(fresh_kernel: Kernel, how: str) -> None:
    fresh_kernel.run("%load_ext pi_notebook", timeout=120)
    assert "ready" in fresh_kernel.run(ADD, timeout=90).text
    pid = int(fresh_kernel.run(PID.format(name="test")).text)
    kernel_pid = int(fresh_kernel.run("import os; print(os.getpid())").text)
    try:
        assert running(pid)
        if how == "sigkill":
            os.kill(kernel_pid, signal.SIGKILL)
        else:
            fresh_kernel.manager.shutdown_kernel(now=True)
        wait_for(lambda: not running(pid), "the server gone")
    finally:
        if running(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    kernel = Kernel()
    try:
        kernel.run("%load_ext pi_notebook", timeout=120)
        yield kernel
    finally:
        kernel.shutdown()
