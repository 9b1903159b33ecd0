"""The cell tools in a real kernel (jupyter_client), against a page double (``fake_page.FakePage``: what the
extension's ``cells.ts`` does, on an in-memory notebook, over a real control comm on a real subshell): the agent (a
scripted faux model) reads, inserts, edits, deletes and runs cells; ``cell_run`` is stopped by every stop path as a
cell is, the third of three runs never starts after a Stop, and a cell awaiting the run does not block it. The real
page is tested in tests/browser/test_lab_cells.py."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
from control_frontend import Frontend
from fake_page import FakePage, code, markdown
from kernel_harness import Kernel

from pi_notebook.notebook._inert import inline

pytestmark = pytest.mark.timeout(180)

SETUP = """
import json, sys, time
from pi_notebook.notebook import configure, get_session
from pi_notebook.kernel import cell_tools
from pi_notebook.kernel import add_python_listener, python_tool
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
globals().get("remove_listener", lambda: None)()
real_stdout = sys.stdout
ends = []
def on_python(event):
    if event.kind == "start":
        print(f"code start {{event.call_id}}", file=real_stdout, flush=True)
remove_listener = add_python_listener(on_python)
faux = FauxProvider(token_size=(1, 1))
calls = {calls}
replies = [faux_assistant_message(c if isinstance(c, list) else [c], "toolUse") for c in calls]
faux.set_responses([*replies, faux_assistant_message("done")])
configure(model=faux.model, stream_fn=faux.stream, tools=[*cell_tools(), python_tool()], settings={settings})
def on_event(event):
    if event.type == "tool_execution_end":
        ends.append({{"name": event.tool_name, "text": event.result.content[0].text, "is_error": event.is_error,
                      "details": event.result.details}})
get_session().subscribe(on_event)
"""
REPORT = """
report = await run
print("REPORT " + json.dumps({"ends": ends, "aborted": run.aborted, "labels": run.labels, "log": run.log,
                              "receipt": report.receipt.as_dict(), "markdown": report.markdown}, default=str))
"""
SETTINGS = {"retry": {"enabled": False}, "compaction": {"enabled": False}, "tools": {"approval": "auto"}}
BUSY = "print('second')\nn = 0\nwhile True:\n    n += 1"
SLEEP = "import time\nprint('second')\ntime.sleep(1000)"


def call(name: str, arguments: dict[str, Any], id: str | None = None) -> str:
    return f"faux_tool_call({name!r}, {arguments!r}, id={(id or name)!r})"


def setup(frontend: Frontend, calls: list[str], settings: dict[str, Any] | None = None) -> None:
    frontend.run(SETUP.format(calls="[" + ", ".join(calls) + "]", settings=repr({**SETTINGS, **(settings or {})})))


def finish(frontend: Frontend) -> dict[str, Any]:
    """Await the run (it must settle) and return what the kernel recorded."""
    msg_id = frontend.execute(REPORT)
    frontend.finished(msg_id)
    text = "".join(
        m["content"]["text"]
        for m in frontend.seen
        if m["msg_type"] == "stream" and m["parent_header"].get("msg_id") == msg_id
    )
    report: dict[str, Any] = json.loads(text.split("REPORT ", 1)[1])
    return report


def run_agent(
    frontend: Frontend, calls: list[str], settings: dict[str, Any] | None = None, *, idle: FakePage | None = None
) -> dict[str, Any]:
    """Run the agent on ``calls``; with ``idle`` (the page), no cell of the user's runs meanwhile: the run is
    awaited only once the page's status says it settled."""
    setup(frontend, calls, settings)
    mark = len(frontend.seen)
    frontend.execute("run = %pi go")
    if idle is not None:
        frontend.wait(lambda m: settled(m, idle.comm) and m in frontend.seen[mark:], what="the run settled")
    return finish(frontend)


def settled(message: dict[str, Any], comm_id: str) -> bool:
    """A state push on ``comm_id`` saying the run settled."""
    if message["msg_type"] != "comm_msg" or message["content"]["comm_id"] != comm_id:
        return False
    return message["content"]["data"].get("state") in ("settled", "aborted", "error")


def notebook() -> list[dict[str, Any]]:
    return [
        markdown("intro", "# Prices"),
        code("load", "prices = [3, 1, 2]", execution_count=1),
        code("show", "print(sum(prices))", [{"output_type": "stream", "name": "stdout", "text": "6\n"}]),
        code("keep", "SECRET = 1", tags=["pi-protected"]),
    ]


def test_notebook_read_gives_every_cell_with_its_id_source_and_outputs(frontend: Frontend) -> None:
    FakePage(frontend, notebook())
    report = run_agent(frontend, [call("notebook_read", {})])
    [end] = report["ends"]
    assert end["is_error"] is False
    mark = re.match(r"Each cell is between <cell-([0-9a-f]+) ", end["text"])
    assert mark is not None
    text = end["text"].replace(f"-{mark[1]}>", ">").replace(f"-{mark[1]} ", " ")  # this read's boundaries, plain
    assert '<cell index="0" id="intro" type="markdown">\n# Prices\n</cell>' in text
    assert '<cell index="1" id="load" type="code" execution_count="1">\nprices = [3, 1, 2]\n</cell>' in text
    show = '<cell index="2" id="show" type="code" execution_count="">\nprint(sum(prices))\n<outputs>\n6\n</outputs>'
    assert show in text
    assert 'id="keep" type="code" execution_count="" tags="pi-protected"' in text
    details = end["details"]
    assert [cell["id"] for cell in details["cells"]] == ["intro", "load", "show", "keep"]
    assert details["cells"][2] == {
        "id": "show",
        "index": 2,
        "cell_type": "code",
        "source": "print(sum(prices))",
        "execution_count": None,
        "tags": [],
        "outputs": "6",  # what the model read of the outputs, not their raw bundles
    }
    assert details["total"] == 4 and details["path"] == "work/notebook.ipynb"


def test_insert_after_a_cell_edit_it_with_old_and_new_text_and_delete_one(frontend: Frontend) -> None:
    page = FakePage(frontend, notebook())
    calls = [
        call("cell_insert", {"source": "mean = sum(prices) / len(prices)", "after": "load"}),
        call("cell_edit", {"cell_id": "show", "edits": [{"oldText": "sum(prices)", "newText": "max(prices)"}]}),
        call("cell_delete", {"cell_id": "intro"}),
    ]
    report = run_agent(frontend, calls)
    insert, edit, delete = report["ends"]
    assert insert["text"] == "Inserted code cell new-1 at index 2 (after cell load)."
    assert [cell["id"] for cell in page.cells] == ["load", "new-1", "show", "keep"]
    assert page.cell("new-1")["tags"] == ["pi-agent"]
    assert page.cell("new-1")["metadata"] == {"pi_notebook": {"run": 1, "change": "inserted"}}
    assert edit["is_error"] is False
    assert edit["text"].startswith("Successfully replaced 1 block(s) in cell show.\n\n")
    assert "-1 print(sum(prices))\n+1 print(max(prices))" in edit["text"]
    assert page.cell("show")["source"] == "print(max(prices))"
    assert page.cell("show")["tags"] == ["pi-agent"]
    assert delete["text"] == "Deleted markdown cell intro (it was at index 0)."
    [edit_request] = page.ops("edit")
    assert edit_request["expect"] == "print(sum(prices))"  # only applied if the user has not typed meanwhile


def test_the_cell_tools_act_on_the_runs_own_notebook_never_on_one_whose_path_ends_the_same(
    frontend: Frontend,
) -> None:
    mine = FakePage(frontend, notebook(), path="sub/nb.ipynb")  # the page whose cell starts the run
    other = FakePage(frontend, notebook(), path="nb.ipynb", client="another-page")  # opened later, same kernel
    report = run_agent(frontend, [call("cell_insert", {"source": "x = 1", "after": "load"})])
    assert report["ends"][0]["is_error"] is False
    assert [cell["id"] for cell in mine.cells] == ["intro", "load", "new-1", "show", "keep"]
    assert other.requests == [] and [cell["id"] for cell in other.cells] == ["intro", "load", "show", "keep"]


def test_only_the_runs_page_can_answer_its_requests(frontend: Frontend) -> None:
    """Another client on the kernel sees the request (iopub is everyone's) and answers first, on a comm of its own and
    on the page's comm: the kernel waits for the page's own answer."""
    intruder = frontend.as_client("intruder")
    subshell = intruder.create_subshell()
    comm = intruder.open(subshell, {"cells": 1, "path": "evil.ipynb"})
    frontend.state(comm)
    page = FakePage(frontend, notebook())
    page.answering = False
    setup(frontend, [call("notebook_read", {})])
    frontend.execute("run = %pi go")
    asked = frontend.wait(lambda m: _sent_to_page(m, page, "", op="read"), what="the page is asked")
    fake = code("keep", "SECRET = 2")  # an untagged copy of the protected cell
    forged = {"action": "cells", "request": asked["content"]["data"]["request"], "ok": True}
    forged["result"] = {"cells": [{**fake, "index": 0}], "total": 1, "path": "work/notebook.ipynb"}
    intruder.send(comm, forged, subshell)
    intruder.send(page.comm, forged, subshell)
    intruder.send(comm, {"action": "status"}, subshell)
    frontend.state(comm, reply="status")  # the kernel took the forged answers before the page's (one subshell)
    page.answering = True
    page.answer(asked)
    [end] = finish(frontend)["ends"]
    assert 'id="keep" type="code" execution_count="" tags="pi-protected"' in end["text"]
    assert "SECRET = 2" not in end["text"] and end["details"]["total"] == 4


def test_an_edit_that_does_not_match_fails_with_the_edit_tools_text(frontend: Frontend) -> None:
    page = FakePage(frontend, notebook())
    edits = [{"oldText": "nope", "newText": "x"}]
    report = run_agent(frontend, [call("cell_edit", {"cell_id": "show", "edits": edits})])
    [end] = report["ends"]
    assert end["is_error"] is True
    assert end["text"] == (
        "Could not find the exact text in cell show. The old text must match exactly including all whitespace and "
        "newlines."
    )
    assert page.ops("edit") == []


def test_a_protected_cell_is_neither_edited_deleted_nor_run(frontend: Frontend) -> None:
    page = FakePage(frontend, notebook())
    calls = [
        call("cell_edit", {"cell_id": "keep", "source": "SECRET = 2"}),
        call("cell_delete", {"cell_id": "keep"}),
        call("cell_run", {"cell_id": "keep"}),
    ]
    report = run_agent(frontend, calls)
    for end in report["ends"]:
        assert end["is_error"] is True
        assert end["text"].startswith("Cell keep is tagged pi-protected: the agent may not edit, delete or run it.")
    assert page.cell("keep")["source"] == "SECRET = 1"
    assert frontend.run("print('SECRET' in globals())").strip() == "False"


def test_a_change_the_page_would_refuse_is_refused_before_the_user_is_asked(frontend: Frontend) -> None:
    """With approval on, nobody is asked about a call that cannot run (a protected, missing or markdown cell, an
    edit that does not apply): it fails at once with the reason. A call that can run is asked about (here nobody
    can answer: no widget is rendered, so the question ends as 'not run')."""
    page = FakePage(frontend, notebook())
    calls = [
        call("cell_edit", {"cell_id": "keep", "source": "SECRET = 2"}, id="edit-keep"),
        call("cell_delete", {"cell_id": "keep"}, id="delete-keep"),
        call("cell_run", {"cell_id": "keep"}, id="run-keep"),
        call("cell_run", {"cell_id": "intro"}, id="run-intro"),
        call("cell_edit", {"cell_id": "show", "edits": [{"oldText": "nope", "newText": "x"}]}, id="no-match"),
        call("cell_delete", {"cell_id": "gone"}, id="gone"),
        call("cell_edit", {"cell_id": "show", "source": "print(max(prices))"}, id="asks"),
    ]
    frontend.run("from pi_notebook.notebook import _approval\nwaited, _approval.PAGE_WAIT_S = _approval.PAGE_WAIT_S, 1")
    try:
        report = run_agent(frontend, calls, {"tools": {"approval": "ask"}})
    finally:
        frontend.run("_approval.PAGE_WAIT_S = waited")  # (the fake page renders no widget: nobody answers)
    texts = [end["text"] for end in report["ends"]]
    protected = "Cell keep is tagged pi-protected: the agent may not edit, delete or run it."
    assert [text.startswith(protected) for text in texts[:3]] == [True, True, True]
    assert texts[3] == "Cell intro is not a code cell: it is a markdown cell; only code cells run."
    assert texts[4].startswith("Could not find the exact text in cell show.")
    assert texts[5].startswith("No cell with id 'gone' in the notebook.")
    assert texts[6].startswith("cell_edit was not run: it needs the user's approval")  # asked: nobody could answer
    assert [page.ops(op) for op in ("edit", "delete", "run_begin")] == [[], [], []]
    checked = [request["cell_id"] for request in page.ops("check")]
    assert checked == ["keep", "keep", "keep", "intro", "show", "gone", "show"]


def test_cell_run_runs_the_cell_in_the_users_namespace_and_writes_its_outputs_and_count(frontend: Frontend) -> None:
    page = FakePage(frontend, notebook())
    frontend.run("prices = [3, 1, 2]")
    page.cell("show")["source"] = "print(sum(prices))\nsorted(prices)"
    report = run_agent(frontend, [call("cell_run", {"cell_id": "show"})], idle=page)
    [end] = report["ends"]
    assert end["is_error"] is False
    count = end["details"]["execution_count"]
    assert end["text"] == f"Cell show ran as In [{count}].\n\n6\n[1, 2, 3]"
    cell = page.cell("show")
    assert cell["execution_count"] == count
    assert cell["outputs"] == [
        {"output_type": "stream", "name": "stdout", "text": "6\n"},
        {"output_type": "execute_result", "execution_count": count, "data": {"text/plain": "[1, 2, 3]"}}
        | {"metadata": {}},
    ]
    assert frontend.run(f"print(Out[{count}], _{count}, In[{count}].splitlines()[0])").strip() == (
        "[1, 2, 3] [1, 2, 3] print(sum(prices))"
    )


# -- stopping a running cell --------------------------------------------------------------------------------
BATCH = "[" + ", ".join(call("cell_run", {"cell_id": name}, id=f"run-{name}") for name in "abc") + "]"
"""One reply asking to run a, b and c, in that order."""


def start_three(frontend: Frontend, b: str = BUSY, settings: dict[str, Any] | None = None) -> FakePage:
    """The agent runs cells a, b, c (one reply); returns once b's code runs and has printed 'second'."""
    cells = [code("a", "print('first')"), code("b", b), code("c", "print('third')")]
    page = FakePage(frontend, cells)
    setup(frontend, [BATCH], settings)
    frontend.execute("run = %pi go")
    frontend.wait(lambda m: _printed(m, "code start run-b"), what="cell b's code started")
    frontend.wait(lambda m: _sent_to_page(m, page, "second"), what="cell b printed")
    return page


def _printed(message: dict[str, Any], needle: str) -> bool:
    return message["msg_type"] == "stream" and needle in message["content"]["text"]


def _sent_to_page(message: dict[str, Any], page: FakePage, needle: str, op: str = "run_output") -> bool:
    if message["msg_type"] != "comm_msg" or message["content"]["comm_id"] != page.comm:
        return False
    data = message["content"]["data"]
    return data.get("op") == op and needle in json.dumps(data.get("outputs", ""))


def interrupted_in_the_cell(page: FakePage, cell_id: str) -> None:
    outputs = page.cell(cell_id)["outputs"]
    assert outputs[0] == {"output_type": "stream", "name": "stdout", "text": "second\n"}
    assert outputs[-1]["output_type"] == "error" and outputs[-1]["ename"] == "KeyboardInterrupt"
    assert page.cell(cell_id)["execution_count"] is not None and cell_id not in page.running


@pytest.mark.parametrize("body", [BUSY, SLEEP], ids=["busy loop", "sleep"])
def test_a_stop_during_the_second_of_three_runs_interrupts_it_and_the_third_never_starts(
    frontend: Frontend, body: str
) -> None:
    page = start_three(frontend, body)
    frontend.send(page.comm, {"action": "abort"}, page.subshell)  # the toolbar Stop, Accel+., the widget's Stop
    report = finish(frontend)
    first, second = report["ends"]
    assert first["text"].startswith("Cell a ran as In [") and first["text"].endswith("first")
    assert second["is_error"] is True
    assert "KeyboardInterrupt" in second["text"] and second["text"].endswith("Interrupted: Stopped by the user")
    interrupted_in_the_cell(page, "b")
    assert [request["cell_id"] for request in page.ops("run_begin")] == ["a", "b"]  # c never started
    assert page.cell("c")["outputs"] == [] and page.cell("c")["execution_count"] is None
    assert report["aborted"] is True
    # the receipt: the event log (and so the static copy) ends with it, and await run returns it as data
    receipt = report["receipt"]
    assert receipt["cells_run"] == ["a"] and receipt["cells_interrupted"] == ["b"]
    assert receipt["interrupted_because"] == "Stopped by the user" and receipt["cells_never_run"] == ["c"]
    tail = [(label, detail) for _, label, detail in report["log"]][-4:]
    assert tail[0] == ("agent_settled", "aborted=true")
    assert tail[1:3] == [
        ("receipt", "cells ran `a`"),
        ("receipt", "stopped: cells interrupted `b` (Stopped by the user); never ran `c`"),
    ]
    assert tail[3][0] == "receipt" and tail[3][1].startswith("spent in ")
    last_row = report["markdown"].removesuffix("\n\n</div>").splitlines()[-1]  # the static copy's event log
    assert last_row.endswith(f"| {inline(tail[3][1])} |")
    assert frontend.run("print('next cell', n > 0 if 'n' in globals() else 'slept')").startswith("next cell")


def test_the_kernel_interrupt_ends_the_running_cell_and_aborts_the_run(kernel: Kernel, frontend: Frontend) -> None:
    page = start_three(frontend)
    kernel.interrupt()
    report = finish(frontend)
    second = report["ends"][1]
    assert second["text"].endswith("KeyboardInterrupt\n\nInterrupted by the kernel's interrupt; the run is aborted")
    interrupted_in_the_cell(page, "b")
    assert [request["cell_id"] for request in page.ops("run_begin")] == ["a", "b"]
    assert report["aborted"] is True


def test_the_calls_timeout_ends_the_cell_and_the_run_goes_on_to_the_next(frontend: Frontend) -> None:
    cells = [code("a", "print('first')"), code("b", BUSY), code("c", "print('third')")]
    page = FakePage(frontend, cells)
    batch = "[" + ", ".join(call("cell_run", {"cell_id": n, "timeout": 0.5}, id=f"run-{n}") for n in "abc") + "]"
    report = run_agent(frontend, [batch])
    _, second, third = report["ends"]
    assert second["is_error"] is True
    assert second["text"].endswith("KeyboardInterrupt\n\nCell b timed out after 0.5 seconds")
    interrupted_in_the_cell(page, "b")
    assert third["is_error"] is False and page.cell("c")["outputs"][0]["text"] == "third\n"
    assert report["aborted"] is False


@pytest.mark.parametrize(
    ("settings", "line", "aborted"),
    [
        ({"timeouts": {"tool_ms": 500}}, "Interrupted: Tool cell_run timed out after 0.5 seconds", False),
        ({"timeouts": {"turn_ms": 700}}, "Interrupted: Turn timed out", True),
        ({"budget": {"wall_time_ms": 700}}, "Interrupted: Run budget exceeded (wall_time)", True),
    ],
    ids=["tool_ms", "turn_ms", "wall-time budget"],
)
def test_the_sessions_timeouts_and_budget_end_the_running_cell(
    frontend: Frontend, settings: dict[str, Any], line: str, aborted: bool
) -> None:
    page = FakePage(frontend, [code("b", BUSY), code("c", "print('third')")])
    batch = "[" + ", ".join(call("cell_run", {"cell_id": n}, id=f"run-{n}") for n in "bc") + "]"
    report = run_agent(frontend, [batch], settings)
    second = report["ends"][0]
    assert second["is_error"] is True and line in second["text"], second["text"]
    interrupted_in_the_cell(page, "b")
    assert report["aborted"] is aborted
    assert [r["cell_id"] for r in page.ops("run_begin")] == (["b"] if aborted else ["b", "c"])


def test_cell_run_works_while_the_cell_that_started_the_run_awaits_it(frontend: Frontend) -> None:
    page = FakePage(frontend, [code("work", "print('ran while awaited')\n6 * 7")])
    setup(frontend, [call("cell_run", {"cell_id": "work"})])
    before = int(frontend.run("print(len(In) - 1)"))  # this cell's count (IPython 8 and 9 alike)
    msg_id = frontend.execute("run = %pi go\nreport = await run\nprint('awaited', report.aborted)")
    frontend.finished(msg_id)
    assert frontend.run("print('done')").strip() == "done"
    cell = page.cell("work")
    assert cell["outputs"][0]["text"] == "ran while awaited\n" and cell["outputs"][1]["data"] == {"text/plain": "42"}
    # the awaiting cell held the next count; the agent's cell took it, the awaiting cell ended with the one after
    count = cell["execution_count"]
    assert count == before + 1
    reply = [m for m in frontend.seen if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "stream"]
    assert "awaited False" in "".join(m["content"]["text"] for m in reply)
    check = f"print(In[{count}].splitlines()[0], '|', In[{count + 1}].splitlines()[0], '|', Out[{count}])"
    assert (
        frontend.run(check).strip()
        == "print('ran while awaited') | run = get_ipython().run_line_magic('pi', 'go') | 42"
    )


def test_a_cell_that_raises_or_awaits_at_top_level_shows_its_error_in_the_cell_and_result(
    frontend: Frontend,
) -> None:
    page = FakePage(frontend, [code("bad", "x = 1\nratio(x)"), code("async", "import asyncio\nawait asyncio.sleep(0)")])
    frontend.run("def ratio(x):\n    return x / 0")
    defined = int(frontend.run("print(len(In) - 2)"))  # the cell that defined ratio
    batch = "[" + ", ".join(call("cell_run", {"cell_id": name}, id=f"run-{name}") for name in ("bad", "async")) + "]"
    report = run_agent(frontend, [batch])
    bad, asynchronous = report["ends"]
    assert bad["is_error"] is True and bad["text"].endswith("ZeroDivisionError: division by zero")
    [error] = page.cell("bad")["outputs"]
    assert error["output_type"] == "error" and error["ename"] == "ZeroDivisionError"
    count = page.cell("bad")["execution_count"]
    frames = [line for line in error["traceback"] if line.startswith("  Cell In[")]  # as a notebook names cells
    assert frames == [f"  Cell In[{count}], line 2, in <module>", f"  Cell In[{defined}], line 2, in ratio"]
    assert asynchronous["is_error"] is True
    assert "a cell with top-level await cannot be run by cell_run; ask the user to run it" in asynchronous["text"]
    assert "python tool" not in asynchronous["text"]
    assert report["aborted"] is False


# -- keys ----------------------------------------------------------------------------------------------------
KEY = "sk-test-0123456789abcdefXYZ"
LEAKS = """
import base64, os
from IPython.display import HTML, display
env = os.environ.get("OPENAI_API_KEY")
print("env:", env, "b64:", base64.b64encode(env.encode()).decode() if env else None)
print("held by the user:", MINE)
display(HTML(f"<b>{MINE}</b>"))
!echo "child: [$OPENAI_API_KEY]"
{"key": MINE}
"""


def test_keys_are_hidden_from_a_cells_code_and_redacted_from_its_outputs_before_the_page_gets_them(
    frontend: Frontend,
) -> None:
    page = FakePage(frontend, [code("leak", LEAKS), code("raise", "raise ValueError(f'bad key {MINE}')")])
    frontend.run(f"import os; os.environ['OPENAI_API_KEY'] = {KEY!r}; MINE = os.environ['OPENAI_API_KEY']")
    try:
        batch = "[" + ", ".join(call("cell_run", {"cell_id": n}, id=f"run-{n}") for n in ("leak", "raise")) + "]"
        report = run_agent(frontend, [batch], idle=page)
        assert frontend.run("print(os.environ['OPENAI_API_KEY'] == MINE)").strip() == "True"  # put back after
    finally:
        frontend.run("del os.environ['OPENAI_API_KEY']")
    b64 = base64.b64encode(KEY.encode()).decode()
    sent = [json.dumps(request) for request in page.requests]
    assert sent and not [text for text in sent if KEY in text or b64 in text]
    leak, raised = (page.cell(name)["outputs"] for name in ("leak", "raise"))
    text = "".join(output.get("text", "") for output in leak)
    assert "env: None b64: None\n" in text  # the variable was not in the code's os.environ
    assert "held by the user: ***\n" in text and "child: []" in text
    assert [output["data"] for output in leak if output["output_type"] != "stream"] == [
        {"text/html": "<b>***</b>", "text/plain": "<IPython.core.display.HTML object>"},
        {"text/plain": "{'key': '***'}"},
    ]
    assert raised[0]["evalue"] == "bad key ***" and KEY not in json.dumps(raised)
    assert all(KEY not in end["text"] and b64 not in end["text"] for end in report["ends"])
