"""Plain IPython (no running event loop, as in the terminal): %pi runs to the end and prints the report, as plain
text whose control characters are shown, not sent to the terminal."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "pi_notebook")
    shell.run_cell(
        "from pi_notebook.notebook import configure\\n"
        "from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message\\n"
        "faux = FauxProvider()\\n"
        "faux.set_responses([faux_assistant_message('hello from the terminal\\\\x1b[2J')])\\n"
        "configure(model=faux.model, stream_fn=faux.stream);"
    )
    shell.run_cell("%pi are you there?")
    shell.run_cell("%pi interrupt on")
    """
)


def test_without_a_running_loop_a_run_completes_before_the_magic_returns() -> None:
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "\nuser: are you there?\n" in out  # the report as plain text
    assert "\nassistant: hello from the terminal" in out
    assert re.search(r"\n +\d+\.\d{3}  agent_settled +aborted=false\n", out)
    assert "hello from the terminal<U+001B>[2J" in out  # the reply's escape shown, not sent to the terminal
    assert "pi: %pi interrupt needs a running event loop (a Jupyter kernel)" in out


NO_CELLS = textwrap.dedent(
    """
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "pi_notebook")
    shell.run_cell(
        "from pi_notebook.notebook import configure, get_session\\n"
        "from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message\\n"
        "faux = FauxProvider()\\n"
        "names = lambda context: ' '.join(tool.name for tool in context.tools)\\n"
        "offered = lambda context, *rest: faux_assistant_message('tools: ' + names(context))\\n"
        "faux.set_responses([offered])\\n"
        "configure(model=faux.model, stream_fn=faux.stream);"
    )
    shell.run_cell("%pi tools")
    shell.run_cell("%pi which tools do you have?")
    shell.run_cell("print('PROMPT', 'notebook cell tools' in get_session().agent.state.system_prompt)")
    """
)


def test_without_jupyterlab_the_cell_tools_are_left_out_and_both_pi_tools_and_the_prompt_say_so() -> None:
    result = subprocess.run([sys.executable, "-c", NO_CELLS], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "cell_run       not available here" in out
    assert "cell tools: not available here (the notebook is not open in JupyterLab with the pi-notebook" in out
    assert "tools: read bash edit write grep find ls python\n" in out  # what the model was offered
    assert "PROMPT True" in out


REWIND = textwrap.dedent(
    """
    import os, sys, tempfile
    os.chdir(tempfile.mkdtemp())
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "pi_notebook")
    shell.run_cell(
        "from pi_notebook.notebook import configure\\n"
        "from pi_notebook.tools import write_tool\\n"
        "from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call\\n"
        "faux = FauxProvider()\\n"
        "call = faux_tool_call('write', {'path': 'made.txt', 'content': 'x'})\\n"
        "faux.set_responses([faux_assistant_message([call], 'toolUse'), faux_assistant_message('done')])\\n"
        "configure(model=faux.model, stream_fn=faux.stream, tools=[write_tool()],\\n"
        "          settings={'tools': {'approval': 'auto'}});"
    )
    shell.run_cell("%pi make a file")
    print("MADE", os.path.exists("made.txt"))
    shell.run_cell("%pi rewind")
    print("GONE", not os.path.exists("made.txt"))
    """
)


def test_without_a_running_loop_a_rewind_takes_the_run_back() -> None:
    result = subprocess.run([sys.executable, "-c", REWIND], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "MADE True" in out and "GONE True" in out
    assert "rewound run 1\nfiles removed (the run created them): `made.txt`\n" in out
