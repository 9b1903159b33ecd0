"""The one gate untrusted text crosses on its way into a markdown output: whatever it holds, it renders as itself.

Model replies, thinking, the user's prompt, tool arguments and results, error messages and event details are data.
Everything the notebook emits as ``text/markdown`` (the ``await run`` report, a run display's static copy,
``%pi events``, the ``%pi resume`` replay) is built by ``_describe.render_markdown`` from its own syntax (``**``,
``>``, table rows, fences) and from untrusted strings that go through one of the functions here, and nothing else.

Why literal markdown, and no HTML at all. JupyterLab renders the markdown outputs of the running session, and of a
notebook it trusts (every notebook the user saved), without sanitising them: raw HTML in them is live, so
``<img src=x onerror=...>`` in a reply ran as the user, with the Jupyter REST API at hand. nbconvert, nbviewer,
GitHub and VS Code each render markdown with their own parser and their own (or no) sanitiser. The only rule that
holds in all of them is that the untrusted text forms no construct at all:

- :func:`literal` puts a backslash before every ASCII punctuation character that can begin or take part in a
  CommonMark or GFM construct (all of them but ``, ; ? ' " % /``); :func:`inline`, for text inside a line, before
  those that can do so there (so an event detail reads ``aborted=false`` in the source too). A backslash-escaped
  character is a literal character in every CommonMark renderer (marked in JupyterLab, mistune in nbconvert,
  cmark-gfm on GitHub, markdown-it), so no HTML tag, comment, entity, link, image, autolink (``<...>``, ``www.``,
  ``https:``, ``@``), emphasis, code span, heading, list, quote, table cell border or math delimiter (``$``)
  survives. Line structure is kept: a line break becomes a hard line break, a blank line a new paragraph; leading
  white space becomes no-break spaces, so no line can open an indented code block, and trailing white space (a hard
  break of its own) is dropped.
- :func:`code_block` fences text (tool output, tool-call arguments) with a backtick fence longer than any run of
  backticks in it, so no line of it can close the fence; a code block's content is never parsed.
- :func:`code_span` does the same inline.
- :func:`document` encloses the whole output in a ``<div>`` (the one piece of HTML, ours) whose classes tell
  MathJax to leave it alone (``tex2jax_ignore`` for MathJax 2, which nbconvert's HTML loads without its Safe
  extension, so ``$\\style{background:url(...)}{x}$`` would load a remote image there; ``mathjax_ignore`` for
  MathJax 3 in JupyterLab). MathJax typesets the DOM's text, where an escaped ``\\$`` is a ``$`` again.
- A backslash of the text becomes ``&#92;`` and an ``@`` ``&#64;`` (numeric character references are literal
  characters too and form no structure): JupyterLab cuts math out of the markdown source before parsing it and
  would take an escaped backslash before ``(`` for a ``\\(`` delimiter, and it puts math back where the HTML
  reads ``@@N@@``.

So the markdown shows what the model wrote as the characters it wrote, its markdown included.

The same outputs also carry ``text/html``, which JupyterLab, nbconvert, GitHub and VS Code prefer when both are
there, so a report reads as the live widget does (formatted, sanitised by DOMPurify there, remote images held back
until clicked: ``js/run-view`` ``src/markdown/sanitize.ts``). It is built as carefully, since JupyterLab runs the
scripts of a trusted notebook's HTML outputs:

- Our own structure (labels, quotes, code blocks, the event log table) is written here, with every untrusted
  string escaped (:func:`html_text`, :func:`html_code`).
- The model's markdown (replies, compaction summaries) is rendered by markdown-it with raw HTML off, so a tag in
  it is text (:func:`html_markdown`); an image becomes a link to it saying which host it is on (a static page has
  no click-to-load; nothing loads until the link is opened), and markdown-it refuses ``javascript:``, ``data:``
  and the like in links.
- :func:`html_document` then cleans the whole with nh3 (ammonia): an allow-list of the elements a report uses,
  ``href`` only on links and only ``http``, ``https`` or ``mailto`` (no relative URL, which JupyterLab would open
  in itself), ``rel="noopener noreferrer nofollow"``, ``style`` only for a table column's ``text-align``, classes
  only ours, comments dropped, and ``<script>``/``<style>`` dropped with their content. No ``src`` survives.

The price is that a saved notebook holds each report twice (markdown and HTML).
"""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import urlsplit

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

__all__ = [
    "MATH_IGNORE",
    "code_block",
    "code_span",
    "document",
    "html_code",
    "html_document",
    "html_markdown",
    "html_text",
    "inline",
    "literal",
]

_SPECIAL = re.compile(r"""[\\`*_{}\[\]()<>#+\-.!|~&$=:@^]""")
"""ASCII punctuation with a meaning somewhere in CommonMark or GFM (or JupyterLab's ``$`` math)."""
_INLINE_SPECIAL = re.compile(r"""[\\`*_\[\]<&~|$:@]|(?<=[wW]{3})\.""")
"""The same, for text inside a line (a table cell, a title): only what forms an inline construct there (emphasis,
code, links, images, HTML, entities, strikethrough, cell borders, math, autolinks: ``www.`` and ``scheme:``)."""
_REFERENCES = {"\\": "&#92;", "@": "&#64;"}
MATH_IGNORE = "tex2jax_ignore mathjax_ignore"
"""The classes of :func:`document`'s ``<div>``: MathJax 2 and 3 typeset nothing inside it."""


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _REFERENCES.get(char) or "\\" + char


_LEADING = re.compile(r"^[ \t]+")
_NBSP = "\u00a0"


def _lines(text: str) -> list[str]:
    """``text`` split at every CommonMark line ending (``\\r\\n``, ``\\r``, ``\\n``), NUL made U+FFFD as
    CommonMark does."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd").split("\n")


def _escaped(line: str) -> str:
    """One line, every special character escaped, leading white space as no-break spaces, trailing dropped."""
    line = line.rstrip(" \t")
    indent = _LEADING.match(line)
    prefix = ""
    if indent is not None:
        prefix = indent.group().replace("\t", "    ").replace(" ", _NBSP)
        line = line[indent.end() :]
    return prefix + _SPECIAL.sub(_escape, line)


def literal(text: str) -> str:
    """Markdown that renders as exactly ``text`` (see the module docstring): its lines as hard line breaks, its
    blank lines as paragraph breaks. It forms no block but paragraphs, so it may follow ``**label:** `` or be
    quoted with ``> `` line by line."""
    out: list[str] = []
    for line in _lines(text):
        escaped = _escaped(line)
        if not escaped.strip(" "):
            if out and out[-1] != "":
                out.append("")
            continue
        if out and out[-1] != "":
            out[-1] += "\\"  # a hard line break (never at the end of a paragraph, where it would show)
        out.append(escaped)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out)


def inline(text: str) -> str:
    """``text`` on one line (line breaks as spaces), escaped as :func:`literal`: for a table cell or a title."""
    return _INLINE_SPECIAL.sub(_escape, " ".join(part.strip(" \t") for part in _lines(text)).strip())


def code_block(text: str, info: str = "") -> str:
    """``text`` as a fenced code block (``info``: the language, ours) that no line of it can close. Starts and
    ends a line: the caller puts it on lines of its own."""
    body = "\n".join(_lines(text))
    fence = "```"
    while fence in body:
        fence += "`"
    return f"{fence}{info}\n{body}\n{fence}"


def code_span(text: str, *, in_table: bool = False) -> str:
    """``text`` (one line) as an inline code span that no backtick in it can close; ``in_table``: in a GFM table
    cell, whose borders are found before code spans: text with a pipe is then :func:`inline` text instead (GFM
    reads an escaped pipe in a span as a pipe, mistune keeps the backslash)."""
    body = " ".join(_lines(text))
    if in_table and "|" in body:
        return inline(text)
    ticks = "`"
    while ticks in body:
        ticks += "`"
    pad = " " if body.startswith(("`", " ")) or body.endswith(("`", " ")) else ""
    return f"{ticks}{pad}{body}{pad}{ticks}"


def document(markdown: str) -> str:
    """A whole output built from the functions above, in the ``<div>`` MathJax leaves alone (blank lines around
    the markdown, so it is parsed as markdown inside the block)."""
    return f'<div class="{MATH_IGNORE}">\n\n{markdown}\n\n</div>'


# -- text/html -------------------------------------------------------------------------------------------------

_TAGS = {"div", "p", "br", "strong", "em", "code", "pre", "blockquote", "ul", "ol", "li", "hr", "del", "s", "a",
         "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td"}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"style"}, "td": {"style"}}
_CLASSES = {"div": set(MATH_IGNORE.split())}


def _html_escaped(text: str) -> str:
    """Escaped, NUL as U+FFFD (the HTML parser would drop it; markdown shows U+FFFD)."""
    return html.escape(text.replace("\0", "\ufffd"))


def html_text(text: str) -> str:
    """Untrusted text as HTML text: escaped, line breaks as ``<br>``."""
    return _html_escaped(text).replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>\n")


def html_code(text: str) -> str:
    """Untrusted text as a code block."""
    return f"<pre><code>{_html_escaped(text)}</code></pre>"


def _image(self: Any, tokens: Any, index: int, options: Any, env: Any) -> str:
    """A markdown image as a link to it (a remote image never loads from a static page), or as its text."""
    token = tokens[index]
    src = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env)
    label = f"image: {alt}" if alt else "image"
    host = urlsplit(src).hostname if src.startswith(("http://", "https://")) else None
    if host:
        return f'<a href="{escapeHtml(src)}">[{escapeHtml(label)}, from {escapeHtml(host)}: not loaded]</a>'
    return f"[{escapeHtml(label)}: not shown]"


_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_MARKDOWN.enable(["table", "strikethrough"])
_MARKDOWN.add_render_rule("image", _image)


def html_markdown(text: str) -> str:
    """The model's markdown, formatted: raw HTML in it stays text, images become links (see the module
    docstring)."""
    return str(_MARKDOWN.render(text))


def html_document(body: str) -> str:
    """A whole output built from the functions above (and our own structure), cleaned by nh3 and put in the
    ``<div>`` MathJax leaves alone."""
    cleaned = nh3.clean(
        f'<div class="{MATH_IGNORE}">\n{body}\n</div>',
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        allowed_classes=_CLASSES,
        url_schemes={"http", "https", "mailto"},
        url_relative="deny",
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
        strip_comments=True,
    )
    return str(cleaned)
