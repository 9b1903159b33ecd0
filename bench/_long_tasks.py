"""Who made each long main-thread task, from a Chromium trace (CDP tracing with V8's CPU sampler on).

A task is one ``RunTask`` on the page's renderer main thread. Its time is split into:

``widget``     JavaScript samples whose stack holds a frame of the run widget's module (anywidget imports it from
               a ``blob:`` URL; marked and DOMPurify are bundled in it), so style and layout the widget forces
               (reading ``scrollHeight`` after a change) count as the widget's;
``lab``        every other JavaScript sample: JupyterLab, Lumino, ipywidgets, anywidget, the comm's handling up to
               the widget's own handler;
``gc``         samples in V8's garbage collector (Blink's objects are in V8's heap, so DOM garbage is here too);
``rendering``  the frame's own style, layout, paint and commit, outside any script: the widget's when its
               animation-frame callback ran in this task (the DOM it changed is laid out there, with whatever
               else changed on the page), else the page's;
``other``      the rest (HTML parsing outside script, input dispatch, idle gaps between samples).

Each task also has its CPU time (the trace's thread duration, ``tdur``): on a shared machine the rest of its wall
time is the main thread waiting for a core, which no change to the widget can remove.

A task is *caused by the widget* when the widget's share (its script, plus the rendering of a frame it painted
in) is the largest of the four: widget, JupyterLab, GC, the page's own rendering.
"""

from __future__ import annotations

import bisect
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

CATEGORIES = [
    "devtools.timeline",
    "disabled-by-default-devtools.timeline",
    "v8.execute",
    "disabled-by-default-v8.cpu_profiler",
    "blink.user_timing",
]
SYNC_MARK = "bench-sync"  # a performance.mark the bench makes: ties the trace's clock to performance.now()

SCRIPT = {"FunctionCall", "EvaluateScript", "v8.run", "TimerFire", "FireAnimationFrame", "EventDispatch",
          "RunMicrotasks", "FireIdleCallback", "v8.callFunction"}  # fmt: skip
RENDERING = {"UpdateLayoutTree", "Layout", "PrePaint", "Paint", "Layerize", "Commit", "UpdateLayer", "HitTest",
             "IntersectionObserverController::computeIntersections", "ResizeObserverController::broadcast"}  # fmt: skip


@dataclass
class Task:
    start: float  # ms, the page's performance.now()
    duration: float  # ms
    shares: Counter[str] = field(default_factory=Counter)  # ms per share (see the module docstring)
    widget_painted: bool = False
    cpu: float = 0.0  # ms the thread ran (the trace's thread duration): the rest of ``duration`` it waited for a core

    @property
    def widget_ms(self) -> float:
        return self.shares["widget"] + (self.shares["rendering"] if self.widget_painted else 0.0)

    @property
    def cause(self) -> str:
        candidates = {
            "widget": self.widget_ms,
            "lab": self.shares["lab"],
            "gc": self.shares["gc"],
            "page": 0.0 if self.widget_painted else self.shares["rendering"],
        }
        return max(candidates, key=lambda name: candidates[name])

    def describe(self) -> str:
        parts = [f"{name} {self.shares[name]:.0f}" for name in ("widget", "lab", "gc", "rendering", "other")]
        painted = ", widget painted" if self.widget_painted else ""
        return f"{self.duration:.0f} ms (cpu {self.cpu:.0f}) = {' + '.join(parts)}{painted} -> {self.cause}"


class Trace:
    """The page's renderer main thread in a trace, with its CPU samples."""

    def __init__(self, data: bytes) -> None:
        loaded = json.loads(data)
        events: list[dict[str, Any]] = loaded["traceEvents"] if isinstance(loaded, dict) else loaded
        sync = next(e for e in events if e.get("name") == SYNC_MARK and e.get("cat") == "blink.user_timing")
        self.pid, self.tid = sync["pid"], sync["tid"]
        self.offset = sync["ts"] / 1000 - sync["args"]["data"]["startTime"]  # trace ms - page ms
        self.events = sorted(
            (e for e in events if e.get("ph") == "X" and e["pid"] == self.pid and e["tid"] == self.tid),
            key=lambda e: (e["ts"], -e.get("dur", 0)),
        )
        self.nodes: dict[int, dict[str, Any]] = {}
        self.samples: list[tuple[float, int]] = []  # (trace µs, node id)
        self._load_samples(events)
        self.sample_times = [t for t, _ in self.samples]
        self._kinds: dict[int, str] = {}

    def _load_samples(self, events: list[dict[str, Any]]) -> None:
        profile = next(
            e for e in events if e.get("name") == "Profile" and e["pid"] == self.pid and e["tid"] == self.tid
        )
        t = float(profile["args"]["data"]["startTime"])
        for e in events:
            if e.get("name") != "ProfileChunk" or e.get("id") != profile["id"] or e["pid"] != self.pid:
                continue
            data = e["args"]["data"]
            profile_data = data.get("cpuProfile", {})
            for node in profile_data.get("nodes", []):
                self.nodes[node["id"]] = node
            for node_id, delta in zip(profile_data.get("samples", []), data.get("timeDeltas", []), strict=True):
                t += delta
                self.samples.append((t, node_id))

    def kind(self, node_id: int) -> str:
        """widget, lab, gc or native (a sample outside script) for a sampled stack."""
        if node_id in self._kinds:
            return self._kinds[node_id]
        node = self.nodes[node_id]
        frame = node["callFrame"]
        name, url = frame.get("functionName", ""), frame.get("url", "")
        if name == "(garbage collector)":
            kind = "gc"
        elif name in ("(program)", "(idle)", "(root)"):
            kind = "native"
        elif url.startswith("blob:"):
            kind = "widget"
        else:
            parent = node.get("parent")
            kind = "lab" if parent is None else self.kind(parent)
            kind = "lab" if kind == "native" else kind
        self._kinds[node_id] = kind
        return kind

    def long_tasks(self, longer_than: float, start: float, end: float, paints: list[float]) -> list[Task]:
        """Main-thread tasks over ``longer_than`` ms that started between ``start`` and ``end`` (page ms);
        ``paints`` are the start times of the widget's animation-frame callbacks (page ms)."""
        tasks = []
        paints = sorted(paints)
        for event in self.events:
            if event["name"] != "RunTask" or event.get("dur", 0) <= longer_than * 1000:
                continue
            page_start = event["ts"] / 1000 - self.offset
            if start <= page_start <= end:
                task = self._attribute(event, page_start)
                task.widget_painted = _painted_in(paints, page_start, task.duration)
                tasks.append(task)
        return tasks

    def frame_cpu(self, start: float, end: float, paints: list[float]) -> list[float]:
        """CPU ms (thread duration) of each main-thread task between ``start`` and ``end`` (page ms) in which one of
        the widget's animation-frame callbacks (``paints``, page ms) ran: what its frames cost, waiting aside."""
        paints = sorted(paints)
        costs = []
        for event in self.events:
            if event["name"] != "RunTask":
                continue
            page_start = event["ts"] / 1000 - self.offset
            if start <= page_start <= end and _painted_in(paints, page_start, event["dur"] / 1000):
                costs.append(event.get("tdur", 0) / 1000)
        return costs

    def _attribute(self, task: dict[str, Any], page_start: float) -> Task:
        begin, end = task["ts"], task["ts"] + task["dur"]
        result = Task(page_start, task["dur"] / 1000, cpu=task.get("tdur", 0) / 1000)
        low, high = bisect.bisect_left(self.sample_times, begin), bisect.bisect_right(self.sample_times, end)
        for index in range(low, high):
            following = self.samples[index + 1][0] if index + 1 < len(self.samples) else end
            kind = self.kind(self.samples[index][1])
            if kind != "native":
                result.shares[kind] += (min(following, end) - self.samples[index][0]) / 1000
        inside = self.events[bisect.bisect_right(self.events, begin, key=lambda e: e["ts"]) :]
        script_until = begin
        for event in inside:
            if event["ts"] >= end:
                break
            stop = event["ts"] + event.get("dur", 0)
            if event["name"] in SCRIPT:
                script_until = max(script_until, stop)
            elif event["name"] in RENDERING and event["ts"] >= script_until:
                result.shares["rendering"] += event.get("dur", 0) / 1000
                script_until = stop  # skip the phases nested in this one
        result.shares["other"] = max(0.0, result.duration - sum(result.shares.values()))
        return result


def _painted_in(paints: list[float], start: float, duration: float) -> bool:
    """One of the widget's animation-frame callbacks (``paints``, sorted page ms) started within the task."""
    first = bisect.bisect_left(paints, start)
    return first < len(paints) and paints[first] <= start + duration
