"""The session tree as a person reads it: the prompts (and the summaries between them), where the branches part,
which branch is current and where the next prompt goes: ``%pi tree`` prints it (:func:`tree_text`), the run
widget draws it foldable (``widget/_tree_panel.tree_items``, its ``tree`` trait).

A *prompt tree* keeps the entries a person steers by: user prompts, branch summaries and compactions. Replies, tool
results and model changes are folded into the prompt before them (counted as replies). A branch is drawn indented
only where the conversation parts (as Pi's ``/tree`` draws it), so a long linear session stays one column.

Every text is untrusted (prompts the user pasted, summaries the model wrote): :func:`tree_text` makes each line
visible as itself (``_visible.visible_text``: no control character reaches a terminal) and the widget puts them in
the page as text, never as markup.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..session import SessionTree, TreeEntry, TreeNode
from ._visible import visible_text

__all__ = ["PromptNode", "one_line", "prompt_tree", "tree_text"]

Kind = Literal["user", "summary", "compaction"]
TEXT_CHARS = 60
"""How much of a prompt's first line ``%pi tree`` shows."""


@dataclass(slots=True)
class PromptNode:
    """A prompt, branch summary or compaction of the tree: its entry ``id`` (what ``%pi fork`` takes for a prompt),
    the start of its ``text``, whether it is on the current branch, whether the next prompt goes after it
    (``here``), how many ``replies`` follow it before the next prompt, and the prompts after it."""

    id: str
    kind: Kind
    text: str
    on_branch: bool
    number: int = 0
    """A prompt's number (``%pi fork N``), 0 for a summary."""
    here: bool = False
    replies: int = 0
    children: list[PromptNode] = field(default_factory=list)


def _kind(entry: TreeEntry) -> Kind | None:
    if entry.is_user:
        return "user"
    if entry.type == "branch_summary":
        return "summary"
    if entry.type == "compaction":
        return "compaction"
    return None


def prompt_tree(tree: SessionTree) -> list[PromptNode]:
    """The prompt tree of ``tree`` (see the module docstring): its roots, oldest first."""
    roots: list[PromptNode] = []
    stack: list[tuple[TreeNode, PromptNode | None]] = [(node, None) for node in reversed(tree.roots)]
    while stack:  # not recursive: a linear session is as deep as it is long
        node, owner = stack.pop()
        entry = node.entry
        kind = _kind(entry)
        if kind is not None:
            item = PromptNode(entry.id, kind, entry.text, node.on_branch, entry.prompt_number)
            (owner.children if owner is not None else roots).append(item)
            owner = item
        elif owner is not None and entry.type == "message" and entry.role == "assistant":
            owner.replies += 1
        if entry.id == tree.leaf_id and owner is not None:
            owner.here = True
        stack.extend((child, owner) for child in reversed(node.children))
    return roots


def one_line(text: str, limit: int = TEXT_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _label(node: PromptNode) -> str:
    if node.kind == "user":
        text = f"#{node.number}  {one_line(node.text)}"
    else:
        name = "branch summary" if node.kind == "summary" else "compaction"
        text = f"[{name}] {one_line(node.text, TEXT_CHARS - len(name) - 3)}"
    replies = f"  ({node.replies} repl{'y' if node.replies == 1 else 'ies'})" if node.replies else ""
    return f"{node.id}  {visible_text(text)}{replies}{'  ◀ here' if node.here else ''}"


def _count(roots: list[PromptNode]) -> tuple[int, int]:
    """Prompts, and branches (leaves of the prompt tree)."""
    prompts = branches = 0
    stack = list(roots)
    while stack:
        node = stack.pop()
        prompts += node.kind == "user"
        branches += not node.children
        stack.extend(node.children)
    return prompts, branches


def tree_text(tree: SessionTree) -> str:
    """``%pi tree``: one line per prompt, summary and compaction, branches indented where they part."""
    roots = prompt_tree(tree)
    if not roots:
        return "pi: the session has no prompt yet"
    prompts, branches = _count(roots)
    head = (
        f"Session tree: {prompts} prompt{'s' if prompts != 1 else ''}, {branches} branch{'es' if branches != 1 else ''}"
        " (* current branch, ◀ here: where the next prompt goes)\n"
        "%pi fork N (or its id) continues from before prompt #N; the branch left behind is summarised"
    )
    lines = [head]
    stack: list[tuple[PromptNode, str, str]] = [(node, "", "") for node in reversed(roots)]
    while stack:
        node, indent, connector = stack.pop()
        lines.append(f"{'*' if node.on_branch else ' '} {indent}{connector}{_label(node)}")
        below = indent + {"├─ ": "│  ", "└─ ": "   "}.get(connector, "")
        kids = node.children
        if len(kids) == 1:
            stack.append((kids[0], below, ""))
        else:
            stack.extend(
                (kid, below, "└─ " if i == len(kids) - 1 else "├─ ") for i, kid in reversed(list(enumerate(kids)))
            )
    return "\n".join(lines)
