"""The host layer (Pi's ``AgentSession``): ``agent_settled``, Stop that really stops, automatic retry,
overflow compaction, timeouts and budgets, settings, and the JSONL session file."""

from ._approval import DECLINED, NEVER_ASK, Approval, ApprovalRequest, Approver, approval_mode
from ._catalog import SessionInfo, list_sessions, session_folder
from ._compactor import CompactionCancelled
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
    SessionListener,
    SessionWriteFailedEvent,
    SummarizationRetryAttemptStartEvent,
    SummarizationRetryFinishedEvent,
    SummarizationRetryScheduledEvent,
)
from ._guard import AbortRun, ToolTimeoutError
from ._lock import SessionInUseError
from ._session import AgentSession, QueueSnapshot, SessionBusyError
from ._settings import (
    BudgetSettings,
    CompactionSettings,
    ProviderRetrySettings,
    RetrySettings,
    SessionsSettings,
    Settings,
    SettingsError,
    TimeoutSettings,
    ToolSettings,
)
from ._store import SessionStore
from ._store_load import LoadedSession, LoadProblem, SessionFileError, load_session
from ._summary import CompactionPlan, CompactionSummaryMessage, plan_compaction

__all__ = [
    "DECLINED",
    "NEVER_ASK",
    "AbortRun",
    "AgentEndEvent",
    "AgentSession",
    "AgentSettledEvent",
    "Approval",
    "ApprovalRequest",
    "Approver",
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
    "LoadProblem",
    "LoadedSession",
    "ProviderRetrySettings",
    "QueueSnapshot",
    "QueueUpdateEvent",
    "RetrySettings",
    "SessionBusyError",
    "SessionEvent",
    "SessionFileError",
    "SessionInUseError",
    "SessionInfo",
    "SessionListener",
    "SessionStore",
    "SessionWriteFailedEvent",
    "SessionsSettings",
    "Settings",
    "SettingsError",
    "SummarizationRetryAttemptStartEvent",
    "SummarizationRetryFinishedEvent",
    "SummarizationRetryScheduledEvent",
    "TimeoutSettings",
    "ToolSettings",
    "ToolTimeoutError",
    "approval_mode",
    "list_sessions",
    "load_session",
    "plan_compaction",
    "session_folder",
]
