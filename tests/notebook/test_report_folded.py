"""``run = %pi ...`` and ``await run`` in one cell showed the transcript twice on the page (issue 37 item 18): the
live widget, then the report. Where a page drew the widget above it, the report's HTML is folded under one line
(whole inside ``<details>``); elsewhere (nbclient, nbconvert, a terminal) it is whole. The Chromium test is
tests/browser/test_lab_run_widget_look.py."""

from __future__ import annotations

from pi_notebook.notebook._run import RunReport

HTML = "<p><strong>Run 1</strong> — settled</p><p>the <em>reply</em></p>"


def report() -> RunReport:
    return RunReport("**Run 1** — settled", aborted=False, error=None, html=HTML, text="Run 1 — settled\n\nthe reply")


def test_under_a_drawn_widget_the_report_is_folded_under_one_line_and_whole_inside() -> None:
    folded = report()
    folded.widget_above = True
    html = folded._repr_html_()
    assert html is not None and html.startswith('<details class="pi-report-folded"><summary>Run 1 — settled: ')
    assert HTML in html and html.endswith("</details>")
    assert folded._repr_markdown_() == "**Run 1** — settled"  # the markdown copy (no page) stays as it was


def test_without_a_drawn_widget_the_report_is_whole() -> None:
    assert report()._repr_html_() == HTML


def test_a_headline_cannot_break_out_of_the_summary() -> None:
    hostile = RunReport("x", aborted=False, error=None, html=HTML, text="Run 1 — error — </summary><script>x</script>")
    hostile.widget_above = True
    html = hostile._repr_html_() or ""
    assert "<script>" not in html and html.count("</summary>") == 1
