"""Every scenario in tests/fixtures/pi-traces/session.json (recorded from Pi's AgentSession) gives the identical
sequence here. Pi's script waits 50 ms before queueing; we wait for the first streamed update instead."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from session_helpers import error, make_session, reply, roles

from pi_notebook.ai.providers.faux import faux_assistant_message

TRACES = json.loads((Path(__file__).parent.parent / "fixtures" / "pi-traces" / "session.json").read_text())


async def test_retry_then_success() -> None:
    session, rec, _ = make_session([error("503 service unavailable"), reply("ok")])
    await session.prompt("go")
    assert [*rec.labels, f"idle={str(session.is_idle).lower()}", f"roles={roles(session)}"] == TRACES[
        "retry_then_success"
    ]


async def test_non_retryable_quota() -> None:
    session, rec, _ = make_session([error("429 insufficient_quota: You exceeded your current quota")])
    await session.prompt("go")
    assert rec.labels == TRACES["non_retryable_quota"]


async def test_abort_clear_queue() -> None:
    session, rec, _ = make_session([faux_assistant_message("a " * 3000), reply("x")], tps=500)
    run = asyncio.create_task(session.prompt("go"))
    await rec.wait_for("message_update")
    await session.steer("steer me")
    await session.follow_up("follow me")
    cleared = session.clear_queue()
    await session.abort()
    await run
    cleared_json = json.dumps({"steering": cleared.steering, "followUp": cleared.follow_up}, separators=(",", ":"))
    assert [*rec.labels, f"cleared={cleared_json}", f"idle={str(session.is_idle).lower()}"] == TRACES[
        "abort_clear_queue"
    ]


def test_every_recorded_session_scenario_is_replayed() -> None:
    replayed = {name.removeprefix("test_") for name in globals() if name.startswith("test_")}
    assert set(TRACES) <= replayed
