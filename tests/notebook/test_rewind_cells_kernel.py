"""``%pi rewind`` of the cell tools' changes in a real kernel, against the page double (``fake_page.FakePage``: what
``cells.ts`` and ``rewind.ts`` do, on an in-memory notebook, over a real control comm on a real subshell): a run
inserts, edits, deletes and runs cells; the rewind puts every cell back (source, type, metadata, outputs, count,
position) in one step of the notebook's undo; a cell the user changed since raises the Overwrite / Keep mine
question, and the answer is obeyed; the variables the run's cell bound go back too. The real page:
tests/browser/test_lab_rewind.py.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from control_frontend import Frontend
from fake_page import FakePage, code, markdown

pytestmark = pytest.mark.timeout(180)

SETUP = """
from pi_notebook.notebook import configure, get_session
from pi_notebook.kernel import cell_tools, python_tool
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
faux = FauxProvider(token_size=(1, 1))
calls = {calls!r}
faux.set_responses([
    *[faux_assistant_message([faux_tool_call(n, a, id=f"c{{i}}")], "toolUse") for i, (n, a) in enumerate(calls)],
    faux_assistant_message("done"),
])
configure(model=faux.model, stream_fn=faux.stream, tools=[*cell_tools(), python_tool()],
          settings={{"retry": {{"enabled": False}}, "tools": {{"approval": "auto"}}}})
"""

CALLS = [
    ("cell_insert", {"source": "mean = sum(prices) / len(prices)", "after": "load"}),
    ("cell_edit", {"cell_id": "show", "edits": [{"oldText": "sum(prices)", "newText": "max(prices)"}]}),
    ("cell_delete", {"cell_id": "intro"}),
    ("cell_run", {"cell_id": "load"}),
]


def notebook() -> list[dict[str, Any]]:
    outputs = [{"output_type": "stream", "name": "stdout", "text": "6\n"}]
    return [
        markdown("intro", "# Prices", metadata={"slideshow": {"slide_type": "slide"}}),
        code("load", "prices = [3, 1, 2]", [{"output_type": "stream", "name": "stdout", "text": "old\n"}]),
        code("show", "print(sum(prices))", outputs, execution_count=4),
    ]


def run_agent(frontend: Frontend, page: FakePage, calls: list[Any]) -> None:
    frontend.run(SETUP.format(calls=calls))
    frontend.run("prices = 'before the run'")
    frontend.run("run = %pi go\nawait run")
    assert page.ops("rewind") == []


def rewind(frontend: Frontend) -> list[str]:
    return frontend.run("receipt = %pi rewind\nprint(receipt)").splitlines()


def test_rewind_puts_every_cell_back_in_one_undo_step(frontend: Frontend) -> None:
    page = FakePage(frontend, notebook())
    before = copy.deepcopy(page.cells)
    run_agent(frontend, page, CALLS)
    after = copy.deepcopy(page.cells)
    assert [cell["id"] for cell in after] == ["load", "new-1", "show"]
    assert frontend.run("print(prices)").strip() == "[3, 1, 2]"  # the run's cell_run bound it

    lines = rewind(frontend)
    assert page.cells == before  # source, type, metadata, outputs, count and position
    assert lines[0] == "rewound run 1"
    assert "cells restored: `load`, `show`" in lines
    assert "cells put back (the run deleted them): `intro`" in lines
    assert "cells deleted (the run inserted them): `new-1`" in lines
    assert "variables given their objects back: `prices`" in lines
    assert frontend.run("print(prices)").strip() == "before the run"
    [request] = page.ops("rewind")
    assert [step["action"] for step in request["steps"]] == ["restore", "insert", "restore", "delete"]
    page.undo()  # the notebook's undo takes the whole rewind back in one step
    assert page.cells == after
    assert page.ops("confirm") == []  # nothing the user changed: nothing to ask


@pytest.mark.parametrize("answer", ["keep", "overwrite"])
def test_a_cell_the_user_edited_since_is_asked_about_and_the_answer_obeyed(frontend: Frontend, answer: str) -> None:
    page = FakePage(frontend, notebook())
    run_agent(frontend, page, CALLS[:2])
    page.cell("show")["source"] = "print(max(prices))  # mine"
    page.dialog_answer = answer
    lines = rewind(frontend)
    [question] = page.ops("confirm")
    assert question["title"] == "Undo run 1: you changed these since. Overwrite them with what they were before?"
    assert question["items"] == ["cell `show`: edited since"]
    assert [cell["id"] for cell in page.cells] == ["intro", "load", "show"]  # the rest goes back either way
    if answer == "keep":
        assert page.cell("show")["source"] == "print(max(prices))  # mine"
        assert "kept yours, changed since the run: cell `show`" in lines
    else:
        assert page.cell("show")["source"] == "print(sum(prices))"
        assert "cells restored: `show`" in lines


def test_a_cell_run_again_by_the_user_since_counts_as_changed(frontend: Frontend) -> None:
    page = FakePage(frontend, notebook())
    run_agent(frontend, page, [CALLS[3]])
    page.cell("load")["execution_count"] += 1  # the user ran it again
    rewind(frontend)
    assert page.ops("confirm")[0]["items"] == ["cell `load`: run again since the run"]
    assert page.cell("load")["outputs"] != [{"output_type": "stream", "name": "stdout", "text": "old\n"}]  # kept


def test_without_a_page_the_cells_are_named_and_the_rest_rewinds(frontend: Frontend) -> None:
    page = FakePage(frontend, notebook())
    run_agent(frontend, page, CALLS[3:])
    frontend.run(
        "from pi_notebook.kernel import KERNEL\nfor f in KERNEL.frontends.connected: KERNEL.frontends.disconnect(f)"
    )
    lines = rewind(frontend)
    assert "not restored: cells `load`: no JupyterLab page shows the notebook now" in lines
    assert "variables given their objects back: `prices`" in lines
    assert json.loads(frontend.run("import json; print(json.dumps(prices))")) == "before the run"


def test_a_rewind_cancelled_while_the_box_waits_gives_nothing_back_and_can_be_asked_again(frontend: Frontend) -> None:
    page = FakePage(frontend, notebook())
    run_agent(frontend, page, CALLS[:2])
    page.cell("show")["source"] = "mine"
    page.dialog_answer = None  # the user leaves the box open
    frontend.run(
        "import asyncio\nfrom pi_notebook.notebook import get_notebook_session\n"
        "from pi_notebook.notebook._rewind import rewind\n"
        "waiting = asyncio.ensure_future(rewind(get_notebook_session()))"
    )
    frontend.wait(lambda m: bool(page.ops("confirm")), what="the box")
    assert frontend.run("waiting.cancel()\nawait asyncio.wait([waiting])\nprint(waiting.cancelled())") == "True\n"
    assert [c["id"] for c in page.cells] == ["intro", "load", "new-1", "show"]  # nothing was given back
    page.dialog_answer = "keep"
    lines = rewind(frontend)
    assert lines[0] == "rewound run 1"  # its checkpoint is still there
    assert [c["id"] for c in page.cells] == ["intro", "load", "show"] and page.cell("show")["source"] == "mine"
