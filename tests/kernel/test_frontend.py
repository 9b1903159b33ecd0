"""Which page the cell tools ask (``pi_notebook.kernel._frontend``): the page of the client whose cell started the
run; after a reload (a new client id) the newest page showing the same notebook, never another notebook's; a page
that does not answer is dropped, and no page means a clear error at once or after a bounded wait."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pi_notebook.ai import AbortController
from pi_notebook.kernel import Frontend, Frontends, NotebookTarget, NotebookUnavailable, _frontend
from pi_notebook.kernel._frontend import FrontendRefused


def page(client: str, path: str | None, answers: list[dict[str, Any]] | None = None) -> Frontend:
    return Frontend(client, path, (answers if answers is not None else []).append)


def test_the_run_acts_on_its_own_clients_page_then_on_the_reloaded_page_never_on_another_notebook() -> None:
    pages = Frontends()
    mine, other = page("client-a", "work/nb.ipynb"), page("client-b", "work/other.ipynb")
    pages.connect(mine)
    pages.connect(other)
    target = NotebookTarget("client-a", "cell-1", "/srv/work/nb.ipynb", run=1)
    assert pages.find(target) is mine
    reloaded = page("client-c", "work/nb.ipynb")  # a reload: a new client id, the same notebook
    pages.connect(reloaded)
    assert pages.find(target) is reloaded  # newer than the old page, whose comm the kernel still lists
    pages.disconnect(reloaded)
    pages.disconnect(mine)
    assert pages.find(target) is None  # the other notebook's page is never used
    assert pages.find(NotebookTarget(None)) is None and pages.find(None) is None


def test_paths_are_compared_whole_and_the_kernels_own_path_is_not_used() -> None:
    pages = Frontends()
    mine, other = page("client-a", "sub/nb.ipynb"), page("client-b", "nb.ipynb")
    pages.connect(mine)
    pages.connect(other)  # newer, and its path is the end of mine
    target = NotebookTarget("client-a", "cell-1", "/srv/sub/nb.ipynb", run=1)
    assert pages.find(target) is mine
    pages.disconnect(mine)  # a reload: until the page is back, no page shows the run's notebook
    assert pages.find(target) is None
    unknown = NotebookTarget("client-z", "cell-1", "/srv/nb.ipynb", run=2)  # a client that never had a page
    assert pages.find(unknown) is None  # not the page whose path ends the kernel's path


async def test_a_request_gets_the_pages_answer_a_refusal_or_a_clear_error() -> None:
    pages = Frontends()
    loop = asyncio.get_running_loop()

    def answer(message: dict[str, Any]) -> None:
        """The page: reads succeed, anything else is refused (answered as the control comm would, on the loop)."""
        ok = message["op"] == "read"
        result: dict[str, Any] = {"result": {"cells": []}} if ok else {"error": "protected", "message": "tagged"}
        loop.call_soon(
            pages.reply, {"action": "cells", "request": message["request"], "ok": ok, **result}, me, "client-a"
        )

    me = Frontend("client-a", "nb.ipynb", answer)
    pages.connect(me)
    target = NotebookTarget("client-a")
    assert await pages.request(target, {"op": "read"}, None) == {"cells": []}
    with pytest.raises(FrontendRefused) as refused:
        await pages.request(target, {"op": "edit"}, None)
    assert refused.value.error == "protected"
    with pytest.raises(NotebookUnavailable, match="not open in a JupyterLab page"):
        await pages.request(NotebookTarget("nobody"), {"op": "read"}, None, wait=0)


async def test_only_the_page_asked_can_answer_from_its_own_client() -> None:
    pages = Frontends()
    asked: list[dict[str, Any]] = []
    mine, other = page("client-a", "nb.ipynb", asked), page("client-b", "other.ipynb")
    pages.connect(mine)
    pages.connect(other)
    waiting = asyncio.ensure_future(pages.request(NotebookTarget("client-a"), {"op": "read"}, None))
    await asyncio.sleep(0)
    [request] = asked
    forged = {"action": "cells", "request": request["request"], "ok": True, "result": {"cells": ["forged"]}}
    assert not pages.reply(forged, other, "client-b")  # another page's comm
    assert not pages.reply(forged, mine, "client-b")  # the page's comm, another client
    assert not pages.reply(forged, None, "client-a")  # a comm that is no page's
    assert pages.reply({**forged, "result": {"cells": []}}, mine, "client-a")
    assert await asyncio.wait_for(waiting, 5) == {"cells": []}


async def test_a_page_that_does_not_answer_is_dropped_and_a_stop_ends_the_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_frontend, "REPLY_TIMEOUT_S", 0.05)
    pages = Frontends()
    silent = page("client-a", "nb.ipynb")
    pages.connect(silent)
    with pytest.raises(NotebookUnavailable, match="did not answer"):
        await pages.request(NotebookTarget("client-a"), {"op": "read"}, None)
    assert pages.connected == ()
    controller = AbortController()
    waiting = asyncio.ensure_future(pages.request(NotebookTarget("client-a"), {"op": "read"}, controller.signal))
    await asyncio.sleep(0)
    controller.abort()
    with pytest.raises(NotebookUnavailable):
        await asyncio.wait_for(waiting, 5)


async def test_a_call_waits_for_the_page_to_connect_again_after_a_reload() -> None:
    pages = Frontends()
    target = NotebookTarget("client-a", path="/srv/nb.ipynb")
    before = page("client-a", "nb.ipynb")
    pages.connect(before)
    pages.disconnect(before)  # the page reloads
    waiting = asyncio.ensure_future(pages.wait_for(target, 10, None))
    await asyncio.sleep(0)
    reloaded = page("client-b", "nb.ipynb")
    pages.connect(reloaded)
    assert await asyncio.wait_for(waiting, 5) is reloaded
