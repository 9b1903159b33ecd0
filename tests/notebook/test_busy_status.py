"""The kernel's status while a cell awaits a run, in a real kernel (jupyter_client): what a page reads from the last
``status`` message on iopub (JupyterLab's status bar). Requests handled beside the cell (a page's answer on a
subshell, a control request) end with ``idle``; the kernel then says ``busy`` again for the cell, and the cell's own
``idle`` comes last (issue 37 item 6)."""

from __future__ import annotations

from typing import Any

import pytest
from control_frontend import Frontend

pytestmark = pytest.mark.timeout(120)


def statuses(frontend: Frontend, since: int) -> list[tuple[str, str]]:
    """(execution state, the parent request's id) of the status messages seen from ``since`` on."""
    return [
        (m["content"]["execution_state"], m["parent_header"].get("msg_id", ""))
        for m in frontend.seen[since:]
        if m["msg_type"] == "status"
    ]


def test_the_status_stays_busy_while_a_cell_runs_whatever_is_handled_beside_it(
    frontend: Frontend, tmp_path: Any
) -> None:
    flag = tmp_path / "done"
    subshell = frontend.create_subshell()
    comm = frontend.open(subshell)
    frontend.state(comm)
    cell = frontend.execute(
        "import asyncio, pathlib\nprint('awaiting', flush=True)\n"
        f"while not pathlib.Path({str(flag)!r}).exists():\n    await asyncio.sleep(0.01)"
    )
    frontend.wait(lambda m: m["msg_type"] == "stream" and "awaiting" in m["content"]["text"], what="the cell runs")
    mark = len(frontend.seen)
    status = frontend.send(comm, {"action": "status"}, subshell)  # a page's message on its subshell
    assert status
    frontend.state(comm, reply="status")
    probe = frontend.comm_info()  # a control request
    assert isinstance(probe, dict)

    def beside() -> list[str]:
        return [parent for state, parent in statuses(frontend, mark) if state == "idle" and parent != cell]

    frontend.wait(lambda m: len(beside()) == 2, what="the subshell's and the control channel's idle")
    frontend.wait(lambda m: statuses(frontend, mark)[-1] == ("busy", cell), timeout=10, what="busy for the cell")
    seen = statuses(frontend, mark)
    assert ("idle", cell) not in seen and seen[-1] == ("busy", cell)  # what the page shows now: busy
    flag.touch()
    frontend.finished(cell)
    assert statuses(frontend, mark)[-1] == ("idle", cell)  # the cell's own idle last
