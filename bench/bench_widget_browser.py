"""Browser benchmark: the run widget's main-thread cost while one long reply streams in, in real JupyterLab
and Debian's Chromium.

    python bench/bench_widget_browser.py [--chars 600000] [--rate 20000] [--repeat 3] [--kernel-path DIR]

W1  A faux reply of ``--chars`` characters of mixed markdown (headings, paragraphs, lists, code blocks,
    tables) streams at ``--rate`` characters per second, 3 s after the cell runs (so the widget is on the
    page); the widget receives at most 20 batches per second. Per paint, while the reply was near 20k, 200k
    and 600k characters long: the median duration of the widget's paint (its animation-frame callback, forced
    layout included), and the page's script time (CDP ``Performance.getMetrics`` ScriptDuration: the comm
    messages' handling too) and layout/style time divided by the paints; the ratios 600k/20k (target: 1.5x).
W2  Every main-thread task over 50 ms while streaming, from a Chromium trace taken meanwhile (CDP tracing with
    V8's CPU sampler, which costs some speed: compare runs of this script with each other only), with the
    reply's length when it happened and who made it: the widget's script, JupyterLab's, garbage collection,
    and the frame's rendering (see ``_long_tasks.py``); the widget's paints over 50 ms (each animation-frame
    callback its module asks for is timed; anywidget imports the module from a ``blob:`` URL, which identifies
    its calls). Target: no task over 50 ms caused by the widget. Each task says its CPU time too, and each run
    the CPU time of the frames the widget painted in: on a shared 2-core machine a task's wall time includes
    waiting for a core.

``--kernel-path`` runs the kernel on another copy of pi_notebook (e.g. an export of an earlier commit, to
measure the widget before a change): it goes first on the kernel's PYTHONPATH. The machine is shared: run
with ``--repeat`` and read ranges, not single numbers; the load average is printed with each run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from _long_tasks import CATEGORIES, SYNC_MARK, Task, Trace  # noqa: E402
from lab_harness import JupyterLab, notebook  # noqa: E402

MARK_EVERY = 5_000  # characters between two (time, length) marks the kernel records

SETUP = """\
%load_ext pi_notebook
import asyncio, json, time
from pi_notebook.notebook import configure, get_session
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
reply = open("reply.md").read()
faux = FauxProvider(tokens_per_second={rate} / 4, token_size=(25, 25))
async def after_a_pause(*_):
    await asyncio.sleep(3)  # the widget is on the page before the reply starts
    return faux_assistant_message(reply)
faux.set_responses([after_a_pause])
configure(model=faux.model, stream_fn=faux.stream)
marks, streamed = [], [0]
def mark(event):
    if event.type == "message_update" and event.assistant_message_event.type == "text_delta":
        before = streamed[0] // {every}
        streamed[0] += len(event.assistant_message_event.delta)
        if streamed[0] // {every} != before:
            marks.append((time.monotonic(), streamed[0]))
    elif event.type == "agent_settled":
        with open("marks.json", "w") as f:
            json.dump(marks, f)
get_session().subscribe(mark)
"""

# Times each animation-frame callback the widget's module (loaded by anywidget from a blob: URL) asks for:
# that is its paint.
PAGE_SCRIPT = """
window.__bench = { paints: [] };
const raf = window.requestAnimationFrame.bind(window);
window.requestAnimationFrame = (callback) => {
  if (!(new Error().stack || '').includes('blob:')) return raf(callback);
  return raf((now) => {
    const start = performance.now();
    try { callback(now); } finally { window.__bench.paints.push([start, performance.now() - start]); }
  });
};
undefined;  // the script's value: Playwright would call a function
"""

PARAGRAPH = (
    "The agent read **{n} files** and found that `parse_config()` calls *itself* when a key is missing; "
    "see [the docs](https://example.com/docs/{n}) and the notes below. Long replies like this one mix prose, "
    "lists, code and tables, and keep coming for a while.\n\n"
)
SECTION = (
    "## Step {n}\n\n" + PARAGRAPH + "- first point about step {n}\n- second point, with `code`\n"
    "- third point\n  continued on a second line\n\n"
    "```python\ndef step_{n}(values):\n    total = 0\n    for value in values:\n        total += value * {n}\n"
    "    return total\n```\n\n"
    "| file | lines | status |\n|---|---:|---|\n| a_{n}.py | {n} | ok |\n| b_{n}.py | 12 | changed |\n\n" + PARAGRAPH
)


def reply(chars: int) -> str:
    parts, size, n = ["# A long report\n\n"], 0, 0
    while size < chars:
        n += 1
        parts.append(SECTION.format(n=n))
        size += len(parts[-1])
    return "".join(parts)[:chars]


@dataclass
class Sample:
    t: float  # time.monotonic()
    page: float  # the page's performance.now() at about the same moment
    script: float  # seconds, cumulative (CDP)
    layout_style: float
    paints: int


def sample(page: Any, cdp: Any) -> Sample:
    m = {entry["name"]: entry["value"] for entry in cdp.send("Performance.getMetrics")["metrics"]}
    before = time.monotonic()
    now, paints = page.evaluate("[performance.now(), window.__bench.paints.length]")
    t = (before + time.monotonic()) / 2
    return Sample(t, now, m["ScriptDuration"], m["LayoutDuration"] + m["RecalcStyleDuration"], paints)


def one_run(lab: JupyterLab, index: int, chars: int, rate: int, trace_dir: Path | None) -> dict[str, Any]:
    load = os.getloadavg()[0]
    (lab.root / "reply.md").write_text(reply(chars))
    (lab.root / "marks.json").unlink(missing_ok=True)
    setup = SETUP.format(rate=rate, every=MARK_EVERY)
    path = notebook([setup, "%pi write the long report"], lab.root / f"bench{index}.ipynb")
    page = lab.open(path, workspace=f"bench{index}")
    page.evaluate(PAGE_SCRIPT)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    lab.run_cell(page, 0)
    lab.wait_idle(page, 0)
    lab.browser.start_tracing(page=page, categories=CATEGORIES)
    lab.run_cell(page, 1)
    page.locator(".pi-run-transcript").first.wait_for(timeout=60_000)
    page.evaluate(f"performance.mark({SYNC_MARK!r})")
    samples = [sample(page, cdp)]
    deadline = time.monotonic() + chars / rate * 4 + 120
    while time.monotonic() < deadline:
        time.sleep(0.25)  # the sampling period of the metrics, not a wait for a behaviour
        samples.append(sample(page, cdp))
        if (lab.root / "marks.json").exists() and len(samples) > 5 and samples[-1].paints == samples[-5].paints:
            break  # settled, and nothing drawn for a second
    bench = page.evaluate("window.__bench")
    data = lab.browser.stop_tracing()
    if trace_dir is not None:  # to open in Chromium's DevTools (Performance, Load profile)
        trace_dir.mkdir(parents=True, exist_ok=True)
        (trace_dir / f"trace-{index + 1}.json").write_bytes(data)
    trace = Trace(data)
    marks = [(t, n) for t, n in json.loads((lab.root / "marks.json").read_text())]
    lab.shutdown_kernels()
    offset = statistics.median(s.t - s.page / 1000 for s in samples)  # page time -> monotonic
    first, last = samples[0].page, samples[-1].page
    paints = [(start / 1000 + offset, duration) for start, duration in bench["paints"] if first <= start <= last]
    slow = [(round(length_at(marks, t) / 1000), round(d)) for t, d in paints if d > 50]
    tasks = trace.long_tasks(50, first, last, [start for start, _ in bench["paints"]])
    frame_cpu = trace.frame_cpu(first, last, [start for start, _ in bench["paints"]])
    return {
        "load": (load, os.getloadavg()[0]),
        "windows": {size: window(samples, marks, paints, size) for size in sizes(chars)},
        "paints": len(paints),
        "paint_max": max((d for _, d in paints), default=0.0),
        "slow_paints": slow,
        "tasks": [(length_at(marks, task.start / 1000 + offset), task) for task in tasks],
        "frame_cpu": sorted(frame_cpu),
    }


def sizes(chars: int) -> list[int]:
    return [size for size in (20_000, 200_000, 600_000) if size <= chars] or [chars]


def length_at(marks: list[tuple[float, int]], t: float) -> float:
    """The reply's length the kernel had sent at monotonic time ``t`` (interpolated between marks)."""
    for (t0, n0), (t1, n1) in zip([(marks[0][0] - 1, 0), *marks], marks, strict=False):
        if t <= t1:
            return n0 + (n1 - n0) * max(0.0, t - t0) / max(t1 - t0, 1e-9)
    return marks[-1][1]


def window(
    samples: list[Sample], marks: list[tuple[float, int]], paints: list[tuple[float, float]], size: int
) -> dict[str, float]:
    """Costs per paint over the paints that started while the reply was near ``size`` characters long."""
    spread = max(10_000, size // 10)
    low, high = size - spread, min(size + spread, marks[-1][1])
    inside = [(t, d) for t, d in paints if low <= length_at(marks, t) <= high]
    if not inside:  # one slow paint spans the whole window: take the last one that started before it ended
        inside = [max(((t, d) for t, d in paints if length_at(marks, t) <= high), default=paints[0])]
    start, end = inside[0][0], inside[-1][0] + inside[-1][1] / 1000
    a = max((s for s in samples if s.t <= start), key=lambda s: s.t, default=samples[0])
    b = min((s for s in samples if s.t >= end), key=lambda s: s.t, default=samples[-1])
    count = max(1, b.paints - a.paints)
    return {
        "paints": len(inside),
        "paint_ms": statistics.median(d for _, d in inside),
        "script_ms": (b.script - a.script) * 1000 / count,
        "layout_style_ms": (b.layout_style - a.layout_style) * 1000 / count,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chars", type=int, default=600_000)
    parser.add_argument("--rate", type=int, default=20_000, help="characters per second")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kernel-path", type=Path, default=ROOT)
    parser.add_argument("--trace-dir", type=Path, help="keep each run's Chromium trace there")
    args = parser.parse_args()
    env = {"PYTHONPATH": os.pathsep.join([str(args.kernel_path.resolve()), os.environ.get("PYTHONPATH", "")])}
    lab = JupyterLab(Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-widget-{os.getpid()}", env=env)
    runs = []
    try:
        for index in range(args.repeat):
            runs.append(one_run(lab, index, args.chars, args.rate, args.trace_dir))
            report(runs[-1], index)
    finally:
        lab.close()
    summary(runs)


def report(run: dict[str, Any], index: int) -> None:
    parts = [
        f"{size // 1000}k: paint {w['paint_ms']:.2f} ms, script {w['script_ms']:.2f} ms + layout/style "
        f"{w['layout_style_ms']:.2f} ms per paint ({w['paints']} paints)"
        for size, w in run["windows"].items()
    ]
    print(f"run {index + 1} (load average {run['load'][0]:.2f} -> {run['load'][1]:.2f}): " + "; ".join(parts))
    print(f"  {run['paints']} paints; widget paints > 50 ms at (k characters, ms): {run['slow_paints']}")
    tasks: list[tuple[float, Task]] = run["tasks"]
    causes = Counter(task.cause for _, task in tasks)
    print(f"  {len(tasks)} main-thread tasks > 50 ms, caused by: {dict(causes) or 'none'}; each, ms (shares):")
    for length, task in tasks:
        print(f"    at {length / 1000:.0f}k characters: {task.describe()}")
    cpu = run["frame_cpu"]
    if cpu:
        print(
            f"  CPU of the {len(cpu)} frames the widget painted in: mean {statistics.mean(cpu):.1f} ms, "
            f"p99 {cpu[min(len(cpu) - 1, int(len(cpu) * 0.99))]:.1f} ms, max {cpu[-1]:.1f} ms"
        )


def spread(values: list[float], unit: str) -> str:
    return f"{min(values):.2f}–{max(values):.2f}{unit} (median {statistics.median(values):.2f})"


def summary(runs: list[dict[str, Any]]) -> None:
    first, last = min(runs[0]["windows"]), max(runs[0]["windows"])
    for key, name in (("paint_ms", "widget paint (its animation-frame callback)"), ("script_ms", "page script")):
        at_first = [r["windows"][first][key] for r in runs]
        at_last = [r["windows"][last][key] for r in runs]
        ratios = [b / a for a, b in zip(at_first, at_last, strict=True)]
        print(
            f"W1 {name} per paint at {first // 1000}k: {spread(at_first, ' ms')}; at {last // 1000}k: "
            f"{spread(at_last, ' ms')}; ratio {spread(ratios, 'x')} (target ≤ 1.5x)"
        )
    widget = [[task for _, task in r["tasks"] if task.cause == "widget"] for r in runs]
    print(
        f"W2 longest widget paint {spread([r['paint_max'] for r in runs], ' ms')}; widget paints > 50 ms: "
        f"{[len(r['slow_paints']) for r in runs]}; longest main-thread task "
        f"{spread([max((t.duration for _, t in r['tasks']), default=0.0) for r in runs], ' ms')}; "
        f"tasks > 50 ms: {[len(r['tasks']) for r in runs]}, caused by the widget: {[len(w) for w in widget]}, "
        f"longest {spread([max((t.duration for t in w), default=0.0) for w in widget], ' ms')} "
        "(target: none caused by the widget)"
    )
    loads = ", ".join(f"{r['load'][0]:.2f} -> {r['load'][1]:.2f}" for r in runs)
    print(f"load average (1 min) at the start and end of each run: {loads} (2 cores)")


if __name__ == "__main__":
    main()
