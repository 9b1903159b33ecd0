"""Issue 30 item 2 in a real kernel: the README's LiteLLM setup (``%pi model … --key-env VAR``) with a canary key in
``VAR`` (in the kernel's environment from its start, as a user's shell would put it), over real loopback HTTP, with
tools that print the environment (bash's ``env`` and the kernel's own ``/proc/<pid>/environ``, python's
``os.environ``) past the output tail, and a model that writes the key into a tool call and streams it in its reply:
the canary is in no iopub message (outputs, display updates, every widget comm message), not in the session file,
the temp logs or the request bodies the server received; bash and python did not have the variable."""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_harness import Kernel

from pi_notebook.testing import FaultServer, Reply

pytestmark = pytest.mark.timeout(120)

CANARY = "canary-kernel-9d41c7e2a05f"
FILLER_LINES = 6000  # about 70 KB: past the 50 KB tail, so the full output goes to a temp log


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Kernel]:
    monkeypatch.setenv("LLM_PROXY", CANARY)  # a name that does not say "key": only --key-env makes it one
    monkeypatch.setenv("PI_NOTEBOOK_SESSIONS__DIR", str(tmp_path / "sessions"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # the kernel's temp logs: not in a /tmp others clean
    kernel = Kernel()
    yield kernel
    kernel.shutdown()


def everything(kernel: Kernel, code: str, timeout: float = 60) -> list[dict[str, Any]]:
    """Every iopub message (of any cell, comm messages included) until the cell ``code`` is idle."""
    msg_id = kernel.client.execute(code)
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            message = kernel.client.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            continue
        seen.append(message)
        content = message["content"]
        if message["msg_type"] == "error":
            raise AssertionError(f"a cell failed: {content['ename']}: {content['evalue']}")
        if message["parent_header"].get("msg_id") == msg_id and content.get("execution_state") == "idle":
            return seen
    raise TimeoutError(f"cell did not finish within {timeout} s")


def stdout(messages: list[dict[str, Any]]) -> str:
    return "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")


def test_a_key_env_canary_is_in_no_message_file_or_request(kernel: Kernel, server: FaultServer, tmp_path: Path) -> None:
    bash = (
        f'yes filler-line | head -n {FILLER_LINES}; env; echo "in env: [$LLM_PROXY]"; '
        "tr '\\0' '\\n' < /proc/$PPID/environ | grep LLM_PROXY"
    )
    python = (
        "import os\n"
        f"print('filler-line\\n' * {FILLER_LINES})\n"
        "print(dict(os.environ))\n"
        "print('in environ:', os.environ.get('LLM_PROXY'))"
    )
    server.script(
        [
            Reply.tool_call("bash", {"command": bash}, id="call-bash"),
            Reply.tool_call("python", {"code": python}, id="call-python"),
            Reply.tool_call("bash", {"command": f"echo 'passed on: {CANARY}'"}, id="call-echo"),
            Reply.text(f"The key is {CANARY}.", chunk_chars=3),
        ]
    )
    spec = f"openai-compatible:{server.openai_base_url}:m"
    messages = everything(kernel, "%load_ext pi_notebook")
    messages += everything(kernel, f"%pi model {spec} --key-env LLM_PROXY\n%pi settings tools.approval=auto")
    messages += everything(kernel, "run = %pi print the environment")
    report = everything(
        kernel,
        "import json\n"
        "r = await run\n"
        "results = [m for m in run.messages if m.role == 'toolResult']\n"
        "print('RESULTS ' + json.dumps([m.content[0].text for m in results]))\n"
        "print('LOGS ' + json.dumps([(m.details or {}).get('full_output_path') for m in results]))\n"
        "print('REPLY ' + run.messages[-1].content[0].text)",
    )
    messages += report
    lines = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in stdout(report).splitlines() if " " in line}
    bash_text, python_text, echo_text = json.loads(lines["RESULTS"])
    assert "in env: []" in bash_text  # not in bash's environment
    assert "LLM_PROXY=***" in bash_text  # the kernel's start-up environment, read from /proc: redacted
    assert "in environ: None" in python_text  # not in os.environ while the agent's code ran
    assert echo_text == "passed on: ***\n"
    assert lines["REPLY"] == "The key is ***."
    logs = [path for path in json.loads(lines["LOGS"]) if path]
    assert len(logs) == 2
    restored = stdout(everything(kernel, f"import os; print(os.environ.get('LLM_PROXY') == {CANARY!r})"))
    assert restored == "True\n"  # the user's environment is whole again after the call
    assert len(server.requests) == 4

    comm_messages = [m for m in messages if m["msg_type"].startswith("comm_")]
    assert len(comm_messages) > 10  # the widget talked
    [session_file] = (tmp_path / "sessions").rglob("*.jsonl")
    places = {
        "iopub messages": json.dumps([m["content"] for m in messages]),
        "session file": session_file.read_text(encoding="utf-8"),
        **{f"temp log {n}": Path(path).read_text(encoding="utf-8", errors="replace") for n, path in enumerate(logs)},
        **{f"request {n} body": request.body.decode() for n, request in enumerate(server.requests)},
    }
    assert [place for place, text in places.items() if CANARY in text] == []
    assert {request.api_key for request in server.requests} == {CANARY}  # the key itself was sent, as a header
