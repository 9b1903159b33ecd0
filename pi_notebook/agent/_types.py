"""Agent-level types: tools, their results, the hook contexts and the agent event union.

Events are small slotted dataclasses with a literal ``type`` equal to Pi's string, so ``match event.type``
and ``isinstance`` both work. ``message_*`` events carry ``.message``; ``tool_execution_end`` carries
``.tool_name`` and ``.is_error``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, TypeAlias

from pydantic import BaseModel, ConfigDict

from ..ai import (
    AbortSignal,
    AssistantMessage,
    AssistantMessageEvent,
    ImageContent,
    Model,
    TextContent,
    ThinkingLevel,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    trusted_text,
)

__all__ = [
    "AfterToolCallContext",
    "AfterToolCallResult",
    "AgentContext",
    "AgentEndEvent",
    "AgentEvent",
    "AgentMessage",
    "AgentStartEvent",
    "AgentTool",
    "AgentToolResult",
    "ApprovalDefault",
    "BeforeToolCallContext",
    "BeforeToolCallResult",
    "CustomMessage",
    "Emit",
    "FinishTurnResult",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "RequestContext",
    "RequestUpdate",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "ToolPrompt",
    "TurnContext",
    "TurnEndEvent",
    "TurnStartEvent",
    "TurnUpdate",
]


class CustomMessage(BaseModel):
    """Base for app-defined transcript entries (notes, UI markers, summaries).

    They travel through the loop and the transcript like any message but reach a model only as what
    :meth:`to_llm` returns (the default conversion drops entries whose ``to_llm`` gives ``None``) or what a
    custom ``convert_to_llm`` makes of them.
    """

    __slots__ = ("_key",)  # its transcript key (pi_notebook.ai.messages.message_key)

    model_config = ConfigDict(extra="allow")
    role: str
    timestamp: int = 0

    def to_llm(self) -> UserMessage | AssistantMessage | ToolResultMessage | None:
        """What the default ``convert_to_llm`` sends for this entry (``None``: nothing, the default)."""
        return None


AgentMessage: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage | CustomMessage

ToolContent: TypeAlias = TextContent | ImageContent


@dataclass(slots=True)
class AgentToolResult:
    """What a tool's ``execute`` returns. ``content`` may be given as plain text.

    ``terminate=True`` asks the loop not to call the model again for this batch; it only takes effect when
    every result of the batch sets it, and queued steering or follow-up messages still start a new turn.
    """

    content: Sequence[ToolContent] | str = ()
    details: Any = None
    terminate: bool = False
    usage: Usage | None = None
    added_tool_names: Sequence[str] = ()

    def __post_init__(self) -> None:
        if isinstance(self.content, str):
            self.content = [trusted_text(self.content)]
        else:
            self.content = list(self.content)


class ToolPrompt(NamedTuple):
    """What the system prompt says about a tool, in Pi's shape: a one-line snippet for the tool list, and
    guidelines (Pi's ``promptSnippet`` / ``promptGuidelines``)."""

    snippet: str
    guidelines: tuple[str, ...] = ()


ApprovalDefault: TypeAlias = Literal["never", "ask", "auto"]
"""Whether a tool's calls ask the user before they run, when the setting ``tools.approval`` does not name the
tool: ``"ask"`` (it runs code or changes files), ``"auto"`` (it runs without asking unless the setting says
``ask``) or ``"never"`` (it only looks: it never asks, whatever the setting says)."""

PreviewSyntax: TypeAlias = Literal["", "python", "shell", "diff"]
"""How a tool's preview reads (:attr:`AgentTool.preview_syntax`)."""
OnUpdate: TypeAlias = Callable[[AgentToolResult], None]
Execute: TypeAlias = Callable[[str, Any, AbortSignal, OnUpdate], Awaitable[AgentToolResult]]


@dataclass(slots=True)
class AgentTool:
    """A tool the agent can run.

    ``parameters`` is a JSON schema (dict) or a pydantic model class. Arguments are validated against it
    before ``execute(tool_call_id, args, signal, on_update)`` is awaited: ``args`` is a dict for a JSON
    schema and a model instance for a pydantic class. ``execute`` should honour ``signal`` (stop promptly
    when it aborts) and may raise: an exception becomes an error tool result carrying its message.
    ``execution_mode="sequential"`` forces the whole batch containing this tool to run one call at a time.
    ``prepare_arguments`` may rewrite raw arguments (e.g. a legacy shape) before validation.

    What a host needs to know of the tool lives on it too: :attr:`approval` (whether a call asks first),
    :attr:`preview` (what the question shows) and :attr:`prompt` (the system prompt's lines about it).
    """

    name: str
    description: str
    parameters: Mapping[str, Any] | type[BaseModel]
    execute: Execute
    label: str = ""
    execution_mode: Literal["parallel", "sequential"] | None = None
    prepare_arguments: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    timeout_ms: int | None = None
    """Per-tool execution timeout, enforced by ``AgentSession`` (overrides its ``timeouts.tool_ms``)."""
    approval: ApprovalDefault = "auto"
    """Whether a call asks before it runs, unless the setting ``tools.approval`` names this tool (see
    :data:`ApprovalDefault`; enforced by an ``AgentSession`` that has an approver)."""
    preview: Callable[[Mapping[str, Any]], str | Awaitable[str]] | None = None
    """What an approval question (and the call's panel in the run widget) shows of a call, from its validated
    arguments: the code, the command line, the edit's diff; it may be async (a cell tool reads the live notebook),
    and is then awaited until the run's signal aborts (the panel shows only a preview that is not). ``None``, or a
    preview that raises: the arguments as JSON."""
    call_text: Callable[[Mapping[str, Any]], str] | None = None
    """The call as its tool panel shows it, from the arguments alone (never awaited), for a tool whose
    :attr:`preview` reads something live (the cell tools: the approval box shows the cell as it is now). ``None``:
    the preview when it is not async, else the arguments as JSON."""
    preview_syntax: PreviewSyntax = ""
    """How the preview reads, for highlighting: ``"python"`` (code), ``"shell"`` (a command line), ``"diff"`` (an
    edit), ``""`` (plain text)."""
    prompt: ToolPrompt | None = None
    """The system prompt's snippet and guidelines for this tool; ``None``: the prompt does not list it."""
    needs_approval: Callable[[Any], str | None] | None = None
    """A per-call decision, for a tool that asks only for some calls: given the validated arguments, why this call
    needs the user's approval (``"it looks outside the working directory ..."``), or ``None`` to run it without
    asking. Consulted by ``AgentSession``'s approval when the tool's mode is ``ask``; without it every call asks."""
    approval_group: str | None = None
    """What an "Always" answer to one of its calls covers, when it is more than this tool: a group of tools allowed
    together (an MCP server's tools carry ``"MCP server <name>"``: "Always" lets every tool of that server run
    without asking). ``None``: the tool alone."""
    refusal: Callable[[Any, AbortSignal], str | Awaitable[str | None] | None] | None = None
    """Checked before the user is asked about a call (``AgentSession``'s approval): given the validated arguments
    and the run's signal, the error result's text when the call would be refused anyway (a cell tool's cell is
    tagged ``pi-protected``, gone, or not code), so nobody is asked to approve what cannot run; ``None`` to ask.
    It may be async (a cell tool asks the page); if it raises, the user is asked as usual."""

    def json_schema(self) -> Mapping[str, Any]:
        parameters = self.parameters
        if isinstance(parameters, type):
            return parameters.model_json_schema()
        return parameters

    def to_tool(self) -> Tool:
        """The model-facing description of this tool."""
        return Tool(name=self.name, description=self.description, parameters=self.json_schema())


# -- hook contexts and results -----------------------------------------------------------------------


@dataclass(slots=True)
class AgentContext:
    """The loop's working context: the transcript grows in place as the run proceeds."""

    system_prompt: str
    messages: list[AgentMessage]
    tools: Sequence[AgentTool] = ()


@dataclass(slots=True)
class BeforeToolCallContext:
    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: Any
    """The validated arguments; mutate them in place to change what ``execute`` receives."""
    context: AgentContext


@dataclass(slots=True)
class BeforeToolCallResult:
    block: bool = False
    reason: str | None = None
    terminate: bool = False


@dataclass(slots=True)
class AfterToolCallContext:
    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: Any
    result: AgentToolResult
    is_error: bool
    context: AgentContext


@dataclass(slots=True)
class AfterToolCallResult:
    """Each field given replaces the original (no deep merge); ``None`` keeps it."""

    content: Sequence[ToolContent] | None = None
    details: Any = None
    usage: Usage | None = None
    terminate: bool | None = None
    is_error: bool | None = None


@dataclass(slots=True)
class TurnContext:
    """Given to ``finish_turn``, ``prepare_next_turn`` and ``should_stop_after_turn``."""

    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    context: AgentContext
    new_messages: list[AgentMessage]


@dataclass(slots=True)
class TurnUpdate:
    """Returned by ``prepare_next_turn``: replaces context / model / thinking level for later requests."""

    context: AgentContext | None = None
    model: Model | None = None
    thinking_level: ThinkingLevel | None = None


@dataclass(slots=True)
class RequestContext:
    """Given to ``prepare_request`` before every provider request."""

    context: AgentContext
    model: Model
    thinking_level: ThinkingLevel


RequestUpdate = TurnUpdate


@dataclass(slots=True)
class FinishTurnResult:
    action: Literal["end", "continue"]


# -- events -------------------------------------------------------------------------------------------


@dataclass(slots=True)
class AgentStartEvent:
    type: Literal["agent_start"] = field(default="agent_start", init=False)


@dataclass(slots=True)
class AgentEndEvent:
    """The loop's last event. ``messages`` are the messages this run added (prompts included)."""

    messages: list[AgentMessage]
    type: Literal["agent_end"] = field(default="agent_end", init=False)


@dataclass(slots=True)
class TurnStartEvent:
    type: Literal["turn_start"] = field(default="turn_start", init=False)


@dataclass(slots=True)
class TurnEndEvent:
    message: AgentMessage
    tool_results: list[ToolResultMessage]
    type: Literal["turn_end"] = field(default="turn_end", init=False)


@dataclass(slots=True)
class MessageStartEvent:
    message: AgentMessage
    type: Literal["message_start"] = field(default="message_start", init=False)


@dataclass(slots=True)
class MessageUpdateEvent:
    """A streaming step of an assistant message; ``message`` is the live partial (see ``pi_notebook.ai``)."""

    message: AssistantMessage
    assistant_message_event: AssistantMessageEvent
    type: Literal["message_update"] = field(default="message_update", init=False)


@dataclass(slots=True)
class MessageEndEvent:
    message: AgentMessage
    type: Literal["message_end"] = field(default="message_end", init=False)


@dataclass(slots=True)
class ToolExecutionStartEvent:
    tool_call_id: str
    tool_name: str
    args: Mapping[str, Any]
    type: Literal["tool_execution_start"] = field(default="tool_execution_start", init=False)


@dataclass(slots=True)
class ToolExecutionUpdateEvent:
    tool_call_id: str
    tool_name: str
    args: Mapping[str, Any]
    partial_result: AgentToolResult
    type: Literal["tool_execution_update"] = field(default="tool_execution_update", init=False)


@dataclass(slots=True)
class ToolExecutionEndEvent:
    tool_call_id: str
    tool_name: str
    result: AgentToolResult
    is_error: bool
    type: Literal["tool_execution_end"] = field(default="tool_execution_end", init=False)


AgentEvent: TypeAlias = (
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
)

Emit: TypeAlias = Callable[[AgentEvent], Awaitable[None] | None]
"""How the loop reports an event. The loop awaits what it returns before going on, so a slow listener
back-pressures the loop; ``None`` means there is nothing to wait for (an ``async def`` emit always returns a
coroutine, a plain function returning ``None`` spares one per event)."""
