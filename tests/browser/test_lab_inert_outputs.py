"""In real JupyterLab with Debian's Chromium: the faux model replies with every hostile payload of ``xss_payloads``
(script tags, event handlers, javascript: and data: URLs, markdown links and images, remote resources...), the
user's prompt carries them, and so does the output of the agent's ``python`` tool. Nothing of it runs and nothing
loads from a remote host, wherever a run's markdown is rendered:

- live: the ``await run`` report, ``%pi events``, a run display's static copy (after ``run.close_view()``) and the
  ``%pi resume`` replay;
- the notebook saved, its kernel shut down (so no widget can draw) and reopened: JupyterLab trusts a notebook its
  user saved and renders its markdown without sanitising it;
- ``jupyter nbconvert --to html`` of the saved notebook, opened in Chromium (compared with the same notebook without
  outputs, whose template loads its own scripts).

"Runs" means: ``window.__pwned`` set or a dialog opened. A payload's handler fires when its element is rendered or
its (relative, same-server) image fails; each check waits for an image of its own to fail first. Every request to a
host other than 127.0.0.1 is recorded and aborted. Screenshots: test-artifacts/lab-inert-*.png."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest
from lab_harness import ARTIFACTS, JupyterLab, notebook
from nbformat.sign import NotebookNotary
from playwright.sync_api import Dialog, Page, Route, expect
from xss_payloads import REMOTE_HOST, REPLY

pytestmark = pytest.mark.timeout(400)

WAIT = 60_000
SHOWN = 'onerror="window.__pwned'
"""Text of a payload that a literal rendering shows."""
CODE = f"from IPython.display import HTML, display\nprint({REPLY!r})\ndisplay(HTML({REPLY!r}))"


def setup(sessions: Path) -> str:
    return (
        "%load_ext pi_notebook\n"
        "from pi_notebook.notebook import configure, get_notebook_session\n"
        "from pi_notebook.kernel import python_tool\n"
        "from pi_notebook.ai.providers.faux import (FauxProvider, faux_assistant_message, faux_text, faux_thinking,\n"
        "    faux_tool_call)\n"
        f"REPLY = {REPLY!r}\n"
        f"call = faux_tool_call('python', {{'code': {CODE!r}}}, id='py-1')\n"
        "faux = FauxProvider(token_size=(64, 64))\n"
        "faux.set_responses([faux_assistant_message([faux_thinking(REPLY), faux_text(REPLY), call], 'toolUse'),\n"
        "                    faux_assistant_message([faux_text(REPLY)], 'error', REPLY)])\n"
        "configure(model=faux.model, stream_fn=faux.stream, tools=[python_tool()],\n"
        f"          settings={{'tools': {{'approval': 'auto'}}, 'retry': {{'max_retries': 0}},\n"
        f"                    'sessions': {{'dir': {str(sessions)!r}}}}})\n"
    )


CELLS = [
    "%%pi\n" + REPLY,
    "run = get_notebook_session().current_run\nawait run",
    "%pi events",
    "run.close_view()  # its displays become the static copy",
    "%pi new",
    "%pi resume",
]


class Watch:
    """What a page did that a payload could have made it do: dialogs, and requests to hosts other than loopback
    (aborted)."""

    def __init__(self, page: Page) -> None:
        self.remote: list[str] = []
        self.dialogs: list[str] = []
        page.route("**/*", self._route)
        page.on("dialog", self._dialog)

    def _route(self, route: Route) -> None:
        url = route.request.url
        if urlsplit(url).hostname in ("127.0.0.1", "localhost") or not url.startswith("http"):
            route.continue_()
        else:
            self.remote.append(url)
            route.abort()

    def _dialog(self, dialog: Dialog) -> None:
        if dialog.type != "beforeunload":
            self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()


def handlers_had_their_chance(page: Page) -> None:
    """Wait until an image of our own, added after everything was rendered, has failed to load: the payloads'
    images (relative, so they reach the server or the file system too) were requested before it."""
    page.evaluate(
        """() => new Promise(done => { const img = new Image(); img.onerror = img.onload = () => done();
        img.src = 'pi-sentinel-' + Date.now() + '.png'; document.body.append(img); })"""
    )
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")


LIVE_ELEMENTS = """() => {
  const bad = [];
  for (const out of document.querySelectorAll('.jp-RenderedHTMLCommon')) {
    if (out.closest('.pi-run-view')) continue;  // the live widget (js/run-view) is checked by its own tests
    for (const el of out.querySelectorAll('*')) {
      const tag = el.tagName.toLowerCase();
      if (['script', 'img', 'iframe', 'object', 'embed', 'svg', 'video', 'form', 'style', 'link', 'base', 'meta',
           'math', 'input', 'details', 'image', 'source'].includes(tag)) bad.push(el.outerHTML.slice(0, 120));
      if (tag === 'a' && !/^(https?|mailto):/.test(el.getAttribute('href') || 'https:')) bad.push(el.outerHTML);
      for (const attr of el.attributes) {
        if (/^on/i.test(attr.name) || /javascript:|url\\(/i.test(attr.value)) bad.push(`${tag} ${attr.name}`);
      }
    }
  }
  return bad;
}"""


def check_inert(
    lab: JupyterLab,
    page: Page,
    watch: Watch,
    name: str,
    *,
    remote: bool = True,
    remote_allowed: frozenset[str] = frozenset(),
) -> None:
    """Nothing ran; with ``remote``, nothing but ``remote_allowed`` was requested from a remote host."""
    handlers_had_their_chance(page)
    lab.screenshot(page, name, full_page=True)
    assert page.evaluate("window.__pwned") is None, "a payload's script ran"
    assert watch.dialogs == [], watch.dialogs
    assert page.evaluate(LIVE_ELEMENTS) == []  # only the report's own elements, no handler, no URL
    if remote:
        assert set(watch.remote) <= remote_allowed, set(watch.remote) - remote_allowed
    shown = page.locator(".jp-RenderedHTMLCommon").filter(has_text=SHOWN)
    assert shown.count() >= 1, "the payloads are not shown as text"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    lab = JupyterLab(tmp_path_factory.mktemp("lab"))
    yield lab
    lab.close()


def run_all(lab: JupyterLab, page: Page, count: int) -> None:
    for index in range(count):
        lab.run_cell(page, index)
        lab.wait_idle(page, index)


def test_hostile_replies_run_nothing_and_load_nothing_live_saved_reopened_and_converted(lab: JupyterLab) -> None:
    path = notebook([setup(lab.root / "sessions"), *CELLS], lab.root / "hostile.ipynb")
    watches: list[Watch] = []
    page = lab.open(path, workspace="hostile", prepare=lambda page: watches.append(Watch(page)), watched=True)
    run_all(lab, page, len(CELLS) + 1)
    cells = page.locator(".jp-Notebook .jp-Cell")
    expect(cells.nth(2).locator(".jp-RenderedHTML")).to_contain_text("agent_settled", timeout=WAIT)  # text/html
    expect(cells.nth(3).locator(".jp-RenderedHTMLCommon")).to_contain_text("agent_settled", timeout=WAIT)
    expect(cells.nth(1).locator(".jp-RenderedHTMLCommon")).to_contain_text("agent_settled", timeout=WAIT)
    expect(cells.nth(6)).to_contain_text("Resumed", timeout=WAIT)
    check_inert(lab, page, watches[-1], "lab-inert-live.png")
    # the widget drew the reply's and the tool's images as buttons; a click loads one (issue 30 item 7)
    held = page.locator(".pi-run-view button.pi-remote-image", has_text="click to load image from attacker.example")
    assert held.count() >= 4  # the reply's, the tool display's, in the run's widget and the replay's
    src = held.first.get_attribute("data-pi-src")
    assert src is not None and src.startswith(f"https://{REMOTE_HOST}/")
    held.first.click()
    image = page.locator(f".pi-run-view img[src='{src}']")
    expect(image).to_have_count(1, timeout=WAIT)
    page.wait_for_function("img => img.complete", arg=image.element_handle(), timeout=WAIT)  # tried, and aborted
    assert watches[-1].remote == [src]  # the one image clicked, and nothing before the click
    cells.nth(2).locator(".jp-OutputArea").screenshot(path=str(ARTIFACTS / "lab-inert-report.png"))

    page.keyboard.press("Control+s")
    expect(page.locator(".lm-TabBar-tab.jp-mod-dirty")).to_have_count(0, timeout=WAIT)
    saved = nbformat.read(path, as_version=4)
    assert NotebookNotary().check_signature(saved), "JupyterLab did not trust what its user saved"
    lab.shutdown_kernels()  # a new kernel has no widget models: every run shows its static copy
    page = lab.open(path, workspace="reopened", prepare=lambda page: watches.append(Watch(page)), watched=True)
    expect(page.locator(".jp-RenderedHTMLCommon").filter(has_text="agent_settled")).to_have_count(3, timeout=WAIT)
    check_inert(lab, page, watches[-1], "lab-inert-reopened.png")

    bare = lab.root / "bare.ipynb"
    saved_json = json.loads(path.read_text())
    for cell in saved_json["cells"]:
        cell["outputs"] = []
    bare.write_text(json.dumps(saved_json))
    pages = {}
    for source in (bare, path):
        subprocess.run(
            [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(source)],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        converted = lab.browser.new_page()
        watch = Watch(converted)
        converted.goto(source.with_suffix(".html").as_uri())
        pages[source] = (converted, watch)
    baseline_page, baseline = pages[bare]
    handlers_had_their_chance(baseline_page)
    converted, watch = pages[path]
    check_inert(lab, converted, watch, "lab-inert-nbconvert.png", remote_allowed=frozenset(baseline.remote))
