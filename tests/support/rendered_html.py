"""Markdown rendered by real CommonMark renderers, read back as a small tree to check what a reader would get.

``render(markdown)`` gives the HTML of markdown-it (CommonMark with GFM tables and raw HTML let through, as
JupyterLab's marked lets it through) and of mistune as nbconvert configures it (what ``jupyter nbconvert --to html``
writes), each parsed into :class:`Node` trees."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from markdown_it import MarkdownIt
from nbconvert.filters.markdown_mistune import markdown2html_mistune

VOID = {"br", "hr", "img", "input", "link", "meta", "source", "embed", "area", "base", "col", "wbr", "image"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str | None] = field(default_factory=dict)
    children: list[Node | str] = field(default_factory=list)

    def walk(self) -> list[Node]:
        found = [self]
        for child in self.children:
            if isinstance(child, Node):
                found.extend(child.walk())
        return found

    def find_all(self, tag: str) -> list[Node]:
        return [node for node in self.walk() if node.tag == tag]

    @property
    def text(self) -> str:
        """The text a reader sees (``<br>`` as a line break)."""
        return "".join(child if isinstance(child, str) else ("\n" if child.tag == "br" else child.text)
                       for child in self.children)  # fmt: skip


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root")
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        for index in range(len(self.stack) - 1, 0, -1):
            if self.stack[index].tag == tag:
                del self.stack[index:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)

    def handle_comment(self, data: str) -> None:
        self.stack[-1].children.append(Node("#comment", {"data": data}))


def parse(html: str) -> Node:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root


_MARKDOWN_IT = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def renderers() -> dict[str, str]:
    return {"markdown-it": "markdown-it", "nbconvert": "nbconvert"}


def render(markdown: str, renderer: str) -> Node:
    """``markdown`` rendered by ``renderer`` (``markdown-it`` or ``nbconvert``), parsed."""
    html = _MARKDOWN_IT.render(markdown) if renderer == "markdown-it" else markdown2html_mistune(markdown)
    return parse(html)


def squeezed(text: str) -> str:
    """``text`` with every run of white space (no-break spaces included) as one space: what a reader sees of it."""
    return re.sub(r"[\s\u00a0]+", " ", text.replace("\0", "\ufffd")).strip()
