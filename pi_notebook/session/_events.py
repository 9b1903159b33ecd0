"""Session events: every agent event (``agent_end`` gains ``will_retry``) plus the host-level ones. This is the one
import point for every event a session emits: the agent's own are re-exported here.

``agent_settled`` is the one to wait for: nothing will continue automatically after it (no retry,
compaction or queued continuation), and it comes exactly once per session operation, after the session is
idle. ``agent_end`` only ends one low-level run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from ..agent import AgentEndEvent as _AgentEnd
from ..agent import (
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from ._branch_summary import BranchSummaryMessage
from ._summary import CompactionSummaryMessage

__all__ = [
    "AgentEndEvent",
    "AgentSettledEvent",
    "AgentStartEvent",
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "BranchSummaryEndEvent",
    "BranchSummaryStartEvent",
    "BudgetExceededEvent",
    "CompactionEndEvent",
    "CompactionReason",
    "CompactionStartEvent",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "QueueUpdateEvent",
    "SessionEvent",
    "SessionListener",
    "SessionTreeEvent",
    "SessionWriteFailedEvent",
    "SummarizationRetryAttemptStartEvent",
    "SummarizationRetryFinishedEvent",
    "SummarizationRetryScheduledEvent",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "TurnEndEvent",
    "TurnStartEvent",
]

CompactionReason: TypeAlias = Literal["manual", "threshold", "overflow"]


@dataclass(slots=True)
class AgentEndEvent(_AgentEnd):
    """``agent_end`` as the session reports it: ``will_retry`` says an automatic retry follows."""

    will_retry: bool = False


@dataclass(slots=True)
class AgentSettledEvent:
    """Nothing continues automatically any more. ``aborted``: the operation was stopped (abort, budget or
    turn timeout) rather than finishing on its own."""

    aborted: bool
    type: Literal["agent_settled"] = field(default="agent_settled", init=False)


@dataclass(slots=True)
class QueueUpdateEvent:
    """The texts waiting in the steering and follow-up queues, after a change."""

    steering: list[str]
    follow_up: list[str]
    type: Literal["queue_update"] = field(default="queue_update", init=False)


@dataclass(slots=True)
class AutoRetryStartEvent:
    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str
    type: Literal["auto_retry_start"] = field(default="auto_retry_start", init=False)


@dataclass(slots=True)
class AutoRetryEndEvent:
    success: bool
    attempt: int
    final_error: str | None = None
    type: Literal["auto_retry_end"] = field(default="auto_retry_end", init=False)


@dataclass(slots=True)
class CompactionStartEvent:
    reason: CompactionReason
    type: Literal["compaction_start"] = field(default="compaction_start", init=False)


@dataclass(slots=True)
class CompactionEndEvent:
    reason: CompactionReason
    result: CompactionSummaryMessage | None = None
    aborted: bool = False
    will_retry: bool = False
    error_message: str | None = None
    type: Literal["compaction_end"] = field(default="compaction_end", init=False)


@dataclass(slots=True)
class SummarizationRetryScheduledEvent:
    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str
    type: Literal["summarization_retry_scheduled"] = field(default="summarization_retry_scheduled", init=False)


@dataclass(slots=True)
class SummarizationRetryAttemptStartEvent:
    """A summary request starts (Pi's ``{source: "compaction", reason}`` or ``{source: "branchSummary"}``, whose
    ``reason`` is ``None``)."""

    reason: CompactionReason | None = None
    source: Literal["compaction", "branchSummary"] = "compaction"
    type: Literal["summarization_retry_attempt_start"] = field(default="summarization_retry_attempt_start", init=False)


@dataclass(slots=True)
class SummarizationRetryFinishedEvent:
    type: Literal["summarization_retry_finished"] = field(default="summarization_retry_finished", init=False)


@dataclass(slots=True)
class BranchSummaryStartEvent:
    """The session goes to another point of its tree and summarises the branch it leaves (``entries`` of it, from
    ``old_leaf_id`` back to where the branches meet); ``abort()`` stops it."""

    target_id: str
    old_leaf_id: str | None
    entries: int
    type: Literal["branch_summary_start"] = field(default="branch_summary_start", init=False)


@dataclass(slots=True)
class BranchSummaryEndEvent:
    """The branch summary is written (``result``), was stopped (``aborted``: the leaf did not move) or failed
    (``error_message``: the leaf did not move)."""

    result: BranchSummaryMessage | None = None
    aborted: bool = False
    error_message: str | None = None
    type: Literal["branch_summary_end"] = field(default="branch_summary_end", init=False)


@dataclass(slots=True)
class SessionTreeEvent:
    """The leaf moved (Pi's ``session_tree``): the conversation continues from ``new_leaf_id`` (``None``: from the
    start); ``summary_entry_id`` is the branch summary written there, if one was."""

    new_leaf_id: str | None
    old_leaf_id: str | None
    summary_entry_id: str | None = None
    type: Literal["session_tree"] = field(default="session_tree", init=False)


@dataclass(slots=True)
class BudgetExceededEvent:
    """A run budget or the turn timeout was exceeded; the run is being aborted. ``kind`` is one of
    ``wall_time``, ``turns``, ``input_tokens``, ``output_tokens``, ``cost_usd``, ``turn_time``."""

    kind: str
    limit: float
    used: float
    type: Literal["budget_exceeded"] = field(default="budget_exceeded", init=False)

    @property
    def reason(self) -> str:
        unit = {"wall_time": " ms", "turn_time": " ms", "cost_usd": " USD"}.get(self.kind, "")
        what = "Turn timed out" if self.kind == "turn_time" else f"Run budget exceeded ({self.kind})"
        return f"{what}: {_num(self.used)}{unit} used, limit {_num(self.limit)}{unit}"


@dataclass(slots=True)
class SessionWriteFailedEvent:
    """Writing the session file failed (disk full, file-size limit, I/O error); the run goes on. Nothing
    already in the file is lost (a partly written line is removed). ``unwritten`` entries are in memory but
    not in the file; they are written with the next entry, unless ``final``: the store was closing, so they
    never will be."""

    path: str
    error_message: str
    unwritten: int
    final: bool = False
    type: Literal["session_write_failed"] = field(default="session_write_failed", init=False)

    @property
    def reason(self) -> str:
        what = f"Could not write session file {self.path}: {self.error_message}"
        entries = f"{self.unwritten} entr{'y' if self.unwritten == 1 else 'ies'}"
        if self.final and self.unwritten:
            return f"{what}; {entries} not written (store closed)"
        if self.unwritten:
            return f"{what}; {entries} kept in memory, retried with the next write"
        return what


def _num(value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


SessionEvent: TypeAlias = (
    AgentStartEvent
    | AgentEndEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageUpdateEvent
    | MessageEndEvent
    | ToolExecutionStartEvent
    | ToolExecutionUpdateEvent
    | ToolExecutionEndEvent
    | AgentSettledEvent
    | QueueUpdateEvent
    | AutoRetryStartEvent
    | AutoRetryEndEvent
    | CompactionStartEvent
    | CompactionEndEvent
    | SummarizationRetryScheduledEvent
    | SummarizationRetryAttemptStartEvent
    | SummarizationRetryFinishedEvent
    | BudgetExceededEvent
    | SessionWriteFailedEvent
    | BranchSummaryStartEvent
    | BranchSummaryEndEvent
    | SessionTreeEvent
)
"""Every event a session emits: the agent's (with the session's ``agent_end``) and the host-level ones."""

SessionListener: TypeAlias = Callable[[SessionEvent], object]
"""``listener(event)``, called synchronously for every session event; see ``AgentSession.subscribe``."""
