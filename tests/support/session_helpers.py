"""Builders for session tests: a faux-backed session with a recorder, and quick scripted replies."""

from __future__ import annotations

from typing import Any

from pi_notebook.ai import AssistantMessage
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
from pi_notebook.session import AgentSession, Settings
from pi_notebook.testing import EventRecorder

FAST_RETRY = {"enabled": True, "max_retries": 2, "base_delay_ms": 1}


def make_session(
    responses: list[Any],
    *,
    tps: float | None = None,
    settings: Settings | dict[str, Any] | None = None,
    **options: Any,
) -> tuple[AgentSession, EventRecorder, FauxProvider]:
    faux = FauxProvider(tokens_per_second=tps, token_size=(1, 1))
    faux.set_responses(responses)
    if settings is None:
        settings = {}
    if isinstance(settings, dict):
        data: dict[str, Any] = {"retry": FAST_RETRY, "compaction": {"enabled": False}}
        for key, value in settings.items():
            data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
        settings = Settings(**data)
    session = AgentSession(model=faux.model, stream_fn=faux.stream, settings=settings, **options)
    recorder = EventRecorder("session")
    session.subscribe(recorder)
    return session, recorder, faux


def error(text: str) -> Any:
    return faux_assistant_message([], "error", text)


def reply(text: str = "ok") -> Any:
    return faux_assistant_message(text)


def roles(session: AgentSession) -> str:
    return ",".join(
        m.role[0] + (f"({m.stop_reason})" if isinstance(m, AssistantMessage) and m.stop_reason else "")
        for m in session.messages
    )


class DiskFull:
    """While ``full``, ``os.write`` on one descriptor writes half of what it is given and then fails with
    ``ENOSPC``, as a disk that fills up in the middle of a line does; other descriptors are untouched."""

    def __init__(self, setattr: Any, fd: int) -> None:
        import os

        self.full = False
        self.failures = 0
        real_write = os.write
        torn = False

        def write(target: int, data: Any) -> int:
            nonlocal torn
            if target != fd or not self.full:
                return real_write(target, data)
            if not torn and len(data) > 1:
                torn = True
                return real_write(target, data[: len(data) // 2])
            torn = False
            self.failures += 1
            raise OSError(28, "No space left on device")

        setattr(os, "write", write)
