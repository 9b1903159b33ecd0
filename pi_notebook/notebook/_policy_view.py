"""What ``%pi settings`` shows of the site policy (``session._policy``): each value it locks, marked "locked by
policy", the tools it switches off or makes ask, the models and MCP servers it allows."""

from __future__ import annotations

from ..session import Policy, Settings

__all__ = ["describe_policy"]


def describe_policy(policy: Policy, settings: Settings) -> str:
    """Lines to print after the settings (``""`` without a policy)."""
    if not policy.active:
        return ""
    data = settings.model_dump()
    lines = [f"\nlocked by policy ({policy.where}):"]
    for path, ceiling in sorted(policy.limits.items()):
        lines.append(f"  {path} = {_value(data, path)}  (locked by policy: at most {ceiling:g})")
    for path, value in sorted(policy.fixed.items()):
        lines.append(f"  {path} = {value}  (locked by policy)")
    for tool in sorted(policy.ask):
        lines.append(f"  tools.approval.{tool} = ask  (locked by policy: it always asks)")
    if policy.disabled:
        lines.append(f"  tools off: {', '.join(sorted(policy.disabled))}  (locked by policy)")
    for patterns in policy.models:
        lines.append(f"  models allowed: {', '.join(patterns)}  (locked by policy)")
    for prefixes in policy.base_urls:
        lines.append(f"  base URLs allowed: {', '.join(prefixes)}  (locked by policy)")
    for patterns in policy.mcp_allow:
        lines.append(f"  MCP servers allowed: {', '.join(patterns) or 'none'}  (locked by policy)")
    if policy.mcp_ask:
        lines.append(f"  MCP tools that always ask: {', '.join(sorted(policy.mcp_ask))}  (locked by policy)")
    if policy.mcp_disabled:
        lines.append(f"  MCP tools off: {', '.join(sorted(policy.mcp_disabled))}  (locked by policy)")
    return "\n".join(lines)


def _value(data: dict[str, object], path: str) -> object:
    node: object = data
    for part in path.split("."):
        node = node[part] if isinstance(node, dict) else None
    return node
