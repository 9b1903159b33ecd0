"""Settled runs in a real kernel (jupyter_client): 200 runs keep the open widgets bounded and memory per run within
2x the run's transcript; a run whose view closes turns into its static rendering wherever it is shown."""

from __future__ import annotations

import pytest
from kernel_harness import Kernel
from memory_workload import Workload

pytestmark = pytest.mark.timeout(900)


def test_two_hundred_runs_keep_widgets_bounded_and_memory_within_twice_the_transcript(fresh_kernel: Kernel) -> None:
    workload = Workload(fresh_kernel, reply_chars=20_000, trace=True)
    workload.runs(20)
    before = workload.probe()
    per_view = int(
        fresh_kernel.run(
            "from pi_notebook.notebook.widget._view import _widget_tree\n"
            "print(len(_widget_tree(get_notebook_session().runs[-1].view)))"
        ).text
    )
    workload.runs(180)
    after = workload.probe()
    runs = after.runs - before.runs
    transcript = (after.transcript - before.transcript) / runs
    assert after.runs == 200 and transcript > 20_000
    # Flat from run 20 to run 200, and no more than the 10 most recent settled runs' views and the newest one's.
    assert after.widgets == before.widgets <= 11 * per_view
    traced = (after.traced - before.traced) / runs
    assert traced <= 2 * transcript, f"{traced:,.0f} B of Python objects per run for a {transcript:,.0f} B transcript"
    rss = (after.rss - before.rss) / runs  # tracemalloc's own bookkeeping and allocator slack come on top
    assert rss <= 5 * transcript, f"RSS grew {rss:,.0f} B per run for a {transcript:,.0f} B transcript"


def test_a_run_shown_twice_turns_static_everywhere_when_its_view_closes(fresh_kernel: Kernel) -> None:
    Workload(fresh_kernel, reply_chars=100)
    fresh_kernel.run("from pi_notebook.notebook._registry import REGISTRY; REGISTRY.recent.keep = 0")
    fresh_kernel.run('_pi_faux.set_responses([faux_assistant_message("first reply")])')
    shown = fresh_kernel.run("%pi first").outputs
    [live] = [output["content"] for output in shown if output["msg_type"] == "display_data"]
    display_id = live["transient"]["display_id"]
    assert "application/vnd.jupyter.widget-view+json" in live["data"]
    fresh_kernel.run("first = get_notebook_session().runs[0]\n_ = await first")
    [again] = fresh_kernel.run("display(first)").outputs
    assert again["content"]["transient"]["display_id"] == display_id
    assert "application/vnd.jupyter.widget-view+json" in again["content"]["data"]

    fresh_kernel.run('_pi_faux.set_responses([faux_assistant_message("second reply")])')
    outputs = fresh_kernel.run("second = %pi second").outputs  # run 1 is settled and beyond keep=0: its view closes
    [update] = [output["content"] for output in outputs if output["msg_type"] == "update_display_data"]
    assert update["transient"]["display_id"] == display_id
    assert "application/vnd.jupyter.widget-view+json" not in update["data"]
    assert "first reply" in update["data"]["text/markdown"]
    assert "`agent_settled`" in update["data"]["text/markdown"]
    [static] = fresh_kernel.run("display(first)").outputs
    assert "first reply" in static["content"]["data"]["text/markdown"]
    closed = fresh_kernel.run("print(first.view is None, [e.type for e in first.events].count('message_update'))")
    assert closed.text.strip() == "True 0"
