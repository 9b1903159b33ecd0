// Whether rendered HTML leaves elements open. Markdown that marked renders is always balanced, but raw HTML
// passes through: `<details>` on one block and `</details>` three blocks later, or a stray `<b>` that the HTML
// parser carries into the following paragraphs. Cutting the stream between such blocks and sanitising the
// pieces separately would build a different DOM than one parse of the whole text, so a block boundary only
// counts while nothing is open.

const VOID = new Set([
  "area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param", "source",
  "track", "wbr",
]);
// elements whose content is raw text up to their closing tag (no tags inside)
const RAW_TEXT = new Set(["script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript"]);

const START = /^<([a-zA-Z][^\t\n\f />]*)(?:[^>"']|"[^"]*"|'[^']*')*>/;
const END = /^<\/([a-zA-Z][^\t\n\f />]*)[^>]*>/;

/** Open elements after some HTML, fed piece by piece. A closing tag removes only its own element: a
 * formatting element closed implicitly (`<p><b>x</p>`) stays open, as the HTML parser would keep it. */
export class OpenElements {
  private readonly stack: string[] = [];

  get balanced(): boolean {
    return this.stack.length === 0;
  }

  feed(html: string): void {
    let at = html.indexOf("<");
    while (at !== -1) {
      at = this.tag(html, at);
      at = at === -1 ? -1 : html.indexOf("<", at);
    }
  }

  /** Consume the construct at `at` (a `<`); the offset after it, or -1 when the rest of `html` is swallowed. */
  private tag(html: string, at: number): number {
    const rest = html.slice(at, at + 4);
    if (rest.startsWith("<!--")) return this.until(html, at + 4, "-->", "!--");
    if (rest.startsWith("<!") || rest.startsWith("<?")) return this.until(html, at + 2, ">", "!");
    const text = html.slice(at);
    const end = END.exec(text);
    if (end) {
      const index = this.stack.lastIndexOf(end[1].toLowerCase());
      if (index !== -1) this.stack.splice(index, 1);
      return at + end[0].length;
    }
    const start = START.exec(text);
    if (!start) return at + 1;
    const name = start[1].toLowerCase();
    const after = at + start[0].length;
    if (VOID.has(name) || start[0].endsWith("/>")) return after;
    if (name === "plaintext") return this.open(name);
    if (RAW_TEXT.has(name)) return this.until(html, after, `</${name}`, name, true);
    this.stack.push(name);
    return after;
  }

  private until(html: string, from: number, close: string, name: string, caseless = false): number {
    const index = caseless ? html.toLowerCase().indexOf(close, from) : html.indexOf(close, from);
    if (index === -1) return this.open(name);
    return index + close.length;
  }

  private open(name: string): number {
    this.stack.push(name);
    return -1;
  }
}
