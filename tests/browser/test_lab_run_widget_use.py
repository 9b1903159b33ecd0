"""Issue 31 in real JupyterLab with Debian's Chromium: what a user met using the run widget with a real model.

* item 2: Ctrl+. right after answering an approval (the box hides, the focus fell to ``<body>``, the shortcut's
  selector no longer matched) stops the approved code; the focus goes back to the notebook; Ctrl+. works with the
  focus on the page itself;
* item 3: a follow-up typed into a settled run's box starts a new run, drawn below it, and is not delivered into a
  later run of another cell;
* item 7: a tool panel shows the call as code (python highlighted, a command line), the arguments one click away;
* item 8: a tool-call-only reply draws no empty ``ASSISTANT`` label, the empty aborted turn after a Stop during a
  tool is not drawn, ``Done`` is not in the red ``Stopped`` style, one Stop logs one ``queue_update`` row.

Every wait is on the DOM. Screenshots: test-artifacts/lab-use-*.png. The server gets the working tree's bundle first
on JUPYTER_PATH (see lab_harness)."""

from __future__ import annotations

import re

import pytest
from lab_harness import JupyterLab, notebook
from playwright.sync_api import Page, expect

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("one_kernel_at_a_time")]

DANGER = re.compile(r"\bmod-danger\b")
WAIT = 30_000  # ms; every wait is on the DOM, this is only the bound
LOOP = "import time\nfor i in range(10**9):\n    time.sleep(0.01)\n"


def setup(calls: str | None, approval: str = "auto", then: str = "done") -> str:
    """A cell that makes the faux model call the tools ``calls`` (a Python list of faux_tool_call; ``None``: none),
    then answer ``then``, then two more answers."""
    first = f"faux_assistant_message({calls}, 'toolUse'), " if calls else ""
    return (
        "%load_ext pi_notebook\n"
        "from pi_notebook.notebook import configure, default_tools\n"
        "from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call\n"
        "faux = FauxProvider(token_size=(1, 1))\n"
        f"faux.set_responses([{first}faux_assistant_message({then!r}),\n"
        "                     faux_assistant_message('a second answer'), faux_assistant_message('a third answer')])\n"
        "configure(model=faux.model, stream_fn=faux.stream, tools=default_tools(),\n"
        f"          settings={{'tools': {{'approval': {approval!r}}}}})\n"
    )


def python_call(code: str) -> str:
    return f"[faux_tool_call('python', {{'code': {code!r}}}, id='py-1')]"


def start(lab: JupyterLab, cells: list[str], name: str) -> Page:
    """Open a notebook of ``cells``, run the setup cell and the ``%pi`` cell (cell 1)."""
    path = notebook(cells, lab.root / f"{name}.ipynb")
    page = lab.open(path, workspace=path.stem)
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    expect(page.locator(".jp-StatusBar-Widget .pi-StatusItem")).to_have_text("pi: idle", timeout=WAIT)
    lab.run_cell(page, 1)
    return page


def test_ctrl_period_stops_the_approved_code_right_after_run_is_clicked(lab: JupyterLab) -> None:
    page = start(lab, [setup(python_call(LOOP), approval="ask"), "%pi loop"], "approve-stop")
    view = page.locator(".pi-run-view").first
    box = view.locator(".pi-approval")
    expect(box).to_be_visible(timeout=WAIT)
    box.locator("button.pi-approve-run").click()
    expect(box).to_be_hidden(timeout=WAIT)
    expect(view.locator(".pi-run-state")).to_have_text("running tool", timeout=WAIT)
    # The focus went back to the notebook (the cell holding the run), not to <body>.
    assert page.evaluate("document.activeElement.closest('.jp-NotebookPanel') !== null")
    page.keyboard.press("Control+Period")  # nothing clicked in between: where the user is after answering
    expect(view.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text("aborted=true", timeout=WAIT)
    expect(view.locator(".pi-tool.pi-tool-error .pi-tool-output")).to_contain_text("Interrupted")
    lab.screenshot(page, "lab-use-stopped-after-approval.png")


def test_ctrl_period_works_with_the_focus_on_the_page_itself(lab: JupyterLab) -> None:
    page = start(lab, [setup(python_call(LOOP)), "%pi loop"], "body-stop")
    view = page.locator(".pi-run-view").first
    expect(view.locator(".pi-run-state")).to_have_text("running tool", timeout=WAIT)
    page.evaluate("document.activeElement.blur()")
    assert page.evaluate("document.activeElement === document.body")
    page.keyboard.press("Control+Period")
    expect(view.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text("aborted=true", timeout=WAIT)


def test_stop_during_a_tool_draws_no_empty_turns_and_logs_one_queue_update(lab: JupyterLab) -> None:
    page = start(lab, [setup(python_call(LOOP)), "%pi loop"], "stop-tool")
    view = page.locator(".pi-run-view").first
    expect(view.locator(".pi-run-state")).to_have_text("running tool", timeout=WAIT)
    stop = view.locator("button.pi-run-stop")
    stop.click()  # the widget's own click, and the extension's forwarded one
    expect(view.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text("aborted=true", timeout=WAIT)
    expect(stop).to_have_text("Stopped")
    expect(stop).to_have_class(DANGER)
    expect(view.locator(".pi-log-queue_update")).to_have_count(1)
    # the tool-call-only reply and the empty aborted reply of the next turn are not drawn as messages
    expect(view.locator(".pi-msg-assistant")).to_have_count(0)
    expect(view.locator(".pi-msg-user")).to_have_count(1)
    expect(view.locator(".pi-tool")).to_have_count(1)
    lab.screenshot(page, "lab-use-stop-during-tool.png")


STUBBORN = """
%load_ext pi_notebook
import asyncio
from pi_notebook.agent import AgentTool, AgentToolResult
from pi_notebook.notebook import configure
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
started = []

async def execute(call_id, args, signal, on_update):  # ignores its abort signal: the session waits its grace
    started.append(call_id)
    await asyncio.sleep(60)
    return AgentToolResult(content="slept")

slow = AgentTool(name="slow", description="Sleeps.", parameters={"type": "object"}, execute=execute)
faux = FauxProvider(token_size=(1, 1))
faux.set_responses([faux_assistant_message([faux_tool_call("slow", {})], "toolUse")])
configure(model=faux.model, stream_fn=faux.stream, tools=[slow], settings={"timeouts": {"abort_grace_ms": 3000}})
"""


def test_one_stop_logs_one_queue_update_when_both_of_its_messages_arrive_before_the_run_settles(
    lab: JupyterLab,
) -> None:
    page = start(lab, [STUBBORN, "%pi sleep"], "stop-twice")
    view = page.locator(".pi-run-view").first
    expect(view.locator(".pi-run-state")).to_have_text("running tool", timeout=WAIT)
    view.locator("button.pi-run-stop").click()  # the widget's comm message, and the extension's forwarded one
    expect(view.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text("aborted=true", timeout=WAIT)
    expect(view.locator(".pi-log-queue_update")).to_have_count(1)


def test_tool_panels_show_the_call_as_code_with_the_arguments_a_click_away(lab: JupyterLab) -> None:
    calls = (
        "[faux_tool_call('python', {'code': 'import math\\nfor i in range(2):  # twice\\n    print(math.pi, i)'},"
        " id='py-1'), faux_tool_call('bash', {'command': 'ls -la | grep \"x\"'}, id='sh-1')]"
    )
    page = start(lab, [setup(calls), "%pi show me your tools"], "panels")
    view = page.locator(".pi-run-view").first
    expect(view.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text("aborted=false", timeout=WAIT)
    python, bash = view.locator(".pi-tool").nth(0), view.locator(".pi-tool").nth(1)
    code = python.locator("pre.pi-tool-preview.pi-syntax-python")
    expect(code).to_have_text("import math\nfor i in range(2):  # twice\n    print(math.pi, i)")
    expect(code.locator(".pi-hl-keyword")).to_have_text(["import", "for", "in"])
    expect(code.locator(".pi-hl-comment")).to_have_text(["# twice"])
    expect(bash.locator("pre.pi-tool-preview.pi-syntax-shell")).to_have_text('$ ls -la | grep "x"')
    expect(bash.locator(".pi-hl-program")).to_have_text(["ls", "grep"])
    arguments = python.locator(".pi-tool-args")
    expect(arguments).to_be_hidden()  # one click away
    python.locator(".pi-tool-args-box > summary").click()
    expect(arguments).to_be_visible()
    expect(arguments).to_contain_text('"code": "import math\\nfor i in range(2)')
    # the reply that only called tools draws no empty ASSISTANT label: the one assistant message is the answer
    expect(view.locator(".pi-msg-assistant")).to_have_count(1)
    expect(view.locator(".pi-msg-assistant")).to_contain_text("done")
    done = view.locator("button.pi-run-stop")
    expect(done).to_have_text("Done")
    expect(done).not_to_have_class(DANGER)  # not the red of Stopped
    lab.screenshot(page, "lab-use-tool-panels.png")


def test_a_follow_up_typed_into_a_settled_run_starts_a_new_run_below_it(lab: JupyterLab) -> None:
    cells = [setup(None, then="the first answer"), "%pi first", "%pi another prompt, in another cell"]
    page = start(lab, cells, "follow-up")
    view = page.locator(".pi-run-view.pi-run-1")
    expect(view.locator(".pi-log-agent_settled .pi-log-detail").first).to_have_text("aborted=false", timeout=WAIT)
    box = view.locator("textarea").first
    send = view.get_by_role("button", name="Send")
    expect(send).to_be_visible()
    expect(view.get_by_role("button", name="Steer")).to_be_hidden()  # nothing runs to steer
    box.fill("and a follow-up, typed into the box")
    send.click()
    nested = view.locator(".pi-run-view.pi-run-2")  # the new run, drawn where the user typed
    expect(nested).to_be_visible(timeout=WAIT)
    expect(nested.locator(".pi-msg-user .pi-msg-body")).to_have_text("and a follow-up, typed into the box")
    expect(nested.locator(".pi-msg-assistant")).to_contain_text("a second answer", timeout=WAIT)
    expect(nested.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text("aborted=false", timeout=WAIT)
    lab.screenshot(page, "lab-use-follow-up.png")
    lab.run_cell(page, 2)  # a later run in another cell gets only its own prompt
    later = page.locator(".pi-run-view.pi-run-3")
    expect(later.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text("aborted=false", timeout=WAIT)
    expect(later.locator(".pi-msg-user .pi-msg-body")).to_have_text(["another prompt, in another cell"])
