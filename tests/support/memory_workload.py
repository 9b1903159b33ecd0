"""Many settled ``%pi`` runs in a real kernel, and what they keep alive: shared by ``bench/bench_memory.py`` and
``tests/notebook/test_memory_kernel.py``.

Each run is two cells, as a user types them: one ending in ``%pi ...`` (the cell's result is the run, which
IPython keeps in ``Out``), then one that awaits it. Every reply is ``reply_chars`` characters, streamed by the faux
provider in its default 3-5 token chunks. The kernel reports, after a ``gc.collect()``, its open ipywidgets
(ipywidgets' registry of live widgets), its resident set size and the bytes tracemalloc traces, plus the size of
the runs' transcripts as the session file stores them (the JSON of each message). The model's context window is
large enough that no run compacts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from kernel_harness import Kernel

SETUP = """
import gc, json, tracemalloc
from ipywidgets.widgets import widget as _pi_widget_module
from pi_notebook.notebook import configure, get_notebook_session
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
_pi_faux = FauxProvider(models=[{{"id": "faux-big", "context_window": 10**9, "max_tokens": 16_384}}])
configure(model=_pi_faux.model, stream_fn=_pi_faux.stream)
if {trace}:
    tracemalloc.start()

def _pi_rss():
    with open("/proc/self/statm") as statm:
        import os
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def _pi_probe():
    gc.collect()
    entry = get_notebook_session()
    transcript = sum(
        len(message.model_dump_json(by_alias=True).encode()) for run in entry.runs for message in run.transcript
    )
    traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
    print(json.dumps({{"widgets": len(_pi_widget_module._instances), "rss": _pi_rss(), "traced": traced,
                      "runs": len(entry.runs), "transcript": transcript}}))
"""

RUN = """
_pi_faux.set_responses([faux_assistant_message("word " * ({chars} // 5))])
%pi tell me something long
"""
AWAIT = "_pi_report = await get_notebook_session().runs[-1]"


@dataclass(frozen=True)
class Probe:
    """What the kernel reported after some runs."""

    widgets: int
    rss: int
    traced: int
    runs: int
    transcript: int


class Workload:
    """A kernel that starts settled runs on demand and reports what they keep alive."""

    def __init__(self, kernel: Kernel, *, reply_chars: int = 20_000, trace: bool = False) -> None:
        self.kernel = kernel
        self.reply_chars = reply_chars
        kernel.run("%load_ext pi_notebook", timeout=180)  # the first import is slow on a loaded machine
        kernel.run(SETUP.format(trace=trace), timeout=60)

    def runs(self, count: int) -> None:
        """``count`` more runs, each settled before the next starts."""
        for _ in range(count):
            self.kernel.run(RUN.format(chars=self.reply_chars))
            self.kernel.run(AWAIT)

    def probe(self) -> Probe:
        return Probe(**json.loads(self.kernel.run("_pi_probe()").text))
