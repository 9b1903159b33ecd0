"""The agent as the session sets it up: its options from the session's settings, and its tools, guarded.

The settings give the agent its queue modes, its tool execution (parallel or sequential) and the options of every
model request (the provider's retries and timeouts, the HTTP idle and total timeouts). The tools are given to the
session as they are; the agent holds each wrapped by the tool guard (``_guard.guard_tool``: the tool timeout and
abort grace, the run's deadlines, and the redaction of every key the session knows).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from ..agent import Agent, AgentTool
from ._guard import RunHooks, guard_tool
from ._settings import Settings, TimeoutSettings

__all__ = ["AgentSetup"]


class AgentSetup:
    """Sets up ``agent`` for the session: :meth:`apply` its settings, :attr:`tools` guarded with the settings'
    timeouts, the session's ``keys`` (redacted from tool output) and the operation's ``run`` hooks."""

    def __init__(
        self, agent: Agent, tools: Iterable[AgentTool], *, keys: Callable[[], list[str]], run: RunHooks
    ) -> None:
        self._agent = agent
        self._tools = list(tools)
        self._keys = keys
        self._run = run
        self._timeouts = TimeoutSettings()

    def apply(self, settings: Settings) -> None:
        """Give the agent the options ``settings`` set, and guard its tools with their timeouts."""
        agent = self._agent
        agent.steering_mode = settings.steering_mode
        agent.follow_up_mode = settings.follow_up_mode
        agent.tool_execution = settings.tool_execution
        provider = settings.retry.provider
        agent.stream_options = replace(
            agent.stream_options,
            max_retries=provider.max_retries,
            max_retry_delay_ms=provider.max_retry_delay_ms,
            timeout_ms=provider.timeout_ms,
            idle_timeout_ms=settings.timeouts.http_idle_ms or None,
            total_timeout_ms=settings.timeouts.http_total_ms or None,
            cache_retention=settings.cache_retention,
        )
        self._timeouts = settings.timeouts
        self._guard()

    @property
    def tools(self) -> list[AgentTool]:
        """The tools as given (the agent holds them guarded)."""
        return list(self._tools)

    @tools.setter
    def tools(self, tools: Iterable[AgentTool]) -> None:
        self._tools = list(tools)
        self._guard()

    def find(self, name: str) -> AgentTool | None:
        """The tool named ``name``, as given."""
        return next((tool for tool in self._tools if tool.name == name), None)

    def _guard(self) -> None:
        self._agent.state.tools = [guard_tool(tool, self._timeouts, self._keys, self._run) for tool in self._tools]
