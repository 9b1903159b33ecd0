"""The kernel's session registry: named sessions, their runs, state listeners, replacing a session."""

from __future__ import annotations

from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
from pi_notebook.notebook._registry import DEFAULT_NAME, SessionRegistry
from pi_notebook.notebook._run_state import RunState


def faux_with(*texts: str, tps: float | None = None) -> FauxProvider:
    faux = FauxProvider(tokens_per_second=tps, token_size=(1, 1))
    faux.set_responses([faux_assistant_message(text) for text in texts])
    return faux


def test_asking_never_creates_a_session_and_getting_creates_the_faux_default() -> None:
    registry = SessionRegistry()
    assert registry.find() is None
    entry = registry.get()
    assert (entry.name, entry.model_spec, entry.runs) == (DEFAULT_NAME, "faux", [])
    assert entry.faux is not None and entry.session.model == entry.faux.model
    assert registry.find() is entry
    assert registry.get() is entry
    assert registry.current_run() is None


async def test_named_sessions_keep_their_own_runs_and_report_every_state_change() -> None:
    registry = SessionRegistry()
    states: list[RunState] = []
    registry.on_state(states.append)
    main = faux_with("main reply")
    side = faux_with("side reply")
    default = registry.configure(model=main.model, stream_fn=main.stream)
    other = registry.configure(model=side.model, stream_fn=side.stream, name="side")
    assert [entry.name for entry in registry] == [DEFAULT_NAME, "side"]
    first = default.start("hi", lambda: default.session.prompt("hi"), with_view=False)
    second = other.start("hello", lambda: other.session.prompt("hello"), with_view=False)
    assert registry.current_run() is second
    assert set(registry.active_runs()) == {first, second}
    await first
    await second
    assert [m.role for m in default.session.messages] == ["user", "assistant"]
    assert [m.role for m in other.session.messages] == ["user", "assistant"]
    assert first.number == second.number == 1  # numbered per session
    assert [s["state"] for s in states if s["run"] == 1].count("starting") == 2
    assert [s["state"] for s in states][-1] == "settled"
    assert registry.current_run() is second  # the last started, once none is active


async def test_configuring_again_aborts_and_replaces_the_previous_session() -> None:
    registry = SessionRegistry()
    slow = faux_with("word " * 5000, tps=500)
    entry = registry.configure(model=slow.model, stream_fn=slow.stream)
    run = entry.start("go", lambda: entry.session.prompt("go"), with_view=False)
    await run.wait_for("message_update")
    replacement = registry.configure()
    report = await run
    assert report.aborted
    assert registry.get() is replacement is not entry
    assert replacement.model_spec == "faux"
