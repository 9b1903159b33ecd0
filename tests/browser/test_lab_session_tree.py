"""The session tree in a run widget, in real JupyterLab with Debian's Chromium: the foldable tree of prompts, a click
on a prompt forks there (a fork run drawn below, with the branch summary, the old prompt back in its box), Send goes
on from the fork, and every open view's tree shows the new branch.

Every wait is on the DOM. Screenshots: test-artifacts/lab-tree-*.png."""

from __future__ import annotations

import pytest
from lab_harness import JupyterLab, notebook
from playwright.sync_api import Locator, Page, expect

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("one_kernel_at_a_time")]

WAIT = 30_000  # ms; every wait is on the DOM, this is only the bound

SETUP = """
%load_ext pi_notebook
from pi_notebook.notebook import configure
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
faux = FauxProvider(token_size=(1, 1))
faux.set_responses([faux_assistant_message(text) for text in
                    ("the first answer", "the second answer", "the gist of it", "an answer after the fork")])
configure(model=faux.model, stream_fn=faux.stream, settings={"sessions": {"dir": "none"}})
"""


def first_view_title(page: Page) -> Locator:
    """The tree panel's title in the first run's view (never opened: only the number of prompts was sent)."""
    return page.locator(".pi-run-view.pi-run-1 .pi-run-tree .pi-tree-title").first


def test_a_click_on_a_prompt_of_the_tree_forks_there(lab: JupyterLab) -> None:
    path = notebook([SETUP, "%pi first question", "%pi second question"], lab.root / "tree.ipynb")
    page = lab.open(path, workspace=path.stem)
    for index in range(3):  # each %pi returns at once: the next prompt is sent once the run before it settled
        lab.run_cell(page, index)
        lab.wait_idle(page, index)
        if index:
            run = page.locator(f".pi-run-view.pi-run-{index}")
            expect(run.locator(".pi-log-agent_settled .pi-log-detail")).to_have_text("aborted=false", timeout=WAIT)
    second = page.locator(".pi-run-view.pi-run-2")
    tree = second.locator(".pi-run-tree").first
    title = tree.locator(".pi-tree-title")
    expect(title).to_have_text("Session tree: 2 prompts (open it to see them and fork)", timeout=WAIT)
    expect(tree.locator(".pi-tree-body")).to_be_hidden()  # folded until opened, and not sent until then
    title.click()
    expect(title).to_have_text("Session tree: 2 prompts, 1 branch (click a prompt to continue from before it)")
    expect(tree.locator("button.pi-tree-fork")).to_have_text(["first question", "second question"])
    expect(tree.locator(".pi-tree-here")).to_have_count(1)
    lab.screenshot(page, "lab-tree-open.png")

    tree.get_by_role("button", name="second question").click()
    fork = second.locator(".pi-run-view.pi-run-3")  # the fork run, drawn below the view it was clicked in
    expect(fork.locator(".pi-log-session_tree").first).to_be_visible(timeout=WAIT)
    expect(fork.locator(".pi-msg-summary")).to_contain_text("the gist of it")
    expect(fork.locator("textarea").first).to_have_value("second question")  # the old prompt, to edit and send
    # the tree of the view clicked in is redrawn: the branch left behind and the summary, each a fold
    expect(title).to_have_text(
        "Session tree: 2 prompts, 2 branches (click a prompt to continue from before it)", timeout=WAIT
    )
    expect(tree.locator("details.pi-tree-branch")).to_have_count(2)
    expect(tree.locator(".pi-tree-kind-summary.pi-tree-current")).to_contain_text("the gist of it")

    fork.locator("textarea").first.fill("second question, asked another way")
    fork.get_by_role("button", name="Send").click()
    after = fork.locator(".pi-run-view.pi-run-4")
    expect(after.locator(".pi-msg-assistant")).to_contain_text("an answer after the fork", timeout=WAIT)
    expect(tree.locator(".pi-tree-here")).to_have_count(1)
    expect(first_view_title(page)).to_have_text("Session tree: 3 prompts (open it to see them and fork)")
    expect(tree.locator(".pi-tree-current button.pi-tree-fork")).to_have_text(
        ["first question", "second question, asked another way"], timeout=WAIT
    )
    lab.screenshot(page, "lab-tree-forked.png")
