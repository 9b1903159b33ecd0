"""A run waiting on a model that sends nothing says so: ``silent_s`` in its state (the status bar's) and "no data
for N s" in its widget, over real loopback HTTP from a server that drips bytes that carry no data."""

from __future__ import annotations

import asyncio

import pytest

from pi_notebook.ai import close_connections
from pi_notebook.ai.models import model_from_spec
from pi_notebook.notebook import Run, _run_state
from pi_notebook.notebook._run_state import RunState
from pi_notebook.session import AgentSession, Settings
from pi_notebook.testing import Fault, FaultServer, Reply

pytestmark = pytest.mark.usefixtures("dummy_comm")  # every widget here talks to a dummy comm (conftest)


async def test_a_dripping_stream_shows_no_data_for_n_seconds_until_stopped(
    server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_run_state, "SILENCE_NOTICE_S", 0.3)
    monkeypatch.setattr(_run_state, "SILENCE_CHECK_S", 0.05)
    server.script([Reply.text("hello there", fault=Fault.drip(after_events=3, interval_s=0.02))])
    model = model_from_spec(f"openai-compatible:{server.openai_base_url}:test-model")
    session = AgentSession(model=model, settings=Settings(retry={"enabled": False}, compaction={"enabled": False}))
    run = Run(session, 1, lambda: session.prompt("hello"), label="hello")
    states: list[RunState] = []
    silent = asyncio.Event()

    def watch(state: RunState) -> None:
        states.append(state)
        if state["state"] == "streaming" and state["silent_s"] > 0:  # (a slow start may be silent too)
            silent.set()

    run.on_state(watch)
    await silent.wait()
    assert run.state()["silent_s"] >= 1  # the drip's comment lines are bytes, but no data
    assert run.view is not None and run.view.transcript.state.startswith("streaming · no data for ")
    run.abort()
    report = await run
    assert report.aborted
    assert run.state()["silent_s"] == 0 and states[-1]["state"] == "aborted"
    await close_connections()
    await server.wait_until_async(lambda s: s.open_connections == 0)
