"""``%pi tree`` and ``%pi fork`` in a real kernel: the tree printed, a fork run with its branch summary, the old
prompt given back, a new prompt sent from the fork, Stop during the summary, and bad input as one line."""

from __future__ import annotations

import json
import re

import pytest
from kernel_harness import Kernel

pytestmark = pytest.mark.timeout(240)

FAUX = """
from pi_notebook.notebook import configure, get_session
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
faux = FauxProvider(tokens_per_second={tps}, token_size=(1, 1))
configure(model=faux.model, stream_fn=faux.stream, settings={{"sessions": {{"dir": "none"}}}})
def script(*texts):
    faux.set_responses([faux_assistant_message(text) for text in texts])
def prompt_ids():
    return {{node.entry.text: node.entry.id for _, node in get_session().tree().walk() if node.entry.is_user}}
"""


@pytest.fixture
def kernel(kernel: Kernel) -> Kernel:
    """The module's kernel with a fresh session each test (a new faux model, the tree empty)."""
    kernel.run(FAUX.format(tps=100_000))
    return kernel


def ids(kernel: Kernel) -> dict[str, str]:
    found: dict[str, str] = json.loads(kernel.run("import json; print(json.dumps(prompt_ids()))").stdout)
    return found


def clean(outcome_text: str) -> list[str]:
    return [line for line in outcome_text.splitlines() if line.strip()]


def test_the_tree_lists_each_prompt_with_its_id_and_marks_where_the_next_one_goes(kernel: Kernel) -> None:
    assert kernel.run("%pi tree").text.strip() == "pi: the session has no prompt yet"
    kernel.run("script('one', 'two')\nrun = %pi first question\nawait run\nrun = %pi second question\nawait run")
    at = ids(kernel)
    out = kernel.run("%pi tree")
    assert out.error is None
    lines = clean(out.text)
    assert lines[0].startswith("Session tree: 2 prompts, 1 branch")
    assert lines[2:] == [
        f"* {at['first question']}  #1  first question  (1 reply)",
        f"* {at['second question']}  #2  second question  (1 reply)  ◀ here",
    ]


def test_fork_summarises_the_branch_left_behind_and_gives_the_prompt_back(kernel: Kernel) -> None:
    kernel.run("script('one', 'two', 'the gist', 'three')")
    kernel.run("run = %pi first question\nawait run\nrun = %pi second question\nawait run")
    second = ids(kernel)["second question"]
    report = kernel.run(f"run = %pi fork {second[:5]}\nawait run")  # the start of its id
    assert report.error is None
    shown = report.shown
    assert "branch_summary_start" in shown and "session_tree" in shown
    assert "branch summary (of the branch left behind):" in shown and "the gist" in shown
    assert kernel.run("print(repr(run.view.input.value))").stdout.strip() == "'second question'"
    kernel.run("run = %pi third question\nawait run")
    lines = clean(kernel.run("%pi tree").text)[2:]
    summary = next(line for line in lines if "[branch summary]" in line)
    assert lines[0].startswith("* ") and "first question" in lines[0]
    assert re.match(rf"^  ├─ {second}  #2  second question  \(1 reply\)$", lines[1])
    assert summary.startswith("* └─ ") and "the gist" in summary
    assert lines[-1].startswith("*    ") and "third question  (1 reply)  ◀ here" in lines[-1]
    messages = kernel.run("print([m.role for m in get_session().messages])").stdout.strip()
    assert messages == "['user', 'assistant', 'branchSummary', 'user', 'assistant']"


def test_fork_with_a_prompt_sends_it_from_before_the_old_one(kernel: Kernel) -> None:
    kernel.run("script('one', 'two', 'from the fork')")
    kernel.run("run = %pi first question\nawait run\nrun = %pi second question\nawait run")
    kernel.run("run = %pi fork --no-summary #2 instead, this\nawait run")  # the second prompt, by its number
    texts = kernel.run("print([getattr(m, 'content', '') for m in get_session().messages][-2:])").stdout
    assert "instead, this" in texts and "from the fork" in texts
    assert "branchSummary" not in kernel.run("print([m.role for m in get_session().messages])").stdout


def test_stop_during_the_summary_moves_nothing(kernel: Kernel) -> None:
    kernel.run("script('one', 'two')\nrun = %pi first question\nawait run\nrun = %pi second question\nawait run")
    second = ids(kernel)["second question"]
    before = kernel.run("%pi tree").text
    kernel.run("faux.set_responses([faux_assistant_message('gist ' * 20_000)])\nfaux.tokens_per_second = 2000")
    kernel.run(f"run = %pi fork {second}")
    kernel.run("await run.wait_for('branch_summary_start')\nrun.abort()\nreport = await run")
    assert kernel.run("print(report.aborted, run.status.status)").stdout.strip() == "True aborted"
    assert kernel.run("%pi tree").text == before


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("%pi fork zzzz", "pi: no entry 'zzzz' in this session (%pi tree lists the prompts)"),
        ("%pi fork --sideways x", "pi: fork: unknown option '--sideways'"),
        ("%pi fork", "pi: fork needs the number or id of a prompt (%pi tree lists them)"),
        ("%pi fork #7", "pi: no prompt #7 in this session (%pi tree lists them)"),
        ("%pi fork 7", "pi: no prompt #7 and no entry id starting with '7' in this session"),
    ],
)
def test_bad_input_is_one_line(kernel: Kernel, line: str, said: str) -> None:
    out = kernel.run(line)
    assert out.error is None and "Traceback" not in out.text
    assert out.stdout.splitlines()[0].startswith(said)


def test_forking_a_reply_or_while_a_run_is_active_is_one_line(kernel: Kernel) -> None:
    kernel.run("script('one', 'two ' * 20_000)\nrun = %pi first question\nawait run")
    reply = kernel.run(
        "print(next(n.entry.id for _, n in get_session().tree().walk() if n.entry.role == 'assistant'))"
    ).stdout.strip()
    out = kernel.run(f"%pi fork {reply}")
    assert out.error is None
    assert out.stdout.strip() == (
        f"pi: entry {reply} is a reply, not a prompt: %pi fork continues from before a prompt (%pi tree)"
    )
    first = ids(kernel)["first question"]
    kernel.run("faux.tokens_per_second = 2000\nrun = %pi second question\nawait run.wait_for('message_update')")
    out = kernel.run(f"%pi fork {first}")
    assert out.error is None
    assert out.stdout.strip() == "pi: a run is active; %pi abort it (or %pi wait) before forking"
    kernel.run("run.abort()\nawait run")
