"""What a settled run keeps: closing its view frees every widget, the registry keeps only recent views open,
``configure()`` closes the replaced session's views. With a dummy comm; the kernel test is test_memory_kernel.py."""

from __future__ import annotations

import gc
import weakref
from functools import partial

import pytest
from ipywidgets.widgets import widget as widget_module

from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
from pi_notebook.notebook import Run
from pi_notebook.notebook._registry import SessionRegistry
from pi_notebook.notebook.widget._view import RunView, _widget_tree
from pi_notebook.session import AgentSession, Settings

pytestmark = pytest.mark.usefixtures("dummy_comm")  # every widget here talks to a dummy comm (conftest)


def faux_with(*texts: str, tps: float | None = None) -> FauxProvider:
    faux = FauxProvider(tokens_per_second=tps)
    faux.set_responses([faux_assistant_message(text) for text in texts])
    return faux


def open_widgets() -> set[str]:
    return set(widget_module._instances)


def view_of(run: Run) -> RunView:
    assert run.view is not None
    return run.view


async def test_closing_a_settled_runs_view_closes_every_widget_and_keeps_the_compact_record() -> None:
    faux = faux_with("hello " * 2000)
    session = AgentSession(model=faux.model, stream_fn=faux.stream, settings=Settings(compaction={"enabled": False}))
    run = Run(session, 1, lambda: session.prompt("go"), label="go")
    await run
    view = view_of(run)
    tree = _widget_tree(view)
    assert len(tree) >= 20  # boxes, buttons, the text box, the transcript, their layouts and styles
    ids = {widget.model_id for widget in tree}
    assert ids <= open_widgets()
    labels = run.labels
    assert any(event.type == "message_update" for event in run.events)
    transcript = weakref.ref(view.transcript)
    del view, tree

    run.close_view()

    assert run.view is None
    assert not ids & open_widgets()
    gc.collect()
    assert transcript() is None  # nothing (anywidget's file watcher included) holds a closed widget
    assert run.labels == labels
    assert not any(event.type in ("message_update", "tool_execution_update") for event in run.events)
    assert [m.role for m in run.transcript] == ["user", "assistant"]
    bundle = run._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/markdown", "text/plain"}
    assert "hello hello" in bundle["text/markdown"] and "`agent_settled`" in bundle["text/markdown"]
    run.close_view()  # closing again does nothing


async def test_an_active_run_closes_its_view_when_it_settles() -> None:
    faux = faux_with("word " * 5000, tps=2000)
    session = AgentSession(model=faux.model, stream_fn=faux.stream)
    run = Run(session, 1, lambda: session.prompt("go"), label="go")
    await run.wait_for("message_update")
    ids = {widget.model_id for widget in _widget_tree(view_of(run))}
    run.close_view()
    assert run.view is not None  # still streaming: the widget stays
    run.abort()
    report = await run
    assert report.aborted
    assert run.view is None
    assert not ids & open_widgets()


async def test_the_registry_keeps_only_the_most_recent_settled_views_open() -> None:
    before = open_widgets()
    registry = SessionRegistry()
    registry.recent.keep = 2
    faux = faux_with(*(f"reply {i}" for i in range(5)))
    entry = registry.configure(model=faux.model, stream_fn=faux.stream)
    runs = []
    for i in range(5):
        text = f"prompt {i}"
        run = entry.start(text, partial(entry.session.prompt, text))
        runs.append(run)
        await run
    # When run 5 started, runs 1-4 had settled: the two most recent (3, 4) stayed open, and run 5 is open.
    assert [run.view is not None for run in runs] == [False, False, True, True, True]
    still_open = {widget.model_id for run in runs if run.view is not None for widget in _widget_tree(run.view)}
    assert open_widgets() - before == still_open


async def test_configure_closes_the_views_of_the_replaced_sessions_runs() -> None:
    before = open_widgets()
    registry = SessionRegistry()
    quick = faux_with("done")
    entry = registry.configure(model=quick.model, stream_fn=quick.stream)
    settled = entry.start("one", lambda: entry.session.prompt("one"))
    await settled
    quick.set_responses([faux_assistant_message("word " * 5000)])
    quick.tokens_per_second = 2000
    active = entry.start("two", lambda: entry.session.prompt("two"))
    await active.wait_for("message_update")
    registry.configure()
    assert settled.view is None
    report = await active
    assert report.aborted and active.view is None
    assert open_widgets() - before == set()
