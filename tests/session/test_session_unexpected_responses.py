"""A session against a server that answers with something other than an event stream (issue 17 item 4, issue 10
item 14): it settles after one request, with the server's answer described, instead of retrying a
"network error" three times (14 s with the default backoff)."""

from __future__ import annotations

from typing import Any

import pytest
from wire_apis import APIS, model_for

from pi_notebook.ai import close_connections
from pi_notebook.session import AgentSession, Settings
from pi_notebook.testing import EventRecorder, Fault, FaultServer

ANSWERS: dict[str, Any] = {
    "empty-stream": Fault.raw(200, b"", content_type="text/event-stream", chunked=True),
    "html-page": Fault.raw(200, "<html><title>Sign in</title></html>", content_type="text/html"),
    "redirect": Fault.raw(302, headers={"location": "http://127.0.0.1:5000/login"}),
}


@pytest.mark.parametrize("answer", ANSWERS, ids=list(ANSWERS))
@pytest.mark.parametrize("api", APIS)
async def test_the_session_settles_after_one_request_and_says_what_came_back(
    api: str, answer: str, server: FaultServer
) -> None:
    server.script([ANSWERS[answer]] * 4)
    settings = Settings(retry={"max_retries": 3, "base_delay_ms": 1}, compaction={"enabled": False})
    session = AgentSession(model=model_for(api, server, keyless=True), settings=settings)
    recorder = EventRecorder("session")
    session.subscribe(recorder)
    await session.prompt("hello")
    assert not [label for label in recorder.labels if label.startswith("auto_retry")]
    assert recorder.labels[-1] == "agent_settled:aborted=false"
    assert len(server.requests) == 1
    last = session.messages[-1]
    assert last.stop_reason == "error"  # type: ignore[union-attr]
    assert "instead of an event stream" in (last.error_message or "")  # type: ignore[union-attr]
    await close_connections()
