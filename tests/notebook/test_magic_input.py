"""What a ``%pi`` line is in a real kernel: taken literally (no ``{expr}`` / ``$name`` expansion) and bounded; odd
commands (issue 10 item 14) answered with one clear line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kernel_harness import Kernel

from pi_notebook.notebook import MAX_PROMPT_CHARS

pytestmark = pytest.mark.timeout(120)

SHORT_FAUX = """
from pi_notebook.notebook import configure, get_notebook_session, get_session
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
faux = FauxProvider()
faux.set_responses([faux_assistant_message("ok")] * 3)
configure(model=faux.model, stream_fn=faux.stream)
HOME = "expanded"
"""


@pytest.fixture
def kernel(kernel: Kernel) -> Kernel:
    """The module's loaded kernel (tests/conftest.py) with a fresh session: no runs, an empty transcript."""
    kernel.run(SHORT_FAUX)
    return kernel


def test_a_percent_pi_line_is_taken_literally_and_runs_no_code(kernel: Kernel, tmp_path: Path) -> None:
    target = tmp_path / "x"
    prompt = f"{{open({str(target)!r}, 'w')}} costs $HOME and {{HOME}}"
    kernel.run(f"run = %pi {prompt}\nawait run")
    assert not target.exists()
    sent = kernel.run("print(repr(get_session().messages[0].content[0].text))").text.strip()
    assert sent == repr(prompt)


def test_steer_and_follow_texts_are_taken_literally_too(kernel: Kernel) -> None:
    outcome = kernel.run("%pi follow {HOME} $HOME")
    assert "pi: follow-up queued: '{HOME} $HOME'" in outcome.text


def test_a_line_over_the_limit_is_refused_with_one_line_and_starts_nothing(kernel: Kernel, tmp_path: Path) -> None:
    target = tmp_path / "x"
    chunk = f"{{open({str(target)!r}, 'w')}} $HOME "
    text = (chunk * (MAX_PROMPT_CHARS // len(chunk) + 1))[: MAX_PROMPT_CHARS + 1].strip() + "x"
    outcome = kernel.run("%pi " + text, allow_error=True)
    assert outcome.error is None
    assert outcome.text == (
        f"pi: the %pi line has {len(text):,} characters, more than the limit of {MAX_PROMPT_CHARS:,}"
        " (send a longer text from Python: await get_session().prompt(text))\n"
    )
    assert not target.exists()
    assert kernel.run("print(len(get_notebook_session().runs))").text == "0\n"
    body = "y" * (MAX_PROMPT_CHARS + 1)
    cell = kernel.run("%%pi\n" + body, allow_error=True)
    refused = r"pi: the %%pi cell has 1,000,00[12] characters, more than the limit of 1,000,000 \(.*\)\n"
    assert re.fullmatch(refused, cell.text)
    assert kernel.run("print(len(get_notebook_session().runs))").text == "0\n"


def test_a_line_at_the_limit_is_a_prompt(kernel: Kernel) -> None:
    text = "z" * MAX_PROMPT_CHARS
    kernel.run("run = %pi " + text + "\nawait run")
    assert kernel.run("print(len(get_session().messages[0].content[0].text))").text == f"{MAX_PROMPT_CHARS}\n"


# -- odd commands (issue 10 item 14) ------------------------------------------------------------------------------
@pytest.mark.parametrize("number", ["0", "-1"])
def test_events_with_a_number_below_one_is_an_error(kernel: Kernel, number: str) -> None:
    kernel.run("run = %pi hi\nawait run")
    outcome = kernel.run(f"%pi events {number}")
    assert outcome.text.startswith(f"pi: no run '{number}' (runs: 1..1)\n")


def test_continue_with_nothing_to_continue_says_so_and_starts_no_run(kernel: Kernel) -> None:
    empty = kernel.run("%pi continue").text
    assert empty == "pi: nothing to continue (the transcript is empty); %pi <prompt> starts a run\n"
    kernel.run("run = %pi hi\nawait run")
    done = kernel.run("%pi continue").text
    assert done == (
        "pi: nothing to continue (the assistant had the last word and nothing is queued); %pi <prompt> starts a run\n"
    )
    assert kernel.run("print(len(get_notebook_session().runs))").text == "1\n"


def test_continue_runs_what_was_queued_after_the_last_reply(kernel: Kernel) -> None:
    kernel.run("run = %pi hi\nawait run\n%pi follow and then this")
    report = kernel.run("run = %pi continue\nawait run").text
    assert "> **user:** and then this" in report
    assert "`agent_settled` | aborted=false" in report


def test_settings_that_set_a_value_and_a_key_inside_it_is_a_clear_error(kernel: Kernel) -> None:
    outcome = kernel.run("%pi settings a=1 a.b=2")
    assert outcome.text.startswith("pi: cannot set both 'a' and 'a.b': one is inside the other\n")
    assert "internal error" not in outcome.text


def test_settings_take_pis_camel_case_keys(kernel: Kernel) -> None:
    assert kernel.run("%pi settings retry.maxRetries=2").text == "pi: settings updated: retry.maxRetries=2\n"
    assert kernel.run("print(get_session().settings.retry.max_retries)").text == "2\n"
    bad = kernel.run("%pi settings retry.maxRetries=x").text
    assert bad.startswith("pi: invalid settings: settings.retry.max_retries: Input should be a valid integer")


COMPACT = """
from pi_notebook.ai import TextContent, UserMessage
faux = FauxProvider(tokens_per_second=20, token_size=(1, 1))
faux.set_responses([faux_assistant_message("summary " * 40), faux_assistant_message("after compaction ok")])
configure(model=faux.model, stream_fn=faux.stream, settings={"compaction": {"keep_recent_tokens": 200}})
history = []
for i in range(4):
    history += [UserMessage(content=[TextContent(text=f"question {i} " + "x" * 400)]),
                faux_assistant_message(f"answer {i} " + "y" * 400)]
get_session().agent.state.messages = history
"""


def test_a_prompt_queued_during_compact_runs_when_the_compaction_ends(kernel: Kernel) -> None:
    kernel.run(COMPACT)
    kernel.run("run = %pi compact\nawait run.wait_for('compaction_start')")
    assert "queued as a follow-up: 'and then this'" in kernel.run("%pi and then this").text
    report = kernel.run("await run").text
    assert "`compaction_end` | manual aborted=false" in report
    assert "> **user:** and then this" in report
    assert "**assistant:** after compaction ok" in report
    assert kernel.run("print(get_session().queue)").text.count("and then this") == 0
