"""Sessions that outlive the kernel: saved by default, a SIGKILLed kernel, ``%load_ext``'s greeting, ``%pi resume``
(replayed), ``%pi continue`` after a cut-off reply, the file growing on; named sessions in one kernel."""

from __future__ import annotations

import json
import os
import signal
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kernel_harness import Kernel

from pi_notebook.ai import TextContent, UserMessage
from pi_notebook.session import SessionStore, list_sessions, load_session, session_folder

pytestmark = pytest.mark.timeout(180)

FAUX = """
import asyncio
from pi_notebook.notebook import configure, get_session
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
faux = FauxProvider(tokens_per_second={tps}, token_size=(1, 1))
faux.set_responses([faux_assistant_message(text) for text in {replies!r}])
configure(model=faux.model, stream_fn=faux.stream)
streaming = asyncio.Event()
get_session().subscribe(lambda event: event.type == "message_update" and streaming.set())
"""


def faux(kernel: Kernel, replies: list[str], tps: int = 100_000) -> None:
    kernel.run(FAUX.format(tps=tps, replies=replies))


@pytest.fixture
def sessions_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PI_NOTEBOOK_SESSIONS__DIR", str(tmp_path))
    return session_folder(tmp_path)


def test_a_killed_kernel_s_session_resumes_replayed_and_continues(sessions_dir: Path) -> None:
    first = Kernel()
    try:
        assert "last session" not in first.run("%load_ext pi_notebook").text
        faux(first, ["first answer", "second answer", "word " * 200_000], tps=2000)
        first.run("run = %pi one\nawait run")
        first.run("run = %pi two\nawait run")
        first.run("streaming.clear()\nrun = %pi three, a long one")  # (set by the first two replies)
        first.run("await streaming.wait()")  # the third reply is streaming: not on disk yet
        os.kill(first.manager.provisioner.pid, signal.SIGKILL)  # type: ignore[union-attr]
    finally:
        first.shutdown()
    [saved] = list_sessions(sessions_dir)
    assert saved.message_count == 5 and saved.last_role == "user"

    second = Kernel()
    try:
        greeting = second.run("%load_ext pi_notebook").text
        assert "pi: last session just now, 5 messages; its last reply was cut off — %pi resume to continue" in greeting
        faux(second, ["the cut-off answer, again", "a new answer"])
        resumed = second.run("r = %pi resume\nr")
        assert f"pi: resumed {saved.path.name}: 5 messages" in resumed.text
        assert "the last reply was cut off" in resumed.text
        markdown = resumed.text
        assert "**user:** > one" in markdown or "> **user:** one" in markdown
        assert "first answer" in markdown and "second answer" in markdown
        assert "message_end` | assistant stop (replayed)" in markdown
        # the replayed widget holds the same messages
        ops = second.run("print(sorted({op['role'] for op in r.view.transcript.ops if op['op'] == 'message'}))")
        assert "['assistant', 'user']" in ops.text
        second.run("run = %pi continue\nawait run")
        second.run("run = %pi and now?\nawait run")
        check = second.run("print([m.role for m in get_session().messages][-4:], get_session().store.path.name)")
        assert f"['user', 'assistant', 'user', 'assistant'] {saved.path.name}" in check.text
    finally:
        second.shutdown()
    loaded = load_session(saved.path)
    texts = [getattr(block, "text", "") for m in loaded.messages for block in m.content]  # type: ignore[union-attr]
    assert len(loaded.messages) == 8 and not loaded.problems
    assert texts[-3:] == ["the cut-off answer, again", "and now?", "a new answer"]


def test_the_greeting_is_for_people_and_left_out_of_a_notebook_check(sessions_dir: Path) -> None:
    """An executing client (nbclient, nbval: it does not allow input) gets no greeting about earlier sessions; a
    frontend a person uses gets it, marked so that a check of the saved notebook does not compare it."""
    with SessionStore.new(sessions_dir) as store:
        store.append_message(UserMessage(content=[TextContent(text="an earlier question")]))
    kernel = Kernel()
    try:
        executed = kernel.collect(kernel.client.execute("%load_ext pi_notebook", allow_stdin=False), timeout=120)
        assert executed.outputs == []
        person = kernel.collect(kernel.client.execute("from pi_notebook.notebook import _greet\n_greet()"))
        [greeting] = person.of_type("display_data")
        assert greeting["data"]["text/plain"].startswith("pi: last session just now, 1 message; ")
        assert greeting["metadata"] == {"pi_notebook": {"compare": []}}
    finally:
        kernel.shutdown()


def test_a_notebook_is_offered_its_own_sessions_and_not_another_notebook_s(sessions_dir: Path) -> None:
    """Issue 37 item 17: a new notebook's greeting offered another notebook's session (the newest in the folder),
    with literal backticks (the greeting is printed text, not markdown)."""
    for notebook, prompt in (("report.ipynb", "an old report question"), ("analysis.ipynb", "an analysis question")):
        with SessionStore.new(sessions_dir, header={"notebook": notebook}) as store:
            store.append_message(UserMessage(content=[TextContent(text=prompt)]))
        if notebook == "report.ipynb":  # an hour older than the other: the newest is the analysis
            hour_ago = (datetime.now(UTC) - timedelta(hours=1)).isoformat(timespec="milliseconds")
            lines = [json.loads(line) | {"timestamp": hour_ago} for line in store.path.read_text().splitlines()]
            store.path.write_text("".join(json.dumps(entry, separators=(",", ":")) + "\n" for entry in lines))
            report_file = store.path
    fresh = Kernel(env={**os.environ, "JPY_SESSION_NAME": "new.ipynb"})
    report = Kernel(env={**os.environ, "JPY_SESSION_NAME": "report.ipynb"})
    try:
        greeting = fresh.run("%load_ext pi_notebook").text
        assert greeting == "pi: no saved session of this notebook; %pi sessions lists 2 others here"
        greeting = report.run("%load_ext pi_notebook").text
        assert greeting == (
            "pi: last session of this notebook 1 h ago, 1 message; its last reply was cut off — %pi resume to "
            "continue (2 saved here, %pi sessions lists them)"
        )
        resumed = report.run("%pi resume").stdout
        assert resumed.startswith(f"pi: resumed {report_file.name}: 1 message\n"), resumed  # its own
        resumed = fresh.run("%pi resume").stdout  # none of its own: the newest, saying whose it is
        assert "1 message (a session of analysis.ipynb)" in resumed.split("\n")[0], resumed
    finally:
        fresh.shutdown()
        report.shutdown()


COMPACTING = """
from pi_notebook.notebook import configure, get_session
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
faux = FauxProvider()
replies = [f"answer {i} " + "y" * 400 for i in range(3)] + ["## Goal\\nAnswer the questions.", "after the summary"]
faux.set_responses([faux_assistant_message(text) for text in replies])
configure(model=faux.model, stream_fn=faux.stream, settings={"compaction": {"keep_recent_tokens": 200}})
"""


def test_sessions_and_resume_count_the_same_messages_after_a_compaction(sessions_dir: Path) -> None:
    """Issue 37 item 16: ``%pi sessions`` counted the file's messages, ``%pi resume`` what the model is given
    after the compaction (the summary and the recent ones): two numbers for one session."""
    kernel = Kernel()
    try:
        kernel.run("%load_ext pi_notebook")
        kernel.run(COMPACTING)
        for i in range(3):
            kernel.run(f"run = %pi question {i} {'x' * 400}\nawait run")
        kernel.run("run = %pi compact\nawait run")
        kernel.run("run = %pi and now?\nawait run")
        kernel.run("%pi new")
        [row] = [line for line in kernel.run("%pi sessions").stdout.splitlines() if " msgs " in line]
        assert "    8 msgs " in row and row.endswith("  [compacted]"), row
        resumed = kernel.run("%pi resume").stdout.splitlines()[0]
        kept = int(kernel.run("print(len(get_session().messages) - 1)").stdout)
        assert 0 < kept < 8
        assert resumed.endswith(
            f": 8 messages (compacted: the model is given a summary of the earlier ones and the last {kept})"
        ), resumed
    finally:
        kernel.shutdown()


PYTHON_LOOP = """
import sys
from pi_notebook.notebook import configure
from pi_notebook.kernel import add_python_listener, python_tool
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
real_stdout = sys.stdout
add_python_listener(lambda event: event.kind == "start" and print("python start", file=real_stdout, flush=True))
faux = FauxProvider()
faux.set_responses([faux_assistant_message([faux_tool_call("python", {"code": "while True:\\n    pass"})], "toolUse")])
configure(model=faux.model, stream_fn=faux.stream, tools=[python_tool()], settings={"tools": {"approval": "auto"}})
"""


def test_a_kernel_killed_while_the_agents_code_runs_resumes_with_the_call_answered(sessions_dir: Path) -> None:
    # The reply asking for the tool call is on disk, its result is not: the greeting says so, the resumed
    # transcript gives the call an error result, and the next prompt goes on from there.
    first = Kernel()
    try:
        first.run("%load_ext pi_notebook")
        first.run(PYTHON_LOOP)
        first.start("run = %pi loop forever")
        first.wait_for_output(None, "python start")  # printed by the run's task
        os.kill(first.manager.provisioner.pid, signal.SIGKILL)  # type: ignore[union-attr]
    finally:
        first.shutdown()
    [saved] = list_sessions(sessions_dir)
    assert (saved.message_count, saved.last_role, saved.last_stop_reason) == (2, "assistant", "toolUse")
    second = Kernel()
    try:
        greeting = second.run("%load_ext pi_notebook").text
        assert "2 messages; its last tool call was cut off — %pi resume to continue" in greeting
        faux(second, ["going on"])
        resumed = second.run("r = %pi resume\nr").text
        assert "1 tool call(s) were interrupted by the kernel's stop (given error results)" in resumed
        second.run("run = %pi what happened?\nawait run")
        roles = second.run("print([m.role for m in get_session().messages])").text
        assert "['user', 'assistant', 'toolResult', 'user', 'assistant']" in roles
    finally:
        second.shutdown()


def test_sessions_lists_newest_first_and_new_and_use_keep_separate_files(sessions_dir: Path) -> None:
    kernel = Kernel()
    try:
        kernel.run("%load_ext pi_notebook")
        faux(kernel, ["a", "b", "c", "d"])
        kernel.run("run = %pi first session\nawait run")
        assert "pi: new session" in kernel.run("%pi new").text
        kernel.run("run = %pi second session\nawait run")
        kernel.run("run = %pi -s side a side question\nawait run")
        listing = kernel.run("%pi sessions").text
        lines = [line for line in listing.splitlines() if line.strip()[:1].isdigit()]
        assert len(lines) == 3, listing
        assert "'a side question'" in lines[0] and "[live: side]" in lines[0]
        assert "'second session'" in lines[1] and "[live: default]" in lines[1]
        assert "'first session'" in lines[2] and "live" not in lines[2]
        kernel.run("%pi use side")
        status = kernel.run("%pi status").text
        assert "transcript: 2 messages" in status
        assert "in use by session 'default'" in kernel.run("%pi resume 2").text
        kernel.run("%pi use default")
        resumed = kernel.run("%pi resume 3").text
        assert "2 messages" in resumed and "the previous session stays in" in resumed
        bad = kernel.run("%pi resume nosuch").text
        assert "pi: no session 'nosuch'" in bad and "Traceback" not in bad
    finally:
        kernel.shutdown()


def test_saving_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_NOTEBOOK_SESSIONS__DIR", "none")
    kernel = Kernel()
    try:
        kernel.run("%load_ext pi_notebook")
        faux(kernel, ["a"])
        kernel.run("run = %pi hi\nawait run")
        out = kernel.run("print(get_session().store)\n%pi sessions").text
        assert out.startswith("None") and "saving is off" in out
    finally:
        kernel.shutdown()
    del tmp_path


def test_twenty_named_sessions_stream_at_once_without_cross_talk(sessions_dir: Path) -> None:
    kernel = Kernel()
    try:
        kernel.run("%load_ext pi_notebook")
        code = textwrap.dedent(
            """
            import asyncio, random
            from pi_notebook.notebook._registry import REGISTRY
            from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
            runs = {}
            for i in range(20):
                # 20 x 400 tokens/s stays within what the loop keeps up with: a faux stream that falls behind its
                # pace stops yielding to the loop (it catches up), and would starve the others
                faux = FauxProvider(tokens_per_second=400, token_size=(1, 1))
                faux.set_responses([faux_assistant_message(f"reply-{i:02d}-end " * 150)])
                REGISTRY.configure(model=faux.model, stream_fn=faux.stream, name=f"s{i}")
                runs[i] = get_ipython().run_line_magic("pi", f"-s s{i} question-{i:02d}-end")
            await asyncio.gather(*(run.wait_for("message_update", 30) for run in runs.values()))
            aborted = set(random.Random(7).sample(range(20), 10))
            for i in aborted:
                runs[i].abort()
            await asyncio.gather(*runs.values())
            bad = []
            for i, run in runs.items():
                settled = [e for e in run.events if e.type == "agent_settled"]
                if len(settled) != 1 or settled[0].aborted != (i in aborted):
                    bad.append((i, "settled", len(settled), settled and settled[0].aborted, i in aborted))
                shown = "".join(str(op.get("text", "")) for op in run.view.transcript.ops)
                saved = REGISTRY.find(f"s{i}").file.read_text()
                for where, text in (("widget", shown), ("file", saved)):
                    if f"question-{i:02d}-end" not in text or f"reply-{i:02d}-end" not in text:
                        bad.append((i, where, "missing its own"))
                    if any(f"-{j:02d}-end" in text for j in range(20) if j != i):
                        bad.append((i, where, "cross-talk"))
            print("bad", bad)
            """
        )
        assert "bad []" in kernel.run(code, timeout=120).text
    finally:
        kernel.shutdown()
