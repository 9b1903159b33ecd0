"""A notebook that runs the agent and rewinds it, executed as CI executes one (``jupyter execute``, nbclient: no page,
no widget frontend), then checked with ``pytest --nbval --pi-replay``: the receipt, the files and the variables come
out the same on re-execution (a rewind's outputs hold nothing that changes between executions)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from user_notebook import jupyter_execute, pytest_nbval_replay, user_environment, write_notebook

pytestmark = pytest.mark.timeout(420)

CELLS = [
    "%load_ext pi_notebook",
    "import os\n"
    "from pi_notebook.notebook import configure\n"
    "from pi_notebook.kernel import python_tool\n"
    "from pi_notebook.tools import write_tool\n"
    "from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call\n"
    "faux = FauxProvider()\n"
    "calls = [faux_tool_call('write', {{'path': 'made.txt', 'content': 'x'}}, id='w'),\n"
    "         faux_tool_call('python', {{'code': 'total = 42'}}, id='p')]\n"
    "faux.set_responses([faux_assistant_message(calls, 'toolUse'), faux_assistant_message('done')])\n"
    "configure(model=faux.model, stream_fn=faux.stream, tools=[write_tool(), python_tool()],\n"
    "          settings={{'tools': {{'approval': 'auto'}}}})\n"
    "total = 0",
    "run = %pi make a file and a total\nawait run",
    "print(os.path.exists('made.txt'), total)",
    "%pi rewind",
    "print(os.path.exists('made.txt'), total)",
]


def test_a_run_and_its_rewind_executed_by_nbclient_pass_nbval_on_re_execution(tmp_path: Path) -> None:
    path = tmp_path / "rewind.ipynb"
    write_notebook(path, "", CELLS)
    jupyter_execute(path, user_environment(tmp_path))
    outputs = ["".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs)
               for cell in nbformat.read(path, as_version=4).cells]  # fmt: skip
    assert outputs[3] == "True 42\n"
    assert outputs[4].startswith("rewound run 1\nfiles removed (the run created them): `made.txt`\n")
    assert "variables given their objects back: `total`" in outputs[4]
    assert outputs[5] == "False 0\n"
    checked = pytest_nbval_replay(path, user_environment(tmp_path))
    assert checked.returncode == 0, checked.stdout[-6000:]
    assert f"{len(CELLS)} passed" in checked.stdout
