"""A tool call reads as the approval box shows it, in its panel and in the run's report (issue 37 item 18): the cell
tools' panels showed their arguments as JSON (their preview reads the live notebook, so it is async and the panel
could not use it), and the static report showed every call as JSON, the python tool's code included."""

from __future__ import annotations

from typing import Any

import dummy_comm as dummy
import pytest

from pi_notebook.agent import AgentTool, AgentToolResult
from pi_notebook.ai import TextContent
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_notebook.kernel import cell_tools
from pi_notebook.notebook import Run
from pi_notebook.notebook.widget._presenter import tool_preview
from pi_notebook.session import AgentSession, Settings

EDIT = {"cell_id": "work", "edits": [{"oldText": "x = 1\nprint(x)", "newText": "x = 2\nprint(x)"}]}


@pytest.fixture(autouse=True)
def dummy_comm(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    return dummy.install(monkeypatch.setattr)


def tools_by_name() -> dict[str, AgentTool]:
    return {tool.name: tool for tool in cell_tools()}


def test_the_cell_tools_panels_show_the_change_not_json() -> None:
    tools = tools_by_name()
    assert tool_preview(tools["cell_edit"], EDIT) == ("cell work\n\n- x = 1\n- print(x)\n+ x = 2\n+ print(x)", "diff")
    assert tool_preview(tools["cell_run"], {"cell_id": "work"}) == ("run cell work", "")
    assert tool_preview(tools["cell_delete"], {"cell_id": "work"}) == ("delete cell work", "")
    whole = {"cell_id": "work", "source": "y = 3"}
    assert tool_preview(tools["cell_edit"], whole) == ("cell work\n\n+ y = 3", "diff")
    legacy = {"cell_id": "work", "oldText": "a", "newText": "b"}  # Pi's old one-edit shape, as prepare_arguments reads
    assert tool_preview(tools["cell_edit"], legacy) == ("cell work\n\n- a\n+ b", "diff")


@pytest.mark.parametrize(
    "args",
    [{}, {"cell_id": 3, "edits": "not a list"}, {"edits": [1, None, {"oldText": None}]}, {"cell_id": "w", "source": 5}],
)
def test_arguments_the_panel_did_not_expect_do_not_break_it(args: dict[str, Any]) -> None:
    text, _ = tool_preview(tools_by_name()["cell_edit"], args)
    assert isinstance(text, str)  # a line or nothing (the panel then shows the JSON); never an exception


async def echo(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text=str(args["text"]))])


async def test_the_report_shows_each_call_as_its_panel_does() -> None:
    shell = AgentTool(
        name="say",
        description="say",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
        execute=echo,
        preview=lambda args: f"$ echo {args['text']}",
        preview_syntax="shell",
    )
    plain = AgentTool(name="plain", description="plain", parameters={"type": "object"}, execute=echo)
    faux = FauxProvider(token_size=(4, 4))
    faux.set_responses(
        [
            faux_assistant_message([faux_tool_call("say", {"text": "hi"})], "toolUse"),
            faux_assistant_message([faux_tool_call("cell_edit", EDIT)], "toolUse"),  # no page: an error result
            faux_assistant_message([faux_tool_call("plain", {"text": "raw"})], "toolUse"),
            faux_assistant_message("done"),
        ]
    )
    session = AgentSession(
        model=faux.model,
        stream_fn=faux.stream,
        tools=[shell, plain, *cell_tools()],
        settings=Settings(compaction={"enabled": False}),
    )
    report = await Run(session, 1, lambda: session.prompt("go"), label="go")
    markdown, html, text = report.markdown, report.html, report.text
    assert "tool call `say`\n\n```sh\n$ echo hi\n```" in markdown
    assert "tool call `cell_edit`\n\n```diff\ncell work\n\n- x = 1\n- print(x)\n+ x = 2\n+ print(x)\n```" in markdown
    assert '"cell_id"' not in markdown and '"cell_id"' not in html and '"cell_id"' not in text
    assert "<pre><code>$ echo hi</code></pre>" in html
    assert "tool call cell_edit:\ncell work\n\n- x = 1" in text
    assert 'tool call `plain`\n\n```json\n{\n "text": "raw"\n}\n```' in markdown  # a tool with no preview: JSON
