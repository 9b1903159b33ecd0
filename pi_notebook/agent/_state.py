"""``AgentState``: what an agent's transcript and run look like from outside (Pi's ``Agent.state``).

The run's lifecycle (``_lifecycle``) reduces each event into it before any listener hears the event: the
streaming message, the transcript (a message is appended at its ``message_end``), the pending tool calls, the
last error.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..ai import Model, ThinkingLevel
from ._types import AgentMessage, AgentTool

__all__ = ["AgentState"]


class AgentState:
    """The agent's observable state. Assigning ``messages`` or ``tools`` stores a copy of the list."""

    __slots__ = (
        "_messages",
        "_tools",
        "error_message",
        "is_streaming",
        "model",
        "pending_tool_calls",
        "streaming_message",
        "system_prompt",
        "thinking_level",
    )

    def __init__(
        self,
        system_prompt: str,
        model: Model,
        thinking_level: ThinkingLevel,
        tools: Iterable[AgentTool],
        messages: Iterable[AgentMessage],
    ) -> None:
        self.system_prompt = system_prompt
        self.model = model
        self.thinking_level: ThinkingLevel = thinking_level
        self._tools = list(tools)
        self._messages = list(messages)
        self.is_streaming = False
        self.streaming_message: AgentMessage | None = None
        self.pending_tool_calls: set[str] = set()
        self.error_message: str | None = None

    @property
    def messages(self) -> list[AgentMessage]:
        return self._messages

    @messages.setter
    def messages(self, value: Iterable[AgentMessage]) -> None:
        self._messages = list(value)

    @property
    def tools(self) -> list[AgentTool]:
        return self._tools

    @tools.setter
    def tools(self, value: Iterable[AgentTool]) -> None:
        self._tools = list(value)
