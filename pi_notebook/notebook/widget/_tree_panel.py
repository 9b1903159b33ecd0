"""The session tree as the run widget's tree panel draws it: the prompt tree (``notebook/_tree_view.py``) as the
widget's ``tree`` trait, one :class:`~._protocol.TreeItem` per prompt."""

from __future__ import annotations

from ...session import SessionTree
from .._tree_view import PromptNode, one_line, prompt_tree
from ._protocol import TreeItem

__all__ = ["tree_items"]


def tree_items(tree: SessionTree) -> list[TreeItem]:
    """The prompt tree as the run widget's ``tree`` trait: one item per node, parents before children, each naming
    its parent (``""``: a root)."""
    items: list[TreeItem] = []
    stack: list[tuple[PromptNode, str]] = [(node, "") for node in reversed(prompt_tree(tree))]
    while stack:
        node, parent = stack.pop()
        items.append(
            TreeItem(
                id=node.id,
                parent=parent,
                kind=node.kind,
                text=one_line(node.text, 200),
                on_branch=node.on_branch,
                number=node.number,
                here=node.here,
                replies=node.replies,
            )
        )
        stack.extend((kid, node.id) for kid in reversed(node.children))
    return items
