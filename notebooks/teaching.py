"""What the teaching notebooks share: checks that print what they prove, traces side by side, Pi's recorded traces,
and the figures, drawn from what the code does.

``check(claim, holds)`` is how a cell proves a claim: it asserts ``holds`` and prints ``✓ claim``. A regression then
fails the cell (and nbval) instead of being saved, and ``claims_check.py`` finds the printed line in the saved output
that ``CLAIMS.md`` cites.

The figures come back as PNG images (``IPython.display.Image``), so GitHub, nbviewer and ``jupyter nbconvert`` show
them; nbval does not compare images, only their one-line text. They need matplotlib (``pip install -e ".[lab]"``
installs it); the rest of this module does not.
"""

from __future__ import annotations

import asyncio
import difflib
import io
import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.display import Image

if TYPE_CHECKING:  # matplotlib is imported by the figures only: check() and press_stop() work without it
    from matplotlib.figure import Figure

__all__ = [
    "AFTER_AGENT_END",
    "PHASES",
    "check",
    "pi_trace",
    "press_stop",
    "retry_timeline_figure",
    "side_by_side",
    "signal_chain_figure",
    "state_machine_figure",
    "stop_paths_figure",
    "triage_figure",
]

TRACES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "pi-traces"


def check(claim: str, holds: object) -> None:
    """Assert that ``holds`` is true and print ``✓ claim``; else raise ``AssertionError: ✗ claim``."""
    if not holds:
        raise AssertionError(f"✗ {claim}")
    print(f"✓ {claim}")


# -- traces ---------------------------------------------------------------------------------------------------------
def pi_trace(scenario: str, recording: str = "agent", *, rename: Mapping[str, str] | None = None) -> list[str]:
    """The events Pi 0.83 emitted in ``scenario`` (``tests/fixtures/pi-traces/{recording}.json``, recorded from Pi's
    own code; see the README there), without the summary lines (``requests=2``, ``roles=uata``, ...). In the agent
    recording, the one scenario written in the session notation (``turn_end:assistant:error``, ``message_start:user:``)
    is brought to the agent notation ``EventRecorder()`` uses (``turn_end``, ``message_start:user``). ``rename``
    maps the scenario's tool names to the notebook's (``{"stop": "done"}``)."""
    labels: list[str] = json.loads((TRACES / f"{recording}.json").read_text())[scenario]
    events = [label for label in labels if "=" not in label.split(":")[0]]
    if recording == "agent":
        events = [label.rstrip(":") if not label.startswith("turn_end") else "turn_end" for label in events]
    for old, new in (rename or {}).items():
        events = [label.replace(f"tool_execution_end:{old}:", f"tool_execution_end:{new}:") for label in events]
    return events


def pi_summary(scenario: str, recording: str = "agent") -> dict[str, str]:
    """The summary lines of a recorded scenario: ``{"requests": "2", "last": "aborted", ...}``."""
    labels: list[str] = json.loads((TRACES / f"{recording}.json").read_text())[scenario]
    return dict(label.split("=", 1) for label in labels if "=" in label.split(":")[0])


def side_by_side(left: tuple[str, Sequence[str]], right: tuple[str, Sequence[str]], *, context: int = 1) -> None:
    """Print two traces in two columns, aligned, with the lines that differ marked: ``≠`` changed, ``+`` only on
    the right, ``-`` only on the left. Runs of equal lines longer than ``2 * context + 1`` are folded."""
    (left_title, a), (right_title, b) = left, right
    width = max(len(left_title), *(len(line) for line in a), 12) + 2
    rows: list[tuple[str, str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=list(a), b=list(b), autojunk=False).get_opcodes():
        if tag == "equal":
            same = [(" ", a[i], b[j]) for i, j in zip(range(i1, i2), range(j1, j2), strict=True)]
            if len(same) > 2 * context + 1 and i1 > 0 and i2 < len(a):
                rows += [*same[:context], _fold(len(same) - 2 * context), *same[-context:]]
            elif len(same) > context + 1 and i1 == 0 and i2 < len(a):
                rows += [_fold(len(same) - context), *same[-context:]]
            elif len(same) > context + 1 and i1 > 0 and i2 == len(a):
                rows += [*same[:context], _fold(len(same) - context)]
            else:
                rows += same
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            old = a[i1 + k] if i1 + k < i2 else ""
            new = b[j1 + k] if j1 + k < j2 else ""
            rows.append(("≠" if old and new else "-" if old else "+", old, new))
    print(f"{left_title:<{width}}   {right_title}")
    for mark, old, new in rows:
        print(f"{old:<{width}} {mark} {new}".rstrip())


def _fold(count: int) -> tuple[str, str, str]:
    return (" ", f"⋮ {count} lines the same", "⋮")


# -- Stop from another thread, as JupyterLab's Stop button does --------------------------------------------------
def press_stop(run: Any, *, after_s: float = 1.0) -> None:
    """Press Stop ``after_s`` seconds after the agent's ``python`` code starts, as JupyterLab's Stop does.

    JupyterLab's extension sends a Stop over its control comm, which the kernel reads on another thread (a subshell)
    because the agent's code blocks the main thread: that thread interrupts the code (``interrupt_running_code``)
    and hands ``run.abort()`` to the event loop. An executed notebook has no browser, so this does the same from a
    thread of its own."""
    from pi_notebook.kernel import add_python_listener, interrupt_running_code

    loop = asyncio.get_running_loop()
    started = threading.Event()
    remove = add_python_listener(lambda event: started.set() if event.kind == "start" else None)

    def stop() -> None:
        started.wait(30)
        remove()
        time.sleep(after_s)
        interrupt_running_code("Stopped by the user")
        loop.call_soon_threadsafe(run.abort)

    threading.Thread(target=stop, name="press-stop", daemon=True).start()


# -- drawing --------------------------------------------------------------------------------------------------------
BLUE, GREEN, ORANGE, RED, GREY, PURPLE = "#dbe9f6", "#dcefd9", "#fbe5cc", "#f6d6d5", "#ececec", "#e8def3"
EDGE = "#4d4d4d"


def _canvas(width: float, height: float, scale: float = 1.0) -> tuple[Figure, Any]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width * scale, height * scale), dpi=100)
    axes = figure.add_axes((0, 0, 1, 1))
    axes.set_xlim(0, width)
    axes.set_ylim(0, height)
    axes.axis("off")
    return figure, axes


def _box(
    axes: Any,
    x: float,
    y: float,
    text: str,
    color: str = BLUE,
    *,
    w: float = 2.6,
    h: float = 0.7,
    size: float = 9.5,
    style: str = "round,pad=0.02,rounding_size=0.12",
    weight: str = "normal",
) -> None:
    """A box centred on (x, y)."""
    from matplotlib.patches import FancyBboxPatch

    axes.add_patch(
        FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle=style, facecolor=color, edgecolor=EDGE, linewidth=1.0)
    )
    axes.text(x, y, text, ha="center", va="center", fontsize=size, wrap=False, weight=weight)


def _arrow(
    axes: Any,
    start: tuple[float, float],
    end: tuple[float, float],
    label: str = "",
    *,
    bend: float = 0.0,
    color: str = EDGE,
    dashed: bool = False,
    label_at: float = 0.5,
    label_dx: float = 0.0,
    label_dy: float = 0.0,
    size: float = 8.5,
) -> None:
    from matplotlib.patches import FancyArrowPatch

    axes.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle="-|>",
            mutation_scale=12,
            color=color,
            linewidth=1.1,
            linestyle="--" if dashed else "-",
            connectionstyle=f"arc3,rad={bend}",
            shrinkA=2,
            shrinkB=2,
        )
    )
    if label:  # on the curve: arc3's control point is rad * (dy, -dx) off the chord's middle (equal axes here)
        dx, dy = end[0] - start[0], end[1] - start[1]
        x = start[0] + dx * label_at + 0.5 * bend * dy + label_dx
        y = start[1] + dy * label_at - 0.5 * bend * dx + label_dy
        axes.text(
            x,
            y,
            label,
            ha="center",
            va="center",
            fontsize=size,
            color="#333333",
            bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.9},
        )


def _png(figure: Figure) -> Image:
    """The figure as a PNG, once :func:`layout_problems` finds none (a figure with a clipped or covered label is
    an error, not an image)."""
    problems = layout_problems(figure)
    if problems:
        raise ValueError("the figure's labels do not fit: " + "; ".join(problems))
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return Image(data=buffer.getvalue(), format="png")  # type: ignore[no-untyped-call]


def layout_problems(figure: Figure) -> list[str]:
    """Every text drawn that leaves the canvas, and every two texts that cover each other (tick labels of a hidden
    axis, or outside an axis' view, are not drawn, so they do not count)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    renderer = FigureCanvasAgg(figure).get_renderer()  # type: ignore[no-untyped-call]
    figure.draw(renderer)
    hidden: set[int] = set()
    for axes in figure.axes:
        for axis, (low, high) in ((axes.xaxis, axes.get_xlim()), (axes.yaxis, axes.get_ylim())):
            for label, at in zip(axis.get_ticklabels(), axis.get_ticklocs(), strict=False):
                if not (axes.axison and axis.get_visible() and min(low, high) <= at <= max(low, high)):
                    hidden.add(id(label))
    drawn = [
        (text.get_text(), text.get_window_extent(renderer))
        for text in figure.findobj(Text)
        if isinstance(text, Text) and text.get_visible() and text.get_text().strip() and id(text) not in hidden
    ]
    canvas = figure.bbox
    problems = [
        f"{label!r} leaves the canvas"
        for label, box in drawn
        if box.x0 < canvas.x0 - 0.5 or box.y0 < canvas.y0 - 0.5 or box.x1 > canvas.x1 + 0.5 or box.y1 > canvas.y1 + 0.5
    ]
    for (first, a), (second, b) in itertools.combinations(drawn, 2):
        if a.overlaps(b):
            problems.append(f"{first!r} covers {second!r}")
    return problems


def stop_paths_figure() -> Image:
    """Notebook 01's map: every way a run of the ``Agent`` ends (chapter 000's flowchart), each path labelled with
    the section of the notebook that runs it."""
    figure, ax = _canvas(12.5, 7.0)
    ax.text(
        0.2,
        6.85,
        "How a run of the Agent ends (§ = the section of this notebook that runs the path)",
        fontsize=11,
        weight="bold",
        va="top",
    )
    _box(ax, 4.0, 5.9, "a turn completes\n(the reply, its tool results, turn_end)", GREEN, w=3.6, h=0.8)
    _box(ax, 4.0, 4.6, "should_stop_after_turn()\nreturns true?", ORANGE, w=3.2, h=0.8)
    _box(ax, 4.0, 3.3, "tool calls to answer?\n(not every result terminate=True)", ORANGE, w=3.6, h=0.8)
    _box(ax, 4.0, 2.0, "steering, then follow-up,\nqueued?", ORANGE, w=3.2, h=0.8)
    _box(ax, 0.9, 4.6, "next turn", GREEN, w=1.4, h=0.6)
    _box(ax, 9.0, 2.0, "agent_end", RED, w=2.2, h=0.6, weight="bold")
    _box(ax, 7.6, 5.9, "the reply ends with\nstop_reason error / aborted", PURPLE, w=2.9, h=0.8, size=9)
    _box(
        ax,
        10.85,
        5.9,
        "the stream function or a loop\nhook raises (not a tool hook):\nthe Agent adds a synthetic\nfailing turn",
        PURPLE,
        w=2.9,
        h=1.15,
        size=9,
    )
    _box(ax, 9.0, 0.7, "listeners done, is_streaming false;\ncontinue_() may start a new run", GREY, w=4.0, h=0.8)
    _arrow(ax, (4.0, 5.5), (4.0, 5.0))
    _arrow(ax, (4.0, 4.2), (4.0, 3.7), "no", label_dx=0.25)
    _arrow(ax, (4.0, 2.9), (4.0, 2.4), "no", label_dx=0.25)
    _arrow(ax, (5.6, 4.6), (8.3, 2.3))
    ax.text(7.3, 3.75, "yes (§3):\nqueues not read", fontsize=8.5, ha="center")
    _arrow(ax, (2.2, 3.3), (1.1, 4.3))
    _arrow(ax, (2.4, 2.0), (0.7, 4.3), bend=-0.3)
    on_white = {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none"}  # over the curve
    ax.text(0.15, 3.35, "yes (§2 mixed batch, §5 a\ntool or a tool hook raised)", fontsize=8.5, bbox=on_white)
    ax.text(0.15, 2.15, "yes (§2: a\nfollow-up)", fontsize=8.5, ha="left")
    _arrow(ax, (5.6, 2.0), (7.9, 2.0), "no (§1, §2)", label_dy=0.2)
    _arrow(ax, (0.9, 4.9), (2.2, 5.9), bend=-0.3)
    _arrow(ax, (7.6, 5.5), (8.6, 2.3))
    ax.text(7.15, 4.6, "§4: no tools run,\nqueues not read", fontsize=8.5, ha="center")
    _arrow(ax, (10.85, 5.4), (9.4, 2.3))
    ax.text(10.9, 4.1, "§5: turn_end,\nagent_end", fontsize=8.5, ha="center")
    _arrow(ax, (9.0, 1.7), (9.0, 1.1), "§6", label_dx=0.25)
    return _png(figure)


PHASES: dict[str, tuple[str, ...]] = {
    "Idle": ("idle",),
    "Running": ("starting", "streaming", "running tool", "awaiting approval"),
    "Settling": ("retrying", "compacting"),
    "Settled": ("settled", "aborted", "error"),
}
"""Chapter 002's four states, and the run states of ``pi_notebook.notebook.widget._protocol.RunStatus`` in each."""

AFTER_AGENT_END = "agent_end"
"""Where a run's ``agent_end`` came, in a list of its states: Settling begins there. The run state does not change
at ``agent_end`` (it stays ``streaming`` until the operation settles or a retry or compaction begins), so the state
machine figure draws it as a box of its own in the Settling column."""


_STATE_AT = {
    "idle": (1.2, 3.3),
    "starting": (4.4, 5.0),
    "streaming": (4.4, 3.3),
    "running tool": (4.4, 1.95),
    "awaiting approval": (4.4, 0.8),
    "retrying": (8.1, 5.0),
    AFTER_AGENT_END: (8.1, 3.3),
    "compacting": (8.1, 1.6),
    "settled": (11.7, 4.2),
    "aborted": (11.7, 3.3),
    "error": (11.7, 2.4),
}
_STATE_W, _STATE_H = 2.0, 0.55


def _edge_point(centre: tuple[float, float], towards: tuple[float, float]) -> tuple[float, float]:
    """Where the line from a state box's centre towards ``towards`` leaves the box."""
    (x, y), (tx, ty) = centre, towards
    dx, dy = tx - x, ty - y
    scale = min(_STATE_W / 2 / abs(dx) if dx else float("inf"), _STATE_H / 2 / abs(dy) if dy else float("inf"))
    return x + dx * scale, y + dy * scale


def state_machine_figure(transitions: Mapping[tuple[str, str], int], run_states: Iterable[str]) -> Image:
    """Chapter 002's state machine, drawn from the run states the code declares (``run_states``, placed in their
    phase by :data:`PHASES`), the moment of ``agent_end`` (:data:`AFTER_AGENT_END`, opening Settling) and the
    transitions runs were seen to make (``transitions``: (from, to) -> count)."""
    states = list(run_states)
    unplaced = sorted(set(states) - set(_STATE_AT))
    if unplaced:
        raise ValueError(f"run states with no place in the figure: {unplaced}")
    figure, ax = _canvas(13.0, 6.6)
    ax.text(
        0.2,
        6.45,
        "A run's states (RunStatus) in chapter 002's four phases; arrows: the changes this notebook's "
        "runs made (× how often)",
        fontsize=11,
        weight="bold",
        va="top",
    )
    colors = {"Idle": GREY, "Running": GREEN, "Settling": ORANGE, "Settled": BLUE}
    for phase, members in PHASES.items():
        xs = [_STATE_AT[state][0] for state in members]
        ax.text(sum(xs) / len(xs), 5.75, phase, ha="center", fontsize=12, weight="bold")
        for state in members:
            if state in states:
                _box(ax, *_STATE_AT[state], state, colors[phase], w=_STATE_W, h=_STATE_H, size=10)
    x, y = _STATE_AT[AFTER_AGENT_END]
    _box(ax, x, y, "agent_end", colors["Settling"], w=_STATE_W, h=_STATE_H, size=10, weight="bold")
    for (source, target), count in sorted(transitions.items()):
        a, b = _STATE_AT[source], _STATE_AT[target]
        short = abs(a[0] - b[0]) + abs(a[1] - b[1]) < 2  # two arcs between close boxes need room for their labels
        _arrow(ax, _edge_point(a, b), _edge_point(b, a), f"×{count}", bend=0.5 if short else 0.18, size=8)
    ax.text(
        0.2,
        0.25,
        "Settling: from agent_end on (a run's state stays streaming there); a retry or a compaction goes back to "
        "Running. Settled: agent_settled was emitted; a run ends in one of these three states.",
        fontsize=9,
        color="#333333",
    )
    return _png(figure)


def signal_chain_figure(reached: Mapping[str, tuple[bool, bool]]) -> Image:
    """Chapter 003's figure 5.6-1, from a real run: Stop aborts the run's one signal, which reached every place in
    ``reached`` (place -> (the same object as the stream function's, aborted)); the aborted reply ends the loop."""
    figure, ax = _canvas(12.5, 5.6)
    ax.text(
        0.2,
        5.45,
        "Where one Stop went in the run above (from the signals the run's code received)",
        fontsize=11,
        weight="bold",
        va="top",
    )
    _box(ax, 1.4, 2.8, "Stop\nagent.abort()", RED, w=2.0, h=0.8, weight="bold")
    _box(ax, 4.2, 2.8, "the run's\nAbortController\n(a new one per run)", ORANGE, w=2.4, h=1.1)
    _arrow(ax, (2.4, 2.8), (3.0, 2.8))
    places = list(reached)
    for k, place in enumerate(places):
        y = 4.4 - k * (3.2 / max(1, len(places) - 1))
        same, aborted = reached[place]
        marks = f"{'same signal ✓' if same else 'another signal ✗'}   {'aborted ✓' if aborted else 'not aborted ✗'}"
        _box(ax, 7.6, y, f"{place}\n{marks}", GREEN if same and aborted else RED, w=3.3, h=0.7, size=9)
        _arrow(ax, (5.4, 2.8), (5.95, y), bend=0.0)
    _box(
        ax,
        11.0,
        3.5,
        "work in progress stops:\nthe stream ends, the tool\nraises, hooks see it",
        GREY,
        w=2.6,
        h=1.0,
        size=9,
    )
    _box(ax, 11.0, 1.7, "the reply ends\nstop_reason='aborted':\nthe loop exits on it", PURPLE, w=2.6, h=1.0, size=9)
    ys = [4.4 - k * (3.2 / max(1, len(places) - 1)) for k in range(len(places))]
    ax.plot([9.35, 9.35], [min(ys), max(ys)], color=EDGE, linewidth=1.1)  # a bracket: every place
    for y in ys:
        ax.plot([9.25, 9.35], [y, y], color=EDGE, linewidth=1.1)
    _arrow(ax, (9.35, 3.5), (9.7, 3.5))
    _arrow(ax, (11.0, 3.0), (11.0, 2.2))
    ax.text(
        0.2,
        0.3,
        "The signal stops the work in progress; the aborted message stops the loop.",
        fontsize=10,
        style="italic",
    )
    return _png(figure)


def triage_figure(routes: Mapping[str, Sequence[str]]) -> Image:
    """Chapter 003's figure 5.6-2: where a failed reply goes, with the examples the classifier sent each way
    (``routes``: "compact", "retry", "give up" -> error texts)."""
    figure, ax = _canvas(13.0, 6.4)
    ax.text(
        0.2,
        6.25,
        "What the session does with a failed reply (each example placed by the classifier itself)",
        fontsize=11,
        weight="bold",
        va="top",
    )
    _box(ax, 2.2, 4.9, "the reply ended with\nstop_reason='error'", PURPLE, w=2.8, h=0.8)
    _box(ax, 2.2, 3.3, "is_context_overflow?\n(asked first)", ORANGE, w=2.8, h=0.8)
    _box(ax, 2.2, 1.5, "is_retryable_assistant_error?", ORANGE, w=3.0, h=0.7)
    _arrow(ax, (2.2, 4.5), (2.2, 3.7))
    _arrow(ax, (2.2, 2.9), (2.2, 1.85), "no", label_dx=0.25)
    exits = {
        "compact": (8.7, 4.7, "compact, then retry the turn once", BLUE),
        "retry": (8.7, 2.75, "retry the turn after a backoff (layer 3)", GREEN),
        "give up": (8.7, 0.85, "give up: the error is the operation's last word", RED),
    }
    for key, (x, y, title, color) in exits.items():
        examples = routes.get(key, [])
        lines = [title, *(f"• {_clip(text, 70)}" for text in examples)]
        _box(ax, x, y, "\n".join(lines), color, w=7.6, h=0.3 + 0.28 * len(lines), size=10)
    _arrow(ax, (3.6, 3.3), (4.9, 4.6), "yes", label_dy=0.15)
    _arrow(ax, (3.7, 1.55), (4.9, 2.6), "yes", label_dy=0.1)
    _arrow(ax, (3.7, 1.4), (4.9, 0.9), "no", label_dy=-0.12)
    return _png(figure)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def retry_timeline_figure(events: Sequence[tuple[float, str]], requests: Sequence[tuple[float, int]]) -> Image:
    """Chapter 003's figure 5.6-3 from a real run: ``events`` ((seconds, trace label)) of one session operation and
    ``requests`` ((seconds, HTTP status answered)) at the server, drawn in four lanes: the server, the agent's runs
    (``agent_start`` to ``agent_end``), the session's retry backoffs, and the replies written to the session file."""
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyBboxPatch

    end = max([t for t, _ in events] + [t for t, _ in requests])
    figure = Figure(figsize=(12.5, 4.4), dpi=100)
    ax = figure.add_axes((0.13, 0.2, 0.84, 0.68))
    ax.set_xlim(-0.03 * end, end * 1.15)
    ax.set_ylim(-0.7, 3.6)
    ax.set_yticks(
        [0, 1, 2, 3],
        ["session file\n(message_end)", "session\n(retry backoff)", "agent\n(one run each)", "HTTP server"],
    )
    ax.set_xlabel("seconds since session.prompt()")
    ax.set_title(
        "A turn retried twice, as it happened: two 503s, then an answer", fontsize=11, weight="bold", loc="left"
    )
    for spine in ("top", "right", "left"):
        ax.spines[spine].set_visible(False)
    ax.tick_params(axis="y", length=0)
    for t, status in requests:
        ax.plot([t], [3], marker="v", markersize=11, color="#b03030" if status >= 400 else "#2f7d32")
        ax.text(t, 3.28, str(status), ha="center", fontsize=9)
    started: float | None = None
    retry_at: tuple[float, str] | None = None
    for t, label in events:
        if label == "agent_start":
            started = t
            if retry_at is not None:
                ax.add_patch(
                    FancyBboxPatch(
                        (retry_at[0], 0.8),
                        t - retry_at[0],
                        0.4,
                        boxstyle="square,pad=0",
                        facecolor=ORANGE,
                        edgecolor=EDGE,
                        linewidth=0.8,
                    )
                )
                ax.text(
                    (retry_at[0] + t) / 2,
                    1.38,
                    f"auto_retry_start {retry_at[1]}: wait {t - retry_at[0]:.2f} s",
                    ha="center",
                    fontsize=8.5,
                )
                retry_at = None
        elif label.startswith("agent_end") and started is not None:
            will_retry = label.endswith("true")
            ax.add_patch(
                FancyBboxPatch(
                    (started, 1.8),
                    max(t - started, end * 0.004),
                    0.4,
                    boxstyle="square,pad=0",
                    facecolor=RED if will_retry else GREEN,
                    edgecolor=EDGE,
                    linewidth=0.8,
                )
            )
            late = started > end * 0.6  # a label near the right edge ends at its box instead of starting there
            ax.text(
                t if late else started,
                2.38,
                f"agent_end will_retry={str(will_retry).lower()}",
                fontsize=8.5,
                ha="right" if late else "left",
            )
            started = None
        elif label.startswith("auto_retry_start"):
            retry_at = (t, label.split("=")[1])
        elif label.startswith("message_end:assistant"):
            reason = label.split(":")[-1]
            ax.plot([t], [0], marker="s", markersize=8, color="#7a5fa6")
            edge = "left" if t < end * 0.1 else "right" if t > end * 0.9 else "center"  # clear of the lane names
            ax.text(t, -0.38, f"assistant ({reason})", ha=edge, fontsize=8.5, color="#4b3a6b")
        elif label.startswith("agent_settled"):  # a session event: marked in the session's lane only
            ax.plot([t, t], [0.65, 1.35], color=EDGE, lw=1, ls="--")
            ax.text(t + end * 0.01, 1.0, label.replace(":", "\n"), fontsize=8.5, va="center")
    figure.text(
        0.13,
        0.02,
        "Each failed reply reaches message_end, so it is in the session file; then the session "
        "takes it out of the transcript,\nwaits, and runs the turn again with agent.continue_().",
        fontsize=9,
        color="#333333",
    )
    return _png(figure)


def count_transitions(histories: Iterable[Sequence[str]]) -> Counter[tuple[str, str]]:
    """(from, to) -> how often, over several runs' state histories (each starting from ``idle``)."""
    counts: Counter[tuple[str, str]] = Counter()
    for history in histories:
        states = ["idle", *history]
        counts.update(itertools.pairwise(states))
    return counts
