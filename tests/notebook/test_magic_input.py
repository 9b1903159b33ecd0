"""What a ``%pi`` line is in a real kernel: taken literally (no ``{expr}`` / ``$name`` expansion), and bounded."""

from __future__ import annotations

import re
from collections.abc import Iterator
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


@pytest.fixture(scope="module")
def shared_kernel() -> Iterator[Kernel]:
    kernel = Kernel()
    kernel.run("%load_ext pi_notebook", timeout=120)  # the first import is slow on a loaded machine
    yield kernel
    kernel.shutdown()


@pytest.fixture
def kernel(shared_kernel: Kernel) -> Kernel:
    shared_kernel.run(SHORT_FAUX)  # a fresh session: no runs, an empty transcript
    return shared_kernel


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
