"""The host layer (Pi's ``AgentSession``): ``agent_settled``, Stop that really stops, automatic retry,
overflow compaction, timeouts and budgets, settings, and the JSONL session file."""

from ._compaction import CompactionPlan, CompactionSummaryMessage, plan_compaction
from ._events import (
    AgentEndEvent,
    AgentSettledEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    BudgetExceededEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    QueueUpdateEvent,
    SessionEvent,
    SummarizationRetryAttemptStartEvent,
    SummarizationRetryFinishedEvent,
    SummarizationRetryScheduledEvent,
)
from ._guard import AbortRun, ToolTimeoutError
from ._session import AgentSession, QueueSnapshot, SessionBusyError
from ._session_compaction import CompactionCancelled
from ._settings import (
    BudgetSettings,
    CompactionSettings,
    ProviderRetrySettings,
    RetrySettings,
    Settings,
    SettingsError,
    TimeoutSettings,
)
from ._store import LoadedSession, SessionStore, load_session

__all__ = [
    "AbortRun",
    "AgentEndEvent",
    "AgentSession",
    "AgentSettledEvent",
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "BudgetExceededEvent",
    "BudgetSettings",
    "CompactionCancelled",
    "CompactionEndEvent",
    "CompactionPlan",
    "CompactionSettings",
    "CompactionStartEvent",
    "CompactionSummaryMessage",
    "LoadedSession",
    "ProviderRetrySettings",
    "QueueSnapshot",
    "QueueUpdateEvent",
    "RetrySettings",
    "SessionBusyError",
    "SessionEvent",
    "SessionStore",
    "Settings",
    "SettingsError",
    "SummarizationRetryAttemptStartEvent",
    "SummarizationRetryFinishedEvent",
    "SummarizationRetryScheduledEvent",
    "TimeoutSettings",
    "ToolTimeoutError",
    "load_session",
    "plan_compaction",
]
