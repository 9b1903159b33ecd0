"""The markdown and HTML a run leaves in a notebook (the ``await run`` report, a display's static copy, ``%pi
events``, the ``%pi resume`` replay) are inert whatever the model, the user or a tool wrote. The markdown is literal:
rendered by real CommonMark renderers (markdown-it, and mistune as ``jupyter nbconvert --to html`` uses it), every
hostile payload of ``xss_payloads`` shows as the characters it is made of, and the HTML holds only the report's own
structure (no script, no event handler, no link, no image, no URL at all). The ``text/html`` copy formats the
model's markdown and holds only a report's elements, links only to http(s)/mailto, no ``src`` at all, no style but
a column's alignment. Also the shape of the static copy of every kind of run (text, thinking, tool call, tool error,
error, aborted, retry, compaction), in both: code in ``<pre>``, the event log a ``<table>`` with one row per event."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agent_helpers import recording_tool
from rendered_html import Node, parse, render, squeezed
from xss_payloads import ALL, REMOTE_HOST, REPLY

from pi_notebook.agent import AgentMessage, AgentToolResult
from pi_notebook.ai import TextContent, ToolResultMessage, UserMessage
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_text, faux_thinking, faux_tool_call
from pi_notebook.notebook import Run
from pi_notebook.notebook._describe import render_html, render_markdown
from pi_notebook.notebook._inert import MATH_IGNORE, code_block, inline, literal
from pi_notebook.notebook._saved import Replayed
from pi_notebook.session import AgentSession, Settings

RENDERERS = ["markdown-it", "nbconvert"]
STRUCTURE = {"#root", "div", "p", "strong", "em", "code", "pre", "blockquote", "br", "table", "thead", "tbody", "tr",
             "th", "td", "span"}  # fmt: skip
"""The elements a report is made of (``span``: nbconvert's syntax highlighting of the JSON arguments)."""


pytestmark = pytest.mark.usefixtures("dummy_comm")  # every widget here talks to a dummy comm (conftest)


def assert_inert(root: Node) -> None:
    """Only the report's own elements, no attribute but a code block's language, a column's alignment and the
    MathJax-ignoring classes, no URL anywhere."""
    for node in root.walk():
        assert node.tag in STRUCTURE, f"<{node.tag}> rendered: {node.attrs}"
        for name, value in node.attrs.items():
            allowed = (
                (name == "class" and node.tag == "div" and value in (MATH_IGNORE, "highlight"))
                or (name == "class" and node.tag in ("code", "span") and value is not None)
                or (name == "style" and value == "text-align:right")
            )
            assert allowed, f"<{node.tag} {name}={value!r}>"
            assert "javascript" not in (value or "").lower() and REMOTE_HOST not in (value or "")


HTML_STRUCTURE = STRUCTURE | {"a", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "hr", "del", "s"}


def assert_inert_html(html: str) -> Node:
    """The report's HTML: a report's elements only, links to http(s) or mailto only (never a script URL, never
    relative), nothing that loads (no ``src``), no style but a column's alignment, no class but ours."""
    root = parse(html)
    for node in root.walk():
        assert node.tag in HTML_STRUCTURE, f"<{node.tag}> in the HTML: {node.attrs}"
        for name, value in node.attrs.items():
            if node.tag == "a" and name == "href":
                assert (value or "").startswith(("http://", "https://", "mailto:")), value
            elif node.tag == "a" and name == "rel":
                assert value == "noopener noreferrer nofollow"
            else:
                allowed = (name == "class" and node.tag == "div" and value == MATH_IGNORE) or (
                    name == "style" and value in ("text-align:right", "text-align:left")
                )
                assert allowed, f"<{node.tag} {name}={value!r}>"
    return enclosed(root)


def enclosed(root: Node) -> Node:
    """The report's ``<div>`` that MathJax leaves alone, which holds everything."""
    assert [child.tag for child in root.children if isinstance(child, Node)] == ["div"]
    assert all(isinstance(child, Node) or not child.strip() for child in root.children)
    [div] = root.find_all("div")[:1]
    assert div.attrs["class"] == MATH_IGNORE
    return div


def expected(text: str) -> str:
    """What a reader sees of ``text`` shown literally: the same characters, white space runs aside."""
    return squeezed(text.replace("\r", "\n"))


@pytest.mark.parametrize("renderer", RENDERERS)
@pytest.mark.parametrize("payload", ALL)
def test_each_payload_renders_as_its_own_characters_and_nothing_else(payload: str, renderer: str) -> None:
    # inline text is only ever put inside a line (after a label, in a table cell), as here
    cases = [(literal(payload), payload), (f"**label:** {inline(payload)}", f"label: {payload}")]
    for markdown, shown in [*cases, (code_block(payload), payload)]:
        root = render(markdown, renderer)
        assert_inert(root)
        if markdown.startswith("```"):
            assert len(root.find_all("pre")) == 1
            assert squeezed(root.find_all("pre")[0].text) == expected(payload)
        else:
            assert squeezed(root.text) == expected(shown), markdown
    cell = render(f"| a |\n|---|\n| {inline(payload)} |", renderer)
    assert_inert(cell)
    assert [squeezed(td.text) for td in cell.find_all("td")] == [expected(payload)]  # no pipe breaks out


def run_with_every_slot_hostile() -> str:
    """A report whose title, status, prompt, reply, thinking, tool call, tool result, error and event details all
    carry every payload."""
    messages: list[AgentMessage] = [
        UserMessage(content=[TextContent(text=REPLY)]),
        faux_assistant_message([faux_thinking(REPLY), faux_text(REPLY), faux_tool_call(REPLY, {"code": REPLY})]),
        ToolResultMessage(tool_call_id="c", tool_name=REPLY, content=[TextContent(text=REPLY)], is_error=True),
        faux_assistant_message([faux_text(REPLY)], "error", REPLY),
    ]
    log = [(0.5, payload, payload) for payload in ALL]
    return render_markdown(messages, log, title=REPLY, status=REPLY)


@pytest.mark.parametrize("renderer", RENDERERS)
def test_a_report_with_every_slot_hostile_is_inert_and_keeps_its_shape(renderer: str) -> None:
    root = render(run_with_every_slot_hostile(), renderer)
    assert_inert(root)
    div = enclosed(root)
    assert len(div.find_all("table")) == 1
    rows = div.find_all("tbody")[0].find_all("tr")
    assert len(rows) == len(ALL)
    for row, payload in zip(rows, ALL, strict=True):
        assert [squeezed(cell.text) for cell in row.find_all("td")] == ["0.500", expected(payload), expected(payload)]
    pres = div.find_all("pre")
    assert len(pres) == 2  # the tool call's arguments and the tool's result, nothing else became code
    assert expected(REPLY) in squeezed(pres[1].text)
    text = squeezed(div.text)
    assert text.count(expected(REPLY)) >= 6  # title, status, prompt, thinking, reply, error reply


@pytest.mark.parametrize("payload", ALL)
def test_each_payload_as_model_markdown_in_html_is_inert(payload: str) -> None:
    report = render_html([faux_assistant_message(payload)], [(0.1, payload, payload)], title=payload, status=payload)
    div = assert_inert_html(report)
    row = div.find_all("table")[-1].find_all("tbody")[0].find_all("td")  # the event log (a reply may hold a table)
    assert [squeezed(cell.text) for cell in row[1:]] == [expected(payload)] * 2  # log cells: literal text
    assert squeezed(div.find_all("p")[0].text) == expected(f"{payload} — {payload}")


def test_a_report_with_every_slot_hostile_in_html_is_inert_and_keeps_its_shape() -> None:
    messages: list[AgentMessage] = [
        UserMessage(content=[TextContent(text=REPLY)]),
        faux_assistant_message([faux_thinking(REPLY), faux_text(REPLY), faux_tool_call(REPLY, {"code": REPLY})]),
        ToolResultMessage(tool_call_id="c", tool_name=REPLY, content=[TextContent(text=REPLY)], is_error=True),
    ]
    div = assert_inert_html(render_html(messages, [(0.5, "x", REPLY)], title="Run 1", status=REPLY))
    assert expected(REPLY) in [squeezed(pre.text) for pre in div.find_all("pre")]  # the tool's output, as it is
    assert expected(REPLY) in squeezed(div.find_all("blockquote")[0].text)  # the prompt, as typed
    images = [a for a in div.find_all("a") if "not loaded" in a.text]
    assert {a.attrs["href"] for a in images} == {  # an image is a link to it, saying from where; nothing loads
        f"https://{REMOTE_HOST}/md-image.png?q=SECRET",
        f"https://{REMOTE_HOST}/titled.png",
        f"https://{REMOTE_HOST}/ref-image.png",
    }


def test_a_replayed_session_goes_through_the_same_gate() -> None:
    session = AgentSession(
        model=FauxProvider().model,
        messages=[UserMessage(content=[TextContent(text=REPLY)]), faux_assistant_message(REPLY)],
    )
    replayed = Replayed(session, f"Resumed {REPLY}", note=REPLY)  # no running loop: markdown only
    for renderer in RENDERERS:
        root = render(replayed.markdown(), renderer)
        assert_inert(root)
        assert squeezed(enclosed(root).text).count(expected(REPLY)) >= 4
    assert expected(REPLY) in squeezed(assert_inert_html(replayed.html()).text)  # the prompt, as typed


# -- the static copy of every kind of run --------------------------------------------------------------------------


def tool_result(text: str, error: bool = False) -> Any:
    def result(args: Any) -> AgentToolResult:
        if error:
            raise RuntimeError(text)
        return AgentToolResult(content=text, details={})

    return result


async def run_of(kind: str) -> Run:
    """A real run of ``kind`` with the faux model, every text in it hostile."""
    faux = FauxProvider(token_size=(1, 1))
    call = faux_tool_call("probe", {"code": REPLY}, id="call-1")
    settings = Settings(retry={"base_delay_ms": 1, "max_retries": 1}, compaction={"enabled": False})
    tools = []
    replies: list[Any] = [faux_assistant_message(REPLY)]
    if kind in ("tool call", "tool error"):
        tools = [recording_tool("probe", result=tool_result(REPLY, error=kind == "tool error"))]
        replies = [faux_assistant_message([faux_text(REPLY), call], "toolUse"), faux_assistant_message(REPLY)]
    elif kind == "thinking":
        replies = [faux_assistant_message([faux_thinking(REPLY), faux_text(REPLY)])]
    elif kind == "error":
        replies = [faux_assistant_message([], "error", REPLY)] * 2
    elif kind == "retry":
        replies = [faux_assistant_message([], "error", "503 " + REPLY), faux_assistant_message(REPLY)]
    elif kind == "aborted":
        faux = FauxProvider(tokens_per_second=200, token_size=(1, 1))
    elif kind == "compaction":
        settings = Settings(compaction={"keep_recent_tokens": 50})
        replies = [faux_assistant_message(REPLY)] * 2  # the summary, and the split turn's prefix summary
    faux.set_responses(replies)
    session = AgentSession(model=faux.model, stream_fn=faux.stream, tools=tools, settings=settings)
    if kind == "compaction":
        session.agent.state.messages = [
            message
            for i in range(4)
            for message in (UserMessage(content=[TextContent(text=f"{i} {REPLY}")]), faux_assistant_message(REPLY))
        ]
        return Run(session, 1, lambda: session.compact(REPLY), label=REPLY)
    run = Run(session, 1, lambda: session.prompt(REPLY), label=REPLY)
    if kind == "aborted":
        await run.wait_for("message_update", 3)
        run.abort()
    return run


KINDS = ["text", "thinking", "tool call", "tool error", "error", "aborted", "retry", "compaction"]


@pytest.mark.parametrize("kind", KINDS)
async def test_the_static_copy_of_each_kind_of_run_renders_with_its_structure(kind: str) -> None:
    run = await run_of(kind)
    report = await asyncio.wait_for(run, 30)
    labels = run.labels
    for renderer in RENDERERS:
        root = render(report.markdown, renderer)
        assert_inert(root)
        div = enclosed(root)
        [table] = div.find_all("table")
        rows = table.find_all("tbody")[0].find_all("tr")
        assert [squeezed(row.find_all("td")[1].text) for row in rows] == labels  # every event, one row each
        assert squeezed(div.find_all("p")[0].text).startswith("Run 1 — ")
        text = squeezed(div.text)
        pres = div.find_all("pre")
        if kind in ("tool call", "tool error"):
            assert len(pres) == 2  # the call's arguments (JSON) and its result, each a code block
            assert '"code":' in pres[0].text and "probe" in text
            assert expected(REPLY) in squeezed(pres[1].text)
            assert "probe error" in text if kind == "tool error" else "probe result" in text
        else:
            assert pres == []
        if kind == "thinking":
            assert expected(f"thinking: {REPLY}") in squeezed(div.find_all("blockquote")[1].text)
        if kind == "compaction":
            assert "compaction summary" in text and "compaction_end" in labels
        if kind == "error":
            assert expected(f"[error: {REPLY}]") in text
        if kind == "aborted":
            assert "[aborted" in text and run.aborted
        if kind == "retry":
            assert {"auto_retry_start", "auto_retry_end"} <= set(labels)
        if kind not in ("error", "compaction", "aborted"):
            assert expected(REPLY) in text
    div = assert_inert_html(report.html)
    rows = div.find_all("table")[-1].find_all("tbody")[0].find_all("tr")
    assert [squeezed(row.find_all("td")[1].text) for row in rows] == labels
    calls = [pre for pre in div.find_all("pre") if pre.text.startswith('{\n "code": ')]  # (the reply has code too)
    assert len(calls) == (1 if kind in ("tool call", "tool error") else 0)
    if kind == "tool call":
        assert expected(REPLY) in [squeezed(pre.text) for pre in div.find_all("pre")]  # the tool's result, as is
    if kind == "thinking":
        assert expected(f"thinking: {REPLY}") in squeezed(div.find_all("blockquote")[1].text)
