"""A page that opens while a run is being displayed (its ``views`` are made on a subshell's thread, while the main
thread is in ``display``) is not told about the run's widget before the display is sent: it would add the widget to
the cell and then get the display too (two live views in one cell, seen in Chromium after a kernel restart). Once
the display is sent, the run is in the views. A unit test beside the Chromium reattach tests: ``display`` is
replaced by one that asks for the views while it "sends"."""

from __future__ import annotations

from typing import Any

import pytest

from pi_notebook.notebook.widget import _display
from pi_notebook.notebook.widget._display import RunDisplay


class FakeView:
    model_id = "model-1"
    comm = object()


def test_a_run_is_in_the_views_only_once_its_display_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    run_display = RunDisplay(
        "display-1", plain="Run 1: hello", widget=lambda: None, static=lambda: ("md", "<p>html</p>")
    )
    seen_while_sending: list[dict[str, Any] | None] = []

    def display(*args: Any, **kwargs: Any) -> None:
        seen_while_sending.append(run_display.view_ref(1, FakeView()))  # type: ignore[arg-type]

    monkeypatch.setattr(_display, "display", display)
    run_display.show()
    assert seen_while_sending == [None]
    ref = run_display.view_ref(1, FakeView())  # type: ignore[arg-type]
    assert ref is not None and ref["model_id"] == "model-1"
