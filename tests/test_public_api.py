"""The public surface users, docs and notebooks rely on: names are pinned so a change is a deliberate one."""

from __future__ import annotations

import importlib
import typing

import pytest

PINNED = {
    "pi_notebook.agent": {
        "Agent", "AgentBusyError", "AgentTool", "AgentToolResult", "ApprovalDefault", "ToolPrompt",
        "AgentContext", "AgentEvent", "AgentMessage", "AgentState",
        "AgentStartEvent", "AgentEndEvent", "TurnStartEvent", "TurnEndEvent", "MessageStartEvent",
        "MessageUpdateEvent", "MessageEndEvent", "ToolExecutionStartEvent", "ToolExecutionUpdateEvent",
        "ToolExecutionEndEvent", "BeforeToolCallContext", "BeforeToolCallResult", "AfterToolCallContext",
        "AfterToolCallResult", "CustomMessage", "FinishTurnResult", "AgentListener", "LoopConfig", "QueueMode",
        "RequestContext", "RequestUpdate", "TurnContext", "TurnUpdate", "run_agent_loop",
        "run_agent_loop_continue", "set_default_stream_fn", "Emit", "Hooks", "call_hook", "ContextHook",
        "TransformContextHook", "BeforeToolCallHook", "AfterToolCallHook", "FinishTurnHook", "PrepareRequestHook",
        "PrepareNextTurnHook", "ShouldStopAfterTurnHook",
    },
    "pi_notebook.session": {
        "AgentSession", "QueueSnapshot", "SessionBusyError", "Settings", "SettingsError", "RetryPolicy",
        "ProviderRetrySettings", "CompactionSettings", "TimeoutSettings", "BudgetSettings", "SessionStore",
        "CheckpointSettings", "PythonSettings",
        "LoadedSession", "load_session", "CompactionSummaryMessage", "ToolTimeoutError", "SessionEvent",
        "SessionListener", "AbortRun",
        "CompactionCancelled", "CompactionPlan", "plan_compaction",
        "AgentEndEvent", "AgentSettledEvent", "QueueUpdateEvent", "AutoRetryStartEvent", "AutoRetryEndEvent",
        "CompactionStartEvent", "CompactionEndEvent", "BudgetExceededEvent", "SummarizationRetryScheduledEvent",
        "SummarizationRetryAttemptStartEvent", "SummarizationRetryFinishedEvent", "AgentStartEvent", "TurnStartEvent",
        "TurnEndEvent", "MessageStartEvent", "MessageUpdateEvent", "MessageEndEvent", "ToolExecutionStartEvent",
        "ToolExecutionUpdateEvent", "ToolExecutionEndEvent",
        "LoadProblem", "SessionFileError", "SessionInUseError", "SessionWriteFailedEvent",
        "ToolSettings", "Approval", "ApprovalRequest", "Approver", "approval_mode", "DECLINED",
        "SessionInfo", "SessionsSettings", "list_sessions", "read_session_info", "session_folder", "StreamRedactor",
        "POLICY_ENV", "Policy", "PolicyError", "site_policy",
        "BranchSummaryEndEvent", "BranchSummaryFailed", "BranchSummaryMessage", "BranchSummaryStartEvent",
        "SessionTree", "SessionTreeEvent", "TreeEntry", "TreeError", "TreeNavigation", "TreeNode",
    },
    "pi_notebook.tools": {
        "DEFAULT_MAX_BYTES", "DEFAULT_MAX_LINES", "BashError", "FileToolError",
        "Truncation", "bash_tool",
        "coding_tools", "read_only_tools", "read_tool", "write_tool", "edit_tool", "ls_tool", "grep_tool",
        "find_tool", "preview_edit",
    },
    "pi_notebook.kernel": {
        "python_tool", "interrupt_running_code", "hold_interrupt", "add_python_listener", "PythonEvent",
        "PythonError", "InterruptHook", "KERNEL", "Kernel", "AGENT_TAG", "CELL_TOOL_NAMES",
        "METADATA_KEY", "PROTECTED_TAG", "CellChange", "CellChanges", "CellKernelInterrupt", "CellToolError",
        "Frontend", "Frontends", "NotebookTarget", "NotebookUnavailable", "cell_tools", "current_notebook",
    },
    "pi_notebook.notebook": {
        "Run", "RunReport", "RunState", "RunStatus", "RunView", "TranscriptWidget", "USAGE", "MAX_PROMPT_CHARS",
        "configure", "default_faux",
        "get_notebook_session", "get_session", "load_ipython_extension", "unload_ipython_extension", "NotebookSession",
        "default_tools",
    },
}  # fmt: skip

FOR_OTHER_FLOORS = {
    "pi_notebook.agent": {"Execute", "before_result"},
    "pi_notebook.session": {"redact_result", "redact_value"},
    "pi_notebook.tools": {
        "LIFELINE", "Stop", "file_journal", "process_image", "truncate_head", "write_atomic",
        "OutputAccumulator", "format_size", "tail_text", "truncate_tail", "delete_at_exit", "js_number",
        "generate_diff_string", "generate_unified_patch", "apply_edits", "normalize_to_lf",
        "KILL_GIVE_UP_S", "KILL_POLL_S", "MARKER_ENV", "ProcessTree", "marked_pids", "process_alive", "spawn_mark",
    },
    "pi_notebook.kernel": {
        "ABSENT", "CELL_MESSAGES", "CellAction", "CellChangeRecord", "CellError", "CellOp", "CellType", "Checkpoint",
        "CheckpointBudget", "FileBefore", "FrontendRefused", "InPlace", "Scratchpad", "SizeChange", "Stamp",
        "current_scratch", "current_shell", "file_holds", "file_stamp", "keep_busy", "restore_file",
        "signals_wake_the_loop",
    },
}  # fmt: skip
"""Names a floor exports for the floors above it (``tests/test_import_graph.py`` forbids reaching into its private
modules), beside what users rely on: pinned too, so that what one floor offers another is a deliberate choice."""

ALSO_REQUIRED = {
    "pi_notebook.ai": {
        "AbortController", "AbortSignal", "AssistantMessage", "AssistantMessageEventStream", "Context", "Model",
        "StreamOptions", "TextContent", "ThinkingContent", "ImageContent", "ToolCall", "ToolResultMessage",
        "UserMessage", "Usage", "stream", "complete", "abort_scope", "Cassette", "CassetteError", "CassetteMode",
        "CassetteTiming", "OpenAICompletionsCompat", "resolve_openai_compat", "maybe_await", "MaybeAwaitable",
        "Message", "Deadline", "PiNotebookError", "UserError", "BusyError", "ToolError",
    },
    "pi_notebook.ai.messages": {"AssistantMessage", "UserMessage", "ToolResultMessage", "message_from_dict"},
    "pi_notebook.ai.providers.faux": {
        "FauxProvider", "faux_assistant_message", "faux_text", "faux_thinking", "faux_tool_call",
    },
    "pi_notebook.ai.retry": {"is_retryable_assistant_error", "retry_assistant_call", "RetryPolicy"},
    "pi_notebook.ai.overflow": {"is_context_overflow", "is_recoverable_length"},
    "pi_notebook.ai.models": {"model_from_spec", "model_from_server", "parse_compatible_spec", "SPEC_HELP"},
    "pi_notebook.ai.transform": {"transform_messages"},
    "pi_notebook.testing": {"FaultServer", "Fault", "Reply", "RawResponse", "EventRecorder", "trace_label"},
    "pi_notebook.tools.bash": {"bash_tool"},
    "pi_notebook.tools.read": {"read_tool"},
    "pi_notebook.tools.write": {"write_tool"},
    "pi_notebook.tools.edit": {"edit_tool", "preview_edit"},
    "pi_notebook.tools.ls": {"ls_tool"},
    "pi_notebook.tools.grep": {"grep_tool"},
    "pi_notebook.tools.find": {"find_tool"},
    "pi_notebook.kernel.python_tool": {
        "python_tool", "interrupt_running_code", "hold_interrupt", "add_python_listener", "PythonEvent",
    },
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(PINNED))
def test_public_names_are_exactly_the_pinned_ones(module: str) -> None:
    assert set(importlib.import_module(module).__all__) == PINNED[module] | FOR_OTHER_FLOORS.get(module, set())


@pytest.mark.parametrize("module", sorted(ALSO_REQUIRED))
def test_documented_names_are_exported(module: str) -> None:
    exported = set(importlib.import_module(module).__all__)
    assert ALSO_REQUIRED[module] <= exported


def test_every_exported_name_exists() -> None:
    for module_name in [*PINNED, *ALSO_REQUIRED]:
        module = importlib.import_module(module_name)
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert missing == [], module_name


def test_every_session_event_is_importable_from_the_session() -> None:
    """One import point for a consumer of session events: every class of the ``SessionEvent`` union."""
    session = importlib.import_module("pi_notebook.session")
    union = {event.__name__ for event in typing.get_args(session.SessionEvent)}
    assert union <= set(session.__all__)
    assert all(getattr(session, name) in typing.get_args(session.SessionEvent) for name in union)


def test_every_exception_of_the_package_derives_from_one_base() -> None:
    """One exception tree (``pi_notebook/ai/_errors.py``): a caller can catch everything the package raises on
    purpose with ``PiNotebookError``, and busy is one condition on every floor."""
    import pkgutil

    import pi_notebook
    from pi_notebook import PiNotebookError
    from pi_notebook.agent import AgentBusyError
    from pi_notebook.ai import BusyError
    from pi_notebook.session import SessionBusyError

    strays = []
    for info in pkgutil.walk_packages(pi_notebook.__path__, "pi_notebook."):
        if info.name.startswith("pi_notebook.testing"):
            continue  # the fault server's private signal between its own threads
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            ours = isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == info.name
            if ours and not issubclass(value, PiNotebookError):
                strays.append(f"{info.name}.{value.__name__}")
    assert strays == []
    assert issubclass(AgentBusyError, BusyError) and issubclass(SessionBusyError, BusyError)
    assert issubclass(SessionBusyError, RuntimeError)  # callers that caught RuntimeError still do
