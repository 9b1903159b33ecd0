"""In real JupyterLab with Debian's Chromium: ``run = %pi ...`` shows the widget, watch it stream, click Stop, see
the event log record agent_end then agent_settled with aborted=true. Screenshots land in test-artifacts/."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lab_harness import JupyterLab, notebook, wait_for_log

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
    cells = [SETUP, "run = %pi tell me a long story", "%pi once more", "%pi wait", "display(run)"]
    path = notebook(cells, lab.root / "stop.ipynb")
    page = lab.open(path)
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    lab.run_cell(page, 1)
    view = page.locator(".pi-run-view").first
    view.locator(".pi-msg-assistant .pi-msg-body h1").wait_for(timeout=60_000)  # markdown rendered while streaming
    assert page.locator(".jp-Cell").nth(1).locator(".pi-run-view").count() == 1  # an assigned run shows its widget
    page.locator(".pi-run-state.pi-state-streaming").first.wait_for(timeout=30_000)
    lab.screenshot(page, "widget-streaming.png")
    view.get_by_role("button", name="Stop").click()
    settled = view.locator(".pi-log-agent_settled .pi-log-detail")
    settled.wait_for(timeout=30_000)
    assert settled.inner_text() == "aborted=true"
    wait_for_log(page, 0, ["agent_end", "agent_settled"])
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
    # display(run) in a later cell: a second live view of the first run, drawn from its snapshot
    lab.run_cell(page, 4)
    again = page.locator(".jp-Cell").nth(4).locator(".pi-run-view")
    again.locator(".pi-log-agent_settled .pi-log-detail").wait_for(timeout=30_000)
    assert again.count() == 1
    assert again.locator(".pi-log-agent_settled .pi-log-detail").inner_text() == "aborted=true"
    assert again.locator(".pi-run-state").inner_text() == "aborted"


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
    wait_for_log(page, 0, ["compaction_start", "compaction_end"], at_start=True)
    lab.screenshot(page, "widget-compaction.png")


LONG_SETUP = """\
%load_ext pi_notebook
from pi_notebook.notebook import configure, get_notebook_session
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
section = ("## Step {n}\\n\\nThe agent read **{n} files**; see `parse()` and [the docs][docs].\\n\\n- one\\n- two\\n\\n"
           "```python\\ndef step_{n}(values):\\n    return [v * {n} for v in values]\\n```\\n\\n"
           "| file | lines |\\n|---|---:|\\n| a_{n}.py | {n} |\\n\\n")
wide = "| " + " | ".join(f"column {i} value" for i in range(30)) + " |\\n|" + "---|" * 30 + "\\n"
wide += "| x " * 30 + "|\\n\\n"
url = "See https://example.com/" + "a" * 400 + " for more.\\n\\n"
report = ("# Report\\n\\n" + wide + url + "".join(section.format(n=n) for n in range(1, 301))
          + "[docs]: https://example.com/docs\\n")
faux = FauxProvider(tokens_per_second=6000, token_size=(4, 4))
faux.set_responses([faux_assistant_message(report)])
configure(model=faux.model, stream_fn=faux.stream)
"""
MANY_EVENTS = """\
run = get_notebook_session().current_run
await run
for i in range(10_000):
    run.view.transcript.add({"op": "event", "t": 5_000 + i, "label": "turn_start", "detail": f"turn {i}"})
run.view.transcript.flush()
print(len(run.log) + 10_000)
"""


def test_a_long_reply_renders_every_block_and_the_log_keeps_its_last_rows(lab: JupyterLab) -> None:
    lab.shutdown_kernels()
    path = notebook([LONG_SETUP, "%pi write a report", MANY_EVENTS], lab.root / "long.ipynb")
    page = lab.open(path, workspace="long")
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    lab.run_cell(page, 1)
    view = page.locator(".pi-run-view").first
    view.locator(".pi-run-state.pi-state-settled").wait_for(timeout=120_000)
    body = view.locator(".pi-msg-assistant .pi-msg-body")
    body.locator("h2", has_text="Step 300").wait_for(timeout=30_000)
    counts = body.evaluate(
        """body => ({h2: body.querySelectorAll('h2').length, tables: body.querySelectorAll('table').length,
        code: body.querySelectorAll('pre > code.language-python').length, items: body.querySelectorAll('li').length,
        links: [...body.querySelectorAll('a')].filter(a => a.href === 'https://example.com/docs').length})"""
    )
    # the reference definition comes last: every finished block that uses it was drawn again
    assert counts == {"h2": 300, "tables": 301, "code": 300, "items": 600, "links": 300}
    transcript = view.locator(".pi-run-transcript")
    height, top, client = transcript.evaluate("t => [t.scrollHeight, t.scrollTop, t.clientHeight]")
    assert client <= 480 < height  # bounded, with its own scroll
    assert height - top - client < 30  # it followed the stream to the end
    lab.screenshot(page, "widget-long-reply.png")
    # finished blocks are clipped to their group: a wide table scrolls on its own, a long URL wraps (measured once
    # the first group is in view again: the browser skips laying out groups far from it)
    transcript.evaluate("t => { t.scrollTop = 0; }")
    page.wait_for_function("() => document.querySelector('.pi-msg-assistant .pi-msg-body table').scrollWidth > 0")
    wide, url, width = body.evaluate(
        """body => {const table = body.querySelector('table'), p = [...body.querySelectorAll('p')]
        .find(p => p.textContent.includes('aaaa'));
        return [[table.scrollWidth, table.clientWidth], [p.scrollWidth, p.clientWidth], body.clientWidth]}"""
    )
    assert wide[0] > wide[1] and wide[1] <= width, (wide, width)  # wider than the body: its own scroll
    assert url[0] <= url[1], url
    lab.run_cell(page, 2)
    lab.wait_idle(page, 2)
    total = int(page.locator(".jp-Cell").nth(2).locator(".jp-OutputArea-output").inner_text().strip())
    rows = view.locator(".pi-log-row")
    view.get_by_text(f"{total - 200:,} earlier events hidden").wait_for(timeout=30_000)
    assert rows.count() == 200
    assert rows.last.locator(".pi-log-detail").inner_text() == "turn 9999"
    lab.screenshot(page, "widget-event-log.png")
    view.get_by_role("button", name="Show 1,000 earlier").click()
    view.get_by_text(f"{total - 1200:,} earlier events hidden").wait_for(timeout=30_000)
    assert rows.count() == 1200
    view.get_by_role("button", name="Show all").click()
    page.wait_for_function(f"() => document.querySelectorAll('.pi-log-row').length === {total}", timeout=30_000)
    assert view.locator(".pi-log-hidden").count() == 0
    assert rows.first.locator(".pi-log-label").inner_text() == "agent_start"
