"""In real JupyterLab with Debian's Chromium: run a %pi cell, watch it stream, click Stop, see the event log
record agent_end then agent_settled with aborted=true. Screenshots land in test-artifacts/."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lab_harness import JupyterLab, notebook

pytestmark = pytest.mark.timeout(300)

SETUP = """\
%load_ext pi_notebook
from pi_notebook.notebook import configure
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
faux = FauxProvider(tokens_per_second=60, token_size=(1, 1))
story = "# A long story\\n\\nOnce upon a time, **an agent** kept talking. " + "And talking. " * 400
faux.set_responses([faux_assistant_message(story), faux_assistant_message("A *second* run, after the stop.")])
configure(model=faux.model, stream_fn=faux.stream)
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    lab = JupyterLab(tmp_path_factory.mktemp("lab"))
    yield lab
    lab.close()


def test_stop_in_the_browser_settles_the_run_aborted(lab: JupyterLab) -> None:
    path = notebook([SETUP, "%pi tell me a long story", "%pi once more", "%pi wait"], lab.root / "stop.ipynb")
    page = lab.open(path)
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    lab.run_cell(page, 1)
    view = page.locator(".pi-run-view").first
    view.locator(".pi-msg-assistant .pi-msg-body h1").wait_for(timeout=60_000)  # markdown rendered while streaming
    page.locator(".pi-run-state.pi-state-streaming").first.wait_for(timeout=30_000)
    lab.screenshot(page, "widget-streaming.png")
    view.get_by_role("button", name="Stop").click()
    settled = view.locator(".pi-log-agent_settled .pi-log-detail")
    settled.wait_for(timeout=30_000)
    assert settled.inner_text() == "aborted=true"
    labels = view.locator(".pi-log-label").all_inner_texts()
    assert labels.index("agent_end") < labels.index("agent_settled")
    assert view.locator(".pi-run-state").inner_text() == "aborted"
    assert view.get_by_role("button", name="Stopped").is_disabled()
    lab.screenshot(page, "widget-stopped.png")
    # a new run works after the stop
    lab.run_cell(page, 2)
    second = page.locator(".pi-run-view").nth(1)
    second.locator(".pi-log-agent_settled .pi-log-detail").wait_for(timeout=60_000)
    assert second.locator(".pi-log-agent_settled .pi-log-detail").inner_text() == "aborted=false"
    assert "second" in second.locator(".pi-msg-assistant .pi-msg-body").inner_text()
    lab.run_cell(page, 3)
    page.get_by_text("agent_settled").last.wait_for(timeout=30_000)
    lab.screenshot(page, "widget-report.png", full_page=True)


COMPACT_SETUP = """\
%load_ext pi_notebook
from pi_notebook.notebook import configure, get_session
from pi_notebook.ai import TextContent, UserMessage
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
faux = FauxProvider(tokens_per_second=200, token_size=(1, 1))
summary = "## Goal\\nAnswer four questions about **gardening**.\\n\\n## Next Steps\\n1. Water"
faux.set_responses([faux_assistant_message(summary)])
history = []
for i in range(4):
    history += [UserMessage(content=[TextContent(text=f"question {i} " + "x" * 400)]),
                faux_assistant_message(f"answer {i} " + "y" * 400)]
configure(model=faux.model, stream_fn=faux.stream, settings={"compaction": {"keep_recent_tokens": 200}})
get_session().agent.state.messages = history
"""


def test_percent_pi_compact_shows_the_summary_in_the_widget(lab: JupyterLab) -> None:
    lab.shutdown_kernels()  # the earlier test's kernel and page (two cores only)
    path = notebook([COMPACT_SETUP, "%pi compact focus on gardening"], lab.root / "compact.ipynb")
    page = lab.open(path, workspace="compact")  # a fresh workspace: the earlier notebook is not restored
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    lab.run_cell(page, 1)
    view = page.locator(".pi-run-view").first
    view.locator(".pi-log-compaction_end").wait_for(timeout=60_000)
    body = view.locator(".pi-msg-summary .pi-msg-body")
    body.locator("h2").first.wait_for(timeout=30_000)  # the summary is rendered as markdown
    assert "Answer four questions about gardening." in body.inner_text()
    view.locator(".pi-run-state.pi-state-settled").wait_for(timeout=30_000)
    labels = view.locator(".pi-log-label").all_inner_texts()
    assert labels[:2] == ["compaction_start", "compaction_end"]
    lab.screenshot(page, "widget-compaction.png")
