"""``%pi rewind`` in a real kernel (jupyter_client), where no page is (as under nbclient or nbval): a run of the agent
(a scripted faux model) writes a new file, edits one, rebinds ``df``, creates ``model``, deletes ``keep`` and changes
``scores`` in place; ``%pi rewind`` gives all of it back (the very ``df`` object), moves the conversation back (the
session file keeps the abandoned entries), names a file the user edited since and keeps it, names what bash did, and
works after a Stop. While a run is active it says one line: stop first."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from control_frontend import Frontend
from kernel_harness import Kernel

pytestmark = pytest.mark.timeout(180)

SETUP = """
import json, os
from pi_notebook.notebook import configure, get_session
from pi_notebook.kernel import python_tool
from pi_notebook.tools import bash_tool, edit_tool, write_tool
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
os.chdir({work!r})
faux = FauxProvider(token_size=(1, 1), tokens_per_second={tps})
turns = {turns!r}
faux.set_responses([
    *[faux_assistant_message([faux_tool_call(n, a, id=f"c{{i}}-{{j}}") for j, (n, a) in enumerate(t)], "toolUse")
      for i, t in enumerate(turns)],
    faux_assistant_message("done"),
])
settings = {{"retry": {{"enabled": False}}, "tools": {{"approval": "auto"}}, "sessions": {{"dir": {sessions!r}}}}}
configure(model=faux.model, stream_fn=faux.stream, tools=[write_tool(), edit_tool(), bash_tool(), python_tool()],
          settings=settings)
"""

USER_STATE = """
df = {"rows": [1, 2, 3]}
df_before = df
keep = ["precious"]
keep_before = keep
scores = [1, 2]
scores_before = scores
"""

AGENT_CODE = "df = {'rows': []}\nmodel = 'fitted'\ndel keep\nscores.append(99)"

TURNS = [
    [("write", {"path": "new.csv", "content": "a,b\n1,2\n"}), ("edit", {"path": "notes.txt", "edits": [
        {"oldText": "draft", "newText": "final"}]})],
    [("python", {"code": AGENT_CODE})],
    [("bash", {"command": "echo from bash > bash.txt"})],
]  # fmt: skip


def setup(kernel: Kernel, tmp_path: Path, turns: list[Any] = TURNS, tps: int = 0) -> tuple[Path, Path]:
    work, sessions = tmp_path / "work", tmp_path / "sessions"
    work.mkdir()
    sessions.mkdir()
    (work / "notes.txt").write_text("a draft\n")
    kernel.run(SETUP.format(work=str(work), sessions=str(sessions), turns=turns, tps=tps or None))
    kernel.run(USER_STATE)
    return work, sessions


def facts(kernel: Kernel) -> dict[str, Any]:
    code = (
        "print(json.dumps({'df_same': df is df_before, 'df': df, 'keep_same': globals().get('keep') is keep_before,"
        " 'model': 'model' in globals(), 'scores_same': scores is scores_before, 'scores': scores,"
        " 'messages': len(get_session().messages)}))"
    )
    return dict(json.loads(kernel.run(code).stdout))


def test_rewind_takes_back_files_variables_and_the_conversation_with_the_very_objects(
    kernel: Kernel, tmp_path: Path
) -> None:
    work, sessions = setup(kernel, tmp_path)
    kernel.run("run = %pi do the work\nawait run")
    assert (work / "new.csv").exists() and (work / "notes.txt").read_text() == "a final\n"
    assert facts(kernel) | {"messages": 0} == {
        "df_same": False, "df": {"rows": []}, "keep_same": False, "model": True, "scores_same": True,
        "scores": [1, 2, 99], "messages": 0,
    }  # fmt: skip
    [file] = list(sessions.rglob("*.jsonl"))
    saved_before = file.read_text()

    receipt = kernel.run("%pi rewind").text
    assert not (work / "new.csv").exists()
    assert (work / "notes.txt").read_text() == "a draft\n"
    assert (work / "bash.txt").exists()  # what bash did stays, and the receipt says so
    assert facts(kernel) == {
        "df_same": True, "df": {"rows": [1, 2, 3]}, "keep_same": True, "model": False, "scores_same": True,
        "scores": [1, 2], "messages": 0,
    }  # fmt: skip
    lines = receipt.splitlines()
    assert lines[0] == "rewound run 1"
    assert "files restored: `notes.txt`" in lines
    assert "files removed (the run created them): `new.csv`" in lines
    assert "variables given their objects back: `df`, `keep`" in lines
    assert "variables removed (the run made them): `model`" in lines
    assert "objects put back as they were (changed in place): `scores`" in lines
    moved = "conversation: back to before run 1 (the abandoned branch stays in the session file and in %pi tree)"
    assert moved in lines
    assert "not restored: what bash changed is not tracked (`echo from bash > bash.txt`)" in lines
    assert file.read_text().startswith(saved_before)  # the abandoned entries stay in the file
    tree = kernel.run(
        "tree = get_session().tree()\n"
        "print(json.dumps([tree.leaf_id, [(n.entry.text, n.on_branch) for _, n in tree.walk() if n.entry.is_user]]))"
    ).stdout
    assert json.loads(tree) == [None, [["do the work", False]]]  # in the tree, off the current branch
    [line] = [line for line in kernel.run("%pi tree").text.splitlines() if "#1  do the work" in line]
    assert line.startswith("  ") and "◀ here" not in line  # %pi tree lists it, not on the current branch


def test_a_file_the_user_edited_after_the_run_is_kept_and_named(kernel: Kernel, tmp_path: Path) -> None:
    work, _ = setup(kernel, tmp_path, turns=TURNS[:1])
    kernel.run("run = %pi edit it\nawait run")
    (work / "notes.txt").write_text("a final, and my own line\n")
    receipt = kernel.run("%pi rewind").text
    assert (work / "notes.txt").read_text() == "a final, and my own line\n"
    assert not (work / "new.csv").exists()
    assert receipt.splitlines().count("kept yours, changed since the run: file `notes.txt`") == 1


def test_a_second_rewind_takes_the_run_before_and_a_third_says_there_is_nothing(kernel: Kernel, tmp_path: Path) -> None:
    work, _ = setup(kernel, tmp_path, turns=[[("write", {"path": "one.txt", "content": "1"})]])
    kernel.run("run = %pi first\nawait run")
    kernel.run("faux.set_responses([faux_assistant_message([faux_tool_call('write', {'path': 'two.txt', 'content': "
               "'2'})], 'toolUse'), faux_assistant_message('done')])")  # fmt: skip
    kernel.run("run = %pi second\nawait run")
    assert kernel.run("%pi rewind").text.splitlines()[0] == "rewound run 2"
    assert (work / "one.txt").exists() and not (work / "two.txt").exists()
    assert kernel.run("%pi rewind 2").text == "pi: run 2 was already rewound\n"
    assert kernel.run("%pi rewind").text.splitlines()[0] == "rewound run 1"
    assert kernel.run("%pi rewind").text == "pi: every kept run was rewound already: nothing to rewind\n"


def test_while_a_run_is_active_rewind_says_stop_first(kernel: Kernel, tmp_path: Path) -> None:
    setup(kernel, tmp_path, turns=[], tps=5)
    kernel.run("faux.set_responses([faux_assistant_message('word ' * 2000)])")  # half an hour at five a second
    kernel.run("run = %pi talk slowly\nawait run.wait_for('message_update')")
    out = kernel.run("%pi rewind").text
    assert out == "pi: a run is active: stop it first (its Stop button, or %pi abort), then rewind\n"
    kernel.run("run.abort()\nawait run")


def test_while_another_sessions_run_is_active_rewind_says_stop_first_too(kernel: Kernel, tmp_path: Path) -> None:
    setup(kernel, tmp_path, turns=[[("write", {"path": "one.txt", "content": "1"})]])
    kernel.run("run = %pi first\nawait run")
    slow = "from pi_notebook.notebook._registry import REGISTRY\nslow = FauxProvider(tokens_per_second=5)\n"
    slow += "slow.set_responses([faux_assistant_message('a slow reply ' * 2000)])\n"
    kernel.run(slow + "REGISTRY.configure(slow.model, slow.stream, name='other')")
    kernel.run("other = %pi -s other talk slowly\nawait other.wait_for('message_update')")
    out = kernel.run("%pi rewind").text  # the sessions share the namespace and the files
    assert out == "pi: a run is active: stop it first (its Stop button, or %pi abort), then rewind\n"
    kernel.run("other.abort()\nawait other")
    assert kernel.run("%pi rewind").text.splitlines()[0] == "rewound run 1"


def test_rewind_after_a_stop_takes_back_what_the_code_did_before_it_was_stopped(
    kernel: Kernel, frontend: Frontend, tmp_path: Path
) -> None:
    code = "import time\nstopped_here = 'bound'\ndf = None\nprint('working', flush=True)\ntime.sleep(1000)"
    setup(kernel, tmp_path, turns=[[("python", {"code": code})]])
    subshell = frontend.create_subshell()
    comm = frontend.open(subshell)
    frontend.state(comm)
    frontend.execute("run = %pi start and stop")
    frontend.wait(lambda m: m["msg_type"] == "comm_msg" and "working" in json.dumps(m["content"]), what="the code")
    frontend.send(comm, {"action": "abort"}, subshell)
    assert "aborted=True" in frontend.run("report = await run\nprint(f'aborted={run.aborted}')")
    receipt = frontend.run("receipt = %pi rewind\nprint(receipt)")
    assert "variables given their objects back: `df`" in receipt
    assert "variables removed (the run made them): `time`, `stopped_here`" in receipt  # its import too
    assert json.loads(frontend.run("print(json.dumps([df is df_before, 'stopped_here' in globals()]))")) == [
        True,
        False,
    ]


MEMORY = """
import gc, weakref
class Data:
    pass
first = Data()
gone = weakref.ref(first)
data = first
del first
faux.set_responses([faux_assistant_message([faux_tool_call("python", {"code": "data = Data()"})], "toolUse"),
                    faux_assistant_message("one"), faux_assistant_message("two")])
"""


def test_keep_runs_releases_the_oldest_checkpoint_and_status_shows_what_they_hold(
    kernel: Kernel, tmp_path: Path
) -> None:
    setup(kernel, tmp_path, turns=[])
    kernel.run(MEMORY)
    kernel.run("%pi settings checkpoints.keep_runs=1")
    kernel.run("run = %pi replace the data\nawait run")
    held = "print(gone() is not None)"
    assert kernel.run(f"gc.collect()\n{held}").stdout == "True\n"  # only run 1's checkpoint holds it now
    assert "checkpoints: run 1 (0 files, 0 cells, 1 variables by reference, 0 copies; 0.0 MB held)" in (
        kernel.run("%pi status").stdout
    )
    kernel.run("run = %pi and again\nawait run")
    assert kernel.run(f"gc.collect()\n{held}").stdout == "False\n"  # released with run 1's checkpoint
    assert kernel.run("%pi rewind 1").stdout == (
        "pi: run 1's checkpoint was released (checkpoints.keep_runs); runs 2..2 can be rewound\n"
    )
    kernel.run("%pi new")
    assert "checkpoints: none kept" in kernel.run("%pi status").stdout  # released with the session's file


SCRATCH = "mine = 'made by the agent'\nprices.append(4)\nrows = len(prices)"


def test_the_scratch_namespace_reads_the_users_variables_keeps_its_own_and_adopt_copies_one(
    kernel: Kernel, tmp_path: Path
) -> None:
    setup(kernel, tmp_path, turns=[[("python", {"code": SCRATCH})]])
    kernel.run("prices = [1, 2, 3]\n%pi settings python.namespace=scratch")
    kernel.run("run = %pi look at the prices\nawait run")
    present = "print(json.dumps([name in globals() for name in ('mine', 'rows')]))"
    assert json.loads(kernel.run(present).stdout) == [False, False]  # its names stay in its own namespace
    assert kernel.run("print(prices)").stdout == "[1, 2, 3, 4]\n"  # objects are shared: an in-place change shows
    assert "python namespace: scratch (mine, rows)" in kernel.run("%pi status").stdout
    prompt = kernel.run("print(get_session().agent.state.system_prompt)").stdout
    assert (
        "- python runs in a scratch namespace: it reads the user's variables, and what you bind stays there" in prompt
    )
    adopted = kernel.run("%pi adopt rows").stdout
    assert adopted == "pi: adopted rows (int), the scratch namespace's very object\n"
    assert kernel.run("print(rows)").stdout == "4\n"
    assert kernel.run("%pi adopt nothing_here").stdout == (
        "pi: no variable 'nothing_here' in the agent's scratch namespace (it has: mine, rows)\n"
    )
    receipt = kernel.run("%pi rewind").text
    assert "objects put back as they were (changed in place): `prices`" in receipt
    assert kernel.run("print(prices)").stdout == "[1, 2, 3]\n"
    kernel.run("%pi settings python.namespace=user")


CASSETTE = """
import os
from pi_notebook.ai.models import model_from_spec
from pi_notebook.testing import FaultServer, Reply
os.environ["OPENAI_API_KEY"] = "sk-test-cassette-rewind"
os.chdir({work!r})
server = FaultServer()
made = Reply.tool_call("write", {{"path": "made.txt", "content": "by the agent"}}, id="call_1")
server.script([made, Reply.text("made it"), made, Reply.text("made it")])
model = model_from_spec("openai:gpt-4o-mini", base_url=server.openai_base_url)
settings = {{"retry": {{"enabled": False}}, "tools": {{"approval": "auto"}}}}
configure(model=model, tools=[write_tool()], settings=settings)
"""
ROUND = "run = %pi make the file\nawait run\nprint(os.path.exists('made.txt'))\nreceipt = %pi rewind\nprint(receipt)"


def numbered(text: str) -> str:
    return re.sub(r"\brun \d+", "run N", text)


def test_under_a_cassette_a_run_and_its_rewind_replay_the_same(kernel: Kernel, tmp_path: Path) -> None:
    work, _ = setup(kernel, tmp_path, turns=[])
    kernel.run(CASSETTE.format(work=str(work)))
    kernel.run(f"%pi cassette {tmp_path / 'runs.jsonl'}")
    recorded = [numbered(kernel.run(ROUND).stdout) for _ in range(2)]  # rewound, it asks the same again
    assert recorded[0] == recorded[1] and recorded[0].startswith("True\nrewound run N\n")
    kernel.run("server.close()\ndel os.environ['OPENAI_API_KEY']")
    kernel.run(f"%pi cassette {tmp_path / 'runs.jsonl'} --mode none")
    replayed = [numbered(kernel.run(ROUND).stdout) for _ in range(2)]
    assert replayed == recorded
    assert not (work / "made.txt").exists()
    kernel.run("%pi cassette off")
