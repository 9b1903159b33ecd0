"""A resumed transcript: the cut-off check, tool calls left without results, the replayed rendering."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_notebook.ai import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
from pi_notebook.notebook._saved import Replayed, close_dangling_tool_calls, cut_off, offered, pick_session
from pi_notebook.session import AgentSession, SessionStore, Settings, list_sessions, load_session


def _transcript() -> list[object]:
    calls = [ToolCall(id="c1", name="bash", arguments={"command": "ls"}), ToolCall(id="c2", name="bash", arguments={})]
    return [
        UserMessage(content=[TextContent(text="list files")]),
        AssistantMessage(content=[TextContent(text="running"), *calls], stop_reason="toolUse"),
        ToolResultMessage(tool_call_id="c1", tool_name="bash", content=[TextContent(text="a.txt")]),
    ]


def test_tool_calls_without_results_get_recorded_error_results(tmp_path: Path) -> None:
    store = SessionStore.new(tmp_path)
    for message in _transcript():
        store.append_message(message)  # type: ignore[arg-type]
    store.close()
    session = AgentSession(model=FauxProvider().model)
    session.resume(store.path)
    assert cut_off(session.messages)
    assert close_dangling_tool_calls(session) == 1
    assert close_dangling_tool_calls(session) == 0
    added = load_session(store.path).messages[-1]
    assert isinstance(added, ToolResultMessage) and added.tool_call_id == "c2" and added.is_error
    session.dispose()


def test_an_assistant_tail_is_not_cut_off_and_the_replay_is_marked() -> None:
    session = AgentSession(model=FauxProvider().model, messages=[*_transcript()[:1], AssistantMessage(content=[])])  # type: ignore[list-item]
    assert not cut_off(session.messages)
    replayed = Replayed(session, "Resumed x.jsonl", note=None)  # no running loop: markdown only
    markdown = replayed.markdown()
    assert "list files" in markdown and "assistant stop (replayed)" in markdown
    assert replayed.view is None


def test_pick_session_by_number_id_latest_and_path(tmp_path: Path) -> None:
    paths = []
    for _ in range(2):
        with SessionStore.new(tmp_path) as store:
            store.append_message(UserMessage(content=[TextContent(text="q")]))
            paths.append(store.path)
    infos = list_sessions(tmp_path)
    newest = infos[0].path
    assert pick_session(infos, "", {}) == newest == pick_session(infos, "latest", {}) == pick_session(infos, "1", {})
    assert pick_session(infos, "latest", {newest: "default"}) == infos[1].path  # the live one is skipped
    assert pick_session(infos, infos[1].id[:6], {}) == infos[1].path
    digits = infos[1].path.with_name("2026-01-01T00-00-00-000Z_44038700-0000-4000-8000-000000000000.jsonl")
    digits.write_text(infos[1].path.read_text().replace(infos[1].id, "44038700-0000-4000-8000-000000000000"))
    with_digits = list_sessions(tmp_path)
    assert pick_session(with_digits, "440387", {}) == digits  # an id prefix of digits is not read as a number
    assert pick_session(infos, str(paths[0]), {}) == paths[0]
    # an out-of-range number that is no id's prefix either (ids are random hex)
    number = next(n for n in range(3, 1000) if not any(info.id.startswith(str(n)) for info in infos))
    for bad, message in ((str(number), f"no session {number}"), ("zzz", "no session 'zzz'")):
        with pytest.raises(ValueError, match=message):
            pick_session(infos, bad, {})


def test_latest_is_this_notebook_s_then_one_that_names_none_then_the_newest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37 item 17: what the greeting offers and ``%pi resume`` loads agree (the kernel test is
    tests/notebook/test_saved_sessions_kernel.py)."""
    ticks = iter(range(1000))  # a clock a millisecond apart per entry: three files made in one millisecond tie
    clock = lambda: f"2026-01-01T00:00:00.{next(ticks):03d}Z"  # noqa: E731
    monkeypatch.setattr("pi_notebook.session._journal.now_iso", clock)
    monkeypatch.setattr("pi_notebook.session._store.now_iso", clock)
    for notebook in ("a.ipynb", "", "b.ipynb"):  # oldest first
        header = {"notebook": notebook} if notebook else {}
        with SessionStore.new(tmp_path, header=header) as store:
            store.append_message(UserMessage(content=[TextContent(text="q")]))
    infos = list_sessions(tmp_path)
    by_notebook = {info.notebook: info.path for info in infos}
    assert pick_session(infos, "", {}, "a.ipynb") == by_notebook["a.ipynb"]
    assert pick_session(infos, "", {}, "c.ipynb") == by_notebook[""]  # named by no notebook: offered
    assert [info.notebook for info in offered(infos, "c.ipynb")] == [""]
    assert pick_session(infos, "", {by_notebook[""]: "default"}, "c.ipynb") == by_notebook["b.ipynb"]  # the newest
    assert offered(infos, None) == infos


@pytest.mark.usefixtures("dummy_comm")
async def test_a_resumed_retried_turn_shows_one_error_as_the_run_did(tmp_path: Path) -> None:
    """Issue 37 item 15, after ``%pi resume``: the file keeps each attempt of a retried turn, and the replay drew a
    red block for each; it shows them as the run did (the last failed one says how often it was retried)."""
    faux = FauxProvider()
    down = faux_assistant_message([], "error", "Connection error.")
    faux.set_responses([down] * 4 + [faux_assistant_message("back")])
    settings = Settings(retry={"base_delay_ms": 1, "max_retries": 2}, compaction={"enabled": False})
    with SessionStore.new(tmp_path) as store:
        live = AgentSession(model=faux.model, stream_fn=faux.stream, settings=settings, store=store)
        await live.prompt("hello?")  # three attempts, all failed
        await live.prompt("again?")  # one failed attempt, then back
    resumed = AgentSession(model=faux.model, stream_fn=faux.stream)
    resumed.resume(store.path)
    assert [m.role for m in resumed.messages].count("assistant") == 5  # the file keeps every attempt
    replayed = Replayed(resumed, "Resumed", note=None)
    assert replayed.view is not None
    errors = [op["error"] for op in replayed.view.transcript.ops if op["op"] == "status" and op["error"]]
    assert errors == ["Connection error. (retried 2x)"]
    assert "back" in replayed.markdown() and "(retried 2x)" in replayed.markdown()
