"""Chromium as the browser tests launch it (``lab_harness``) reaches loopback and nothing else: a request past it
goes to the closed proxy port and fails, and the loopback guard notes it (so the test making it fails).
203.0.113.1 is TEST-NET-3: never a real host."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from lab_harness import CHROMIUM, CHROMIUM_FLAGS, guard, require_chromium
from loopback_guard import refusals
from playwright.sync_api import Page, sync_playwright

from pi_notebook.testing import FaultServer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def page() -> Iterator[Page]:
    require_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield guard(browser.new_page())
        finally:
            browser.close()


def test_chromium_reaches_loopback_and_nothing_past_it(page: Page, server: FaultServer) -> None:
    response = page.goto(f"{server.base_url}/v1/models")
    assert response is not None and response.status == 404  # the fault server's own answer: loopback went through
    failures: list[str] = []
    page.on("requestfailed", lambda request: failures.append(f"{request.url} {request.failure}"))
    with refusals() as refused, page.expect_event("requestfailed"):
        page.evaluate("url => { const image = new Image(); image.src = url; document.body.append(image); }",
                      "http://203.0.113.1/pixel.png")  # fmt: skip
    assert failures == ["http://203.0.113.1/pixel.png net::ERR_PROXY_CONNECTION_FAILED"]
    assert [line.split(" (pid")[0] for line in refused] == ["chromium request to http://203.0.113.1"]
