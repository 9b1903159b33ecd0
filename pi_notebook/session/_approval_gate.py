"""Approval before a tool runs: the setting ``tools.approval``, and the seam a host plugs its question into.

The session puts :class:`ApprovalGate` in the agent's ``before_tool_call`` hook (after the user's own
``before_tool_call``, which may still block first). Whether a tool asks is the setting for it, else the tool's own
default (``AgentTool.approval``: ``ask`` for tools that run code or change files, ``never`` for a tool that never
needs to, ``notebook_read``). For each call whose tool asks (:func:`approval_mode`), the gate calls the session's
``approver(request, signal)`` — the host's question to the user — and reads its :class:`Approval`. A tool with a
per-call decision (``AgentTool.needs_approval``) asks only for the calls it flags, and the request carries its
``reason``: the tools that only look at files (``read``, ``ls``, ``grep``, ``find``) ask for a path outside the
working directory or a sensitive file (``~/.ssh``, ``/proc/<pid>/environ``, ``.env``;
``pi_notebook.tools._sensitive``) and run without asking otherwise.

- ``run``: the call runs; ``always``: it runs, and this tool (or every tool of its ``approval_group``: an MCP
  server's tools) never asks again in this session;
- ``skip``: it does not run; the model gets an error result saying the user declined (:data:`DECLINED`);
- ``unavailable``: nobody can answer (no frontend); it does not run, and the result says why and how to allow
  it (``reason``). A host must answer so at once rather than wait for an answer that cannot come.

The wait is the run's: the approver gets the run's abort signal and must return once it aborts (every stop
path aborts it); the call then ends as "Operation aborted". The approval wait is not tool time: it is outside
``timeouts.tool_ms``, but inside ``timeouts.turn_ms`` and the wall-time budget (which abort the signal).

A session without an approver (``AgentSession(approver=None)``, the default) asks nobody: every tool runs, as
before this setting existed. The notebook supplies one (its run widget's Run / Skip / Always buttons).

A tool the site policy says must ask (``[tools] ask``, see ``_policy``) always asks: the setting and "always"
answers do not change it (an "always" runs the call once), and with nobody to ask it does not run.

Before asking, the gate lets the tool refuse a call that could not run anyway (``AgentTool.refusal``: a cell tool's
cell is tagged ``pi-protected``, gone, or not code): the call ends with that error at once, and the user is not
asked to approve it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from ..agent import AgentTool, BeforeToolCallContext, BeforeToolCallHook, BeforeToolCallResult, before_result, call_hook
from ..ai import AbortSignal, ToolCall, maybe_await
from ._settings import ApprovalMode

__all__ = [
    "DECLINED",
    "Approval",
    "ApprovalGate",
    "ApprovalRequest",
    "Approver",
    "approval_mode",
]

DECLINED = "The user declined to run this {name} call; it was not run. Ask the user or try something else."
POLICY_NOBODY = "{name} was not run: the site policy says it must ask the user first, and nobody can answer here."


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """One tool call waiting for approval: the call as the model made it, its validated arguments, the tool (whose
    ``preview`` says what to show of the call), and why this call asks when its tool asks only for some calls
    (``AgentTool.needs_approval``)."""

    tool_call: ToolCall
    args: Any
    tool: AgentTool | None = None
    reason: str | None = None

    @property
    def tool_name(self) -> str:
        return self.tool_call.name


@dataclass(frozen=True, slots=True)
class Approval:
    """An approver's answer; ``reason`` is the result text for ``unavailable``."""

    action: Literal["run", "skip", "always", "unavailable"]
    reason: str | None = None


Approver: TypeAlias = Callable[[ApprovalRequest, AbortSignal], Awaitable[Approval]]
"""``approver(request, signal)``: ask the user; return once answered, or once ``signal`` aborts (any answer
then; the call ends as aborted). Must not raise (an exception becomes the call's error result)."""


def approval_mode(setting: ApprovalMode | Mapping[str, ApprovalMode], tool: AgentTool) -> ApprovalMode:
    """Whether ``tool`` asks under ``setting`` (the value of ``tools.approval``): a tool that never asks does not;
    otherwise the setting for it, else its ``"*"`` entry, else the tool's own default. A tool with
    ``needs_approval`` then asks only for the calls that flags."""
    if tool.approval == "never":
        return "auto"
    if isinstance(setting, str):
        return setting
    return setting.get(tool.name) or setting.get("*") or ("ask" if tool.approval == "ask" else "auto")


class ApprovalGate:
    """The session's ``before_tool_call``: the user's hook, then approval. See the module docstring."""

    def __init__(
        self,
        user_hook: BeforeToolCallHook | None,
        setting: Callable[[], ApprovalMode | Mapping[str, ApprovalMode]],
        must_ask: Callable[[str], bool] = lambda name: False,
    ) -> None:
        self._user_hook = user_hook
        self._setting = setting
        self._must_ask = must_ask
        self.approver: Approver | None = None
        self.always: set[str] = set()
        """Tools (and tool groups, ``AgentTool.approval_group``) the user allowed "always for this session"."""

    def mode(self, tool: AgentTool) -> ApprovalMode:
        """What this tool does now: ``ask`` when the site policy says so, ``auto`` when allowed for the session (the
        tool, or its group), else what the setting says."""
        if self._must_ask(tool.name):
            return "ask"
        if tool.name in self.always or (tool.approval_group is not None and tool.approval_group in self.always):
            return "auto"
        return approval_mode(self._setting(), tool)

    async def __call__(self, context: BeforeToolCallContext, signal: AbortSignal) -> BeforeToolCallResult | None:
        if self._user_hook is not None:
            verdict = before_result(await maybe_await(call_hook(self._user_hook, context, signal)))
            if verdict is not None and verdict.block:
                return verdict
        approver = self.approver
        name = context.tool_call.name
        tool = next((tool for tool in context.context.tools if tool.name == name), None)
        if approver is None and tool is not None and self._must_ask(name):
            return BeforeToolCallResult(block=True, reason=POLICY_NOBODY.format(name=name))
        if approver is None or tool is None or self.mode(tool) == "auto" or signal.aborted:
            return None
        reason = tool.needs_approval(context.args) if tool.needs_approval is not None else None
        if tool.needs_approval is not None and reason is None and not self._must_ask(name):
            return None  # this call is one its tool runs without asking (unless the site policy says ask)
        refused = await _refusal(tool, context.args, signal)
        if refused is not None:
            return BeforeToolCallResult(block=True, reason=refused)
        answer = await approver(ApprovalRequest(context.tool_call, context.args, tool, reason), signal)
        if signal.aborted:
            return None  # the loop ends the call as "Operation aborted"
        if answer.action == "always" and not self._must_ask(name):
            self.always.add(tool.approval_group or name)
        if answer.action in ("run", "always"):
            return None
        if answer.action == "skip":
            return BeforeToolCallResult(block=True, reason=DECLINED.format(name=name))
        return BeforeToolCallResult(block=True, reason=answer.reason or f"{name} needs approval, and none came")


async def _refusal(tool: AgentTool, args: Any, signal: AbortSignal) -> str | None:
    """Why the call would be refused anyway (``AgentTool.refusal``): then nobody is asked. ``None`` when it may
    run, when the check fails, or when the run was stopped meanwhile."""
    if tool.refusal is None:
        return None
    try:
        refused = await maybe_await(tool.refusal(args, signal))
    except Exception:  # the check is a courtesy: the call is asked about, and refused when it runs if it must be
        return None
    return refused if isinstance(refused, str) and refused and not signal.aborted else None
