"""A comm that records what a widget would send to the browser (ipywidgets' test double), for widget tests
and the notebook benchmark."""

from __future__ import annotations

import itertools
import json
from typing import Any

import comm
import ipykernel.comm


class DummyComm:
    kernel = "truthy"
    sent: list[Any] = []  # noqa: RUF012 - shared by every dummy comm until the next install()
    _ids = itertools.count(1)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.comm_id = f"dummy-{next(DummyComm._ids)}"  # a widget's model id: unique, as a real comm's is
        self.closed = False

    def open(self, *args: Any, **kwargs: Any) -> None:
        pass

    def on_msg(self, *args: Any, **kwargs: Any) -> None:
        pass

    def send(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
        DummyComm.sent.append(data)

    def close(self, *args: Any, **kwargs: Any) -> None:
        self.closed = True


def install(setattr: Any = setattr) -> list[Any]:
    """Make new widgets use a ``DummyComm``; returns the list their messages go to. Pass
    ``monkeypatch.setattr`` in tests so the patch is undone afterwards."""
    DummyComm.sent = []
    setattr(comm, "create_comm", lambda **kwargs: DummyComm())
    setattr(comm, "get_comm_manager", lambda **kwargs: {})
    setattr(ipykernel.comm.comm, "BaseComm", DummyComm)
    return DummyComm.sent


def custom_messages(sent: list[Any]) -> list[dict[str, Any]]:
    """The widget's own messages (``send()``), leaving out state syncs."""
    return [d["content"] for d in sent if isinstance(d, dict) and d.get("method") == "custom"]


def custom_bytes(sent: list[Any]) -> int:
    return sum(len(json.dumps(message)) for message in custom_messages(sent))
