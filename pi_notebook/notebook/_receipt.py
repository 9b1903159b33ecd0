"""A run's receipt: what it changed, and what a Stop cut short.

When a run that changed something, or was stopped, settles, its event log ends with ``receipt`` lines, which its
static copy (``await run``'s report, the saved notebook) shows too; ``await run`` returns the same as data
(``RunReport.receipt``, a :class:`Receipt`, for every run):

- the notebook's cells the agent inserted, edited, deleted and ran (by id), from what the cell tools recorded
  (``pi_notebook.kernel.CellChanges``);
- the cell a stop interrupted (and why), and the cells the agent asked to run that never ran because the run was
  stopped first (its ``cell_run`` calls that never started, or ended before the code did);
- the files it wrote (``write``) and edited (``edit``), each once, from the calls that succeeded;
- what the stop killed or interrupted besides cells: ``bash`` commands whose process tree was killed (aborted or
  timed out) and ``python`` code that was interrupted;
- what the run cost so far: its replies' tokens and cost, worded as the widget's usage line words them
  (``_spent``: every input token, the cached share, ``~`` and "usage estimated" for estimated counts, "cost unknown"
  for a model without prices).

Nothing here is sent to the model; the lines are the user's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..agent import AgentMessage, ToolExecutionEndEvent, ToolExecutionStartEvent
from ..ai import AssistantMessage, Model, TextContent, ToolCall
from ..kernel import CellChanges
from ..session import SessionEvent
from ._spent import Spent

__all__ = ["Receipt", "build_receipt"]

MAX_LISTED = 12
"""A receipt line names at most this many cells or files, then counts the rest."""


@dataclass(frozen=True, slots=True)
class Receipt:
    """What a run changed and what a stop cut short (see the module docstring). Ids are nbformat cell ids; paths
    are as the agent gave them."""

    aborted: bool = False
    cells_inserted: list[str] = field(default_factory=list)
    cells_edited: list[str] = field(default_factory=list)
    cells_deleted: list[str] = field(default_factory=list)
    cells_run: list[str] = field(default_factory=list)
    cells_interrupted: list[str] = field(default_factory=list)
    interrupted_because: str = ""
    cells_never_run: list[str] = field(default_factory=list)
    files_written: list[str] = field(default_factory=list)
    files_edited: list[str] = field(default_factory=list)
    commands_killed: list[str] = field(default_factory=list)
    python_interrupted: int = 0
    input_tokens: int = 0
    """Every input token: plain, read from the prompt cache and written to it (as the usage line counts them)."""
    output_tokens: int = 0
    cost_usd: float = 0.0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_saved_usd: float = 0.0
    usage_estimated: bool = False
    """Some count was estimated (the server did not report all of it)."""
    priced: bool = True
    """The model has prices (else ``cost_usd`` 0 means "unknown", not "free")."""

    @property
    def spent(self) -> Spent:
        return Spent(
            input=self.input_tokens,
            cache_read=self.cache_read_tokens,
            cache_write=self.cache_write_tokens,
            output=self.output_tokens,
            cost=self.cost_usd,
            saved=self.cache_saved_usd,
            estimated=self.usage_estimated,
            priced=self.priced,
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def changed(self) -> bool:
        """The run changed or cut short something (cells, files, commands, code)."""
        return any(
            (
                self.cells_inserted,
                self.cells_edited,
                self.cells_deleted,
                self.cells_run,
                self.cells_interrupted,
                self.cells_never_run,
                self.files_written,
                self.files_edited,
                self.commands_killed,
                self.python_interrupted,
            )
        )

    def lines(self) -> list[str]:
        """The receipt as event-log lines: one per kind of change, then the cost; none for a run that was not
        stopped and changed nothing (its cost is on the widget's usage line)."""
        if not self.changed and not self.aborted:
            return []
        lines = []
        cells = [
            _named("inserted", self.cells_inserted),
            _named("edited", self.cells_edited),
            _named("deleted", self.cells_deleted),
            _named("ran", self.cells_run),
        ]
        if any(cells):
            lines.append("cells " + "; ".join(part for part in cells if part))
        cut = [
            _named("interrupted", self.cells_interrupted)
            + (f" ({self.interrupted_because})" if self.interrupted_because else ""),
            _named("never ran", self.cells_never_run),
        ]
        if any(cut):
            lines.append("stopped: cells " + "; ".join(part for part in cut if part))
        files = [_named("written", self.files_written), _named("edited", self.files_edited)]
        if any(files):
            lines.append("files " + "; ".join(part for part in files if part))
        killed = [_named("killed", [f"`{command}`" for command in self.commands_killed], quote=False)]
        if self.python_interrupted:
            killed.append(f"python code interrupted ({self.python_interrupted})")
        if any(killed):
            lines.append("stopped: " + "; ".join(part for part in killed if part))
        lines.append("spent " + " · ".join(self.spent.parts()))
        return lines


def _named(verb: str, names: Sequence[str], *, quote: bool = True) -> str:
    if not names:
        return ""
    shown = [f"`{name}`" if quote else name for name in names[:MAX_LISTED]]
    more = f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else ""
    return f"{verb} {', '.join(shown)}{more}"


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _text(result: Any) -> str:
    return "\n".join(block.text for block in getattr(result, "content", ()) if isinstance(block, TextContent))


def _calls(messages: Sequence[AgentMessage]) -> list[ToolCall]:
    replies = [message for message in messages if isinstance(message, AssistantMessage)]
    return [block for message in replies for block in message.content if isinstance(block, ToolCall)]


def build_receipt(
    events: Sequence[SessionEvent],
    messages: Sequence[AgentMessage],
    cells: CellChanges | None,
    *,
    aborted: bool,
    model: Model | None = None,
) -> Receipt:
    """The receipt of a run from its events, the messages it added (replies made with ``model``: its prices say
    what caching saved, and whether a cost is known) and what its cell tools recorded."""
    started: dict[str, Mapping[str, Any]] = {}
    ended: dict[str, ToolExecutionEndEvent] = {}
    for event in events:
        if isinstance(event, ToolExecutionStartEvent):
            started[event.tool_call_id] = event.args
        elif isinstance(event, ToolExecutionEndEvent):
            ended[event.tool_call_id] = event
    changes = cells.items if cells is not None else []
    interrupted = [change for change in changes if change.kind == "interrupted"]
    files = _files(started, ended)
    replies = [m for m in messages if isinstance(m, AssistantMessage)]
    spent = Spent.of(replies, model or _UNKNOWN)
    return Receipt(
        aborted=aborted,
        cells_inserted=[c.cell_id for c in changes if c.kind == "inserted"],
        cells_edited=_unique(c.cell_id for c in changes if c.kind == "edited"),
        cells_deleted=[c.cell_id for c in changes if c.kind == "deleted"],
        cells_run=_unique(c.cell_id for c in changes if c.kind == "ran"),
        cells_interrupted=[c.cell_id for c in interrupted],
        interrupted_because=interrupted[-1].reason if interrupted else "",
        cells_never_run=_never_run(messages, cells, aborted),
        files_written=files["write"],
        files_edited=files["edit"],
        commands_killed=_killed(started, ended),
        python_interrupted=sum(1 for call, end in ended.items() if _python_interrupted(end)),
        input_tokens=spent.input,
        output_tokens=spent.output,
        cost_usd=spent.cost,
        cache_read_tokens=spent.cache_read,
        cache_write_tokens=spent.cache_write,
        cache_saved_usd=spent.saved,
        usage_estimated=spent.estimated,
        priced=spent.priced if model is not None else True,
    )


_UNKNOWN = Model(id="", api="", provider="")
"""Stands for the model when none is given: no prices, so nothing was saved by caching."""


def _never_run(messages: Sequence[AgentMessage], cells: CellChanges | None, aborted: bool) -> list[str]:
    """After a stop: the cells of ``cell_run`` calls that neither ran nor were interrupted."""
    if not aborted or cells is None:
        return []
    done = cells.calls()
    wanted = [call for call in _calls(messages) if call.name == "cell_run" and call.id not in done]
    return [str(call.arguments.get("cell_id")) for call in wanted if isinstance(call.arguments, Mapping)]


def _files(
    started: Mapping[str, Mapping[str, Any]], ended: Mapping[str, ToolExecutionEndEvent]
) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {"write": [], "edit": []}
    for call, end in ended.items():
        path = started.get(call, {}).get("path")
        if end.tool_name in found and not end.is_error and isinstance(path, str):
            found[end.tool_name].append(path)
    return {name: _unique(paths) for name, paths in found.items()}


_KILLED = ("Command aborted", "Command timed out after")


def _killed(started: Mapping[str, Mapping[str, Any]], ended: Mapping[str, ToolExecutionEndEvent]) -> list[str]:
    """``bash`` commands whose process tree was killed: they ended aborted or timed out."""
    killed = []
    for call, end in ended.items():
        last = _text(end.result).rstrip().rsplit("\n", 1)[-1]
        command = started.get(call, {}).get("command")
        if end.tool_name == "bash" and end.is_error and last.startswith(_KILLED) and isinstance(command, str):
            killed.append(command if len(command) <= 60 else command[:59] + "…")
    return killed


def _python_interrupted(end: ToolExecutionEndEvent) -> bool:
    last = _text(end.result).rstrip().rsplit("\n", 1)[-1]
    return end.tool_name == "python" and end.is_error and last.startswith(("Interrupted", "Python code timed out"))
