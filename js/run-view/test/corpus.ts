// Markdown that is hard to render piece by piece: each text is cut at every position by the tests.
export const TRICKY: Record<string, string> = {
  prose: "# Title\n\nSome *emphasis* and **strong**\ntext with a break.\n\nSecond paragraph.\n",
  setext: "Heading one\n===\n\nHeading\ntwo\n---\n\npara\n***\nmore *stars*\n",
  fences:
    "Intro:\n```python\ndef f(x):\n    return x\n\n\n```\n\n~~~~ js\n~~~\nnot closed yet\n~~~~~\n\n```\n```\n\n" +
    "```\n\n```\n  ```indented\n  code\n```\nafter\n\n````md\n```\ninner\n```\n````\n\n```unclosed\ntail\n",
  fenceInfoBackticks: "``` a`b\nnot a fence\n```\n\n```\nx\n```~~\ny\n",
  lists:
    "- one\n- two\n\n- three (now loose)\n\nafter\n\n1. first\n2. second\n\n3. third\n10. tenth\n\n" +
    "* a\n\n  continued\n\n    indented code in item\n\n*\n\n+ plus\n- dash\n",
  nested: "1. outer\n   - inner\n\n     inner para\n2) other\n\n> quote\nlazy\n\n> - q list\n>\n> more\n\nend",
  tables:
    "| a | b |\n|---|:-:|\n| 1 | 2 |\nlazy row\n\ntext\n| x | y |\n| - | - |\n| 3 | 4 |\n\n" +
    "| only header |\n\n|a|\n|-|\n",
  references:
    "See [the docs][docs] and [Docs] and ![img][pic].\n\n[Later] too.\n\n[docs]: https://example.com/d 'Title'\n" +
    "[pic]: <https://example.com/p.png>\n\n[later]:\n  https://example.com/l\n  \"spread\"\n\n[docs]: https://other\n\n" +
    "[broken]: https://x.example bad title\n\n[broken]\n",
  html:
    "<details>\n<summary>More</summary>\n\nHidden *markdown*\n\n- list\n\n</details>\n\nAfter.\n\n" +
    "<!-- a comment\n\nspanning -->\n\n<div>\nblock\n</div>\n\nInline <b>bold\n\nstill bold?</b>\n\n" +
    "<span>x</span>\n\n<custom-el>\n\ny\n\n</custom-el>\n\n<br>\n\n<script>alert(1)</script>\n\n" +
    "<img src=x onerror=alert(1)>\n\n<pre>\n\npre text\n\n</pre>\n",
  indentedCode: "para\n\n    code\n\n    more code\n\n  not code\n\n\tTabbed\n",
  breaks: "line one\nline two  \nline three\\\nline four\n\n---\n\n___\n\n* * *\n",
  emphasis: "*open\n\nclose*\n\n**a** _b_ ~~c~~ `code *x*` <https://a.example> www.b.example\n",
  crlf: "a\r\nb\r\n\r\n```\r\nx\r\n```\r\n",
  hrVsList: "- a\n\n-\n\n--\n\n---\n\n- - -\n",
  ordered: "1. a\n\n2\n\n1. b\n\n2.5 apples\n\n3) c\n",
  blankLines: "\n\n\na\n\n\n\n\nb\n   \n\t\nc",
};

// Lines that change how their neighbours parse; random texts are drawn from them.
const LINES = [
  "", "", "", "para text", "*em* and **strong", "closing** here", "# heading", "Setext", "===", "---", "***",
  "- item", "- [ ] task", "* star item", "  continued item", "    indented code", "1. first", "2. second", "10) ten",
  "> quote", "> > nested", "| a | b |", "|---|---|", "| 1 | 2 |", "```", "```js", "~~~", "````", "  ```",
  "[ref]: https://example.com/r", "[Ref]", "[ref][]", "![ref]", "[other]: <https://o.example> \"t\"", "[other]",
  "<details>", "</details>", "<div>", "</div>", "<!-- c", "-->", "<b>bold", "</b>", "<custom-tag>",
  "text with `code`", "a  ", "trailing\\", "\t tab", "www.example.com", "<https://x.example>", "&amp; &copy;",
];

/** A random markdown text of `lines` lines from LINES (seeded, so a failure can be replayed). */
export function randomText(seed: number, lines: number): string {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return Array.from({ length: lines }, () => LINES[Math.floor(next() * LINES.length)]).join("\n");
}
