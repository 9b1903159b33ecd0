"""Approval in a real kernel (jupyter_client), with the notebook's default tools: ``tools.approval=auto`` runs the
agent's ``python`` call and the next cell uses the variable it made; with nothing rendering the widget (as under
nbclient) an asking call ends with the error text that says how to allow it; and Run / Skip / Always clicked
the way a browser does it — the widget's ``hello`` and the buttons' ``click`` sent as comm messages."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from control_frontend import Frontend

from pi_notebook.kernel import CELL_TOOL_NAMES

pytestmark = pytest.mark.timeout(240)

SETUP = """
import json
from pi_notebook.notebook import configure, _approval
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
_approval.FRONTEND_WAIT_S = {wait}
faux = FauxProvider(token_size=(1, 1))
calls = [faux_tool_call("python", {{"code": code}}, id=f"call-{{i}}") for i, code in enumerate({codes!r})]
faux.set_responses([*(faux_assistant_message([c], "toolUse") for c in calls), faux_assistant_message("done")])
configure(model=faux.model, stream_fn=faux.stream, settings={settings!r})
"""
START = """
run = %pi go
print("IDS " + json.dumps({"transcript": run.view.transcript.model_id, "run": run.view.approval.run_button.model_id,
    "skip": run.view.approval.skip_button.model_id, "always": run.view.approval.always_button.model_id}))
"""
REPORT = """
report = await run
print("REPORT " + json.dumps({
    "results": [(m.content[0].text, m.is_error) for m in run.messages if m.role == "toolResult"],
    "approvals": [detail for _, label, detail in run.log if label == "approval"],
    "aborted": run.aborted, "tools": [t.name for t in run.session.tools],
    "offered": [t.name for t in run.session.agent.state.tools]}))
"""
NO_RETRY = {"retry": {"enabled": False}, "compaction": {"enabled": False}}


def cell_output(frontend: Frontend, msg_id: str, marker: str) -> dict[str, Any]:
    frontend.finished(msg_id, timeout=120)
    text = "".join(
        m["content"]["text"]
        for m in frontend.seen
        if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == msg_id
    )
    return dict(json.loads(text.split(marker + " ", 1)[1].splitlines()[0]))


def start(frontend: Frontend, codes: list[str], settings: dict[str, Any], wait: float = 60.0) -> dict[str, Any]:
    frontend.run(SETUP.format(codes=codes, settings={**NO_RETRY, **settings}, wait=wait), timeout=120)
    return cell_output(frontend, frontend.execute(START), "IDS")


def report(frontend: Frontend) -> dict[str, Any]:
    return cell_output(frontend, frontend.execute(REPORT), "REPORT")


def click(frontend: Frontend, model_id: str) -> None:
    """What ipywidgets' browser code sends for a click on a Button."""
    frontend.send(model_id, {"method": "custom", "content": {"event": "click"}})


def render(frontend: Frontend, model_id: str) -> None:
    """What the run widget's browser code sends when a view of it appears."""
    frontend.send(model_id, {"method": "custom", "content": {"type": "hello"}})


def wait_for_question(frontend: Frontend, count: int = 1) -> None:
    """Until the kernel has shown ``count`` questions: the state ``awaiting approval`` reaches the widget."""
    seen = 0

    def question(message: dict[str, Any]) -> bool:
        nonlocal seen
        data = message["content"].get("data", {}) if message["msg_type"] == "comm_msg" else {}
        state = data.get("state", {}) if isinstance(data, dict) else {}
        if isinstance(state, dict) and state.get("state") == "awaiting approval":
            seen += 1
        return seen >= count

    frontend.seen.clear()
    frontend.wait(question, timeout=120, what="the run's state becomes 'awaiting approval'")


def test_auto_runs_the_agents_python_and_the_next_cell_uses_its_variable(frontend: Frontend) -> None:
    start(frontend, ["made_by_agent = 41 + 1"], {"tools": {"approval": "auto"}})
    outcome = report(frontend)
    pis = ["read", "bash", "edit", "write", "grep", "find", "ls", "python"]
    assert outcome["tools"] == [*pis, *CELL_TOOL_NAMES]  # the defaults
    assert outcome["offered"] == pis  # no JupyterLab page here: the cell tools are left out
    assert outcome["results"] == [["(no output)", False]] and outcome["approvals"] == []
    assert frontend.run("print(made_by_agent + 1)").strip() == "43"


def test_with_no_frontend_rendering_the_widget_ask_ends_with_how_to_allow_it(frontend: Frontend) -> None:
    started = time.monotonic()
    start(frontend, ["never_made = 1"], {}, wait=2.0)  # the shipped wait; nothing renders here (as in nbclient)
    outcome = report(frontend)
    elapsed = time.monotonic() - started
    [(text, is_error)] = outcome["results"]
    assert is_error and "python was not run: it needs the user's approval" in text
    assert "%pi settings tools.approval=auto" in text
    assert "NameError" in frontend.run("try:\n    never_made\nexcept NameError as e:\n    print(type(e).__name__)")
    print(f"no-frontend refusal: run settled {elapsed:.2f} s after the setup cell started")  # noqa: T201


@pytest.mark.parametrize("answer", ["run", "skip"])
def test_run_and_skip_clicked_in_the_widget(frontend: Frontend, answer: str) -> None:
    frontend.run("globals().pop('clicked_value', None)")
    ids = start(frontend, ["clicked_value = 'ran'"], {})
    render(frontend, ids["transcript"])
    wait_for_question(frontend)
    click(frontend, ids[answer])
    outcome = report(frontend)
    [(text, is_error)] = outcome["results"]
    if answer == "run":
        assert (text, is_error) == ("(no output)", False)
        assert frontend.run("print(clicked_value)").strip() == "ran"
    else:
        assert is_error and text.startswith("The user declined to run this python call")
        assert frontend.run("print('clicked_value' in globals())").strip() == "False"
    assert outcome["approvals"] == ["python: waiting for Run / Skip / Always", f"python: {answer}"]


def test_always_clicked_once_runs_every_later_call_without_asking(frontend: Frontend) -> None:
    ids = start(frontend, ["first = 1", "second = first + 1"], {})
    render(frontend, ids["transcript"])
    wait_for_question(frontend)
    click(frontend, ids["always"])
    outcome = report(frontend)
    assert outcome["results"] == [["(no output)", False], ["(no output)", False]]
    assert outcome["approvals"] == ["python: waiting for Run / Skip / Always", "python: always"]
    assert frontend.run("print(second)").strip() == "2"
    assert "auto (always, this session)" in frontend.run("%pi tools")


RECORDING = """
import json
import os
from pi_notebook.ai import Cassette
from pi_notebook.ai.models import model_from_spec
from pi_notebook.notebook import configure, _approval
from pi_notebook.testing import FaultServer, Reply
_approval.FRONTEND_WAIT_S = 60
os.environ["OPENAI_API_KEY"] = "sk-test-approval-cassette"
server = FaultServer()
server.script([Reply.tool_call("python", {{"code": "answered_value = 'ran'"}}, id="call_a"), Reply.text("done")])
model = model_from_spec("openai:gpt-test", base_url=server.openai_base_url)
configure(model=model, settings={settings!r}, cassette={path!r})
"""
REPLAYING = """
_approval.FRONTEND_WAIT_S = 5
server.close()
del os.environ["OPENAI_API_KEY"], answered_value
configure(model=model, settings={settings!r}, cassette=Cassette({path!r}, mode="none"))
"""


def test_answers_clicked_while_recording_a_cassette_replay_with_no_frontend(frontend: Frontend, tmp_path: Any) -> None:
    """Recorded: the user clicks Run; replayed (server gone, no key, nothing rendering the widget): the same answer
    at once, the code runs again, the event log says what it said."""
    path = str(tmp_path / "approvals.jsonl")
    frontend.run(RECORDING.format(settings=NO_RETRY, path=path), timeout=120)
    ids = cell_output(frontend, frontend.execute(START), "IDS")
    render(frontend, ids["transcript"])
    wait_for_question(frontend)
    click(frontend, ids["run"])
    recorded = report(frontend)
    assert recorded["results"] == [["(no output)", False]]
    assert recorded["approvals"] == ["python: waiting for Run / Skip / Always", "python: run"]
    assert (
        '{"note":{"kind":"approval","key":{"tool":"python","call":"call_a"}'
        in (tmp_path / "approvals.jsonl").read_text()
    )

    frontend.run(REPLAYING.format(settings=NO_RETRY, path=path), timeout=60)
    frontend.execute("run = %pi go")  # displayed, never rendered: as under nbval
    replayed = report(frontend)
    assert replayed["results"] == recorded["results"]
    assert replayed["approvals"] == recorded["approvals"]
    assert frontend.run("print(answered_value)").strip() == "ran"
