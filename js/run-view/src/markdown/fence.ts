// A fenced code block still being streamed, appended to the page line by line instead of re-rendered.
//
// Only a fence whose opening line starts at column 0 takes this path (marked strips an opening fence's
// indentation from the content lines; that case is re-rendered with the rest of the open tail). The skeleton
// (`<pre><code class="language-…">`) comes from marked and the sanitiser, and the lines are text nodes, so
// the code element holds what marked would put there.
//
// A browser lays out one `<pre>` as one piece: appending a line to a 10,000-line block costs a layout of all
// of it. So the lines go into parts of PART_LINES lines, each its own `<pre><code>` with the same classes
// (styled to read as one block), and only the last part changes. When the fence closes, a block of at most
// MERGE_LINES lines is joined into the single `<pre><code>` a one-shot render gives; a longer block stays in
// parts (the same text, a different element structure: the one difference from a one-shot render).
import { Lexer, Parser } from "marked";

import { options } from "./markedOptions";
import type { Sanitize } from "./sanitize";

export const PART_LINES = 100;
export const MERGE_LINES = 300;

const OPENER = /^(`{3,}|~{3,})([^\n]*)\n/;

/** The opening line of a fence this path handles at the start of `text` (complete), or null. */
export function opensFence(text: string): RegExpExecArray | null {
  const first = text.charCodeAt(0);
  if (first !== 0x60 && first !== 0x7e) return null; // ` or ~
  const match = OPENER.exec(text.slice(0, 1024));
  return match === null || (match[1][0] === "`" && match[2].includes("`")) ? null : match;
}

export class OpenFence {
  private readonly closer: RegExp;
  private readonly parts: HTMLElement[];
  private lines = 0;
  private readonly partial: Text;

  /** The fence `opener` (from `opensFence`) drawn into `element`, empty. */
  constructor(
    opener: RegExpExecArray,
    readonly element: HTMLElement,
    sanitize: Sanitize,
  ) {
    this.closer = new RegExp(`^ {0,3}${opener[1]}${opener[1][0]}* *$`);
    element.innerHTML = sanitize(Parser.parse(Lexer.lex(opener[0], options), options));
    const code = element.querySelector("pre > code");
    if (code === null) throw new Error("the sanitiser dropped a fenced code block");
    this.parts = [code as HTMLElement];
    this.partial = element.ownerDocument.createTextNode("");
    code.append(this.partial);
  }

  /** Show the complete lines at the start of `text` (what follows the lines shown before); `used` is the
   * length of those lines, and of the closing line too once it came (then `closed`). */
  advance(text: string): { used: number; closed: boolean } {
    let from = 0;
    let scanned = 0;
    for (let newline = text.indexOf("\n"); newline !== -1; newline = text.indexOf("\n", scanned)) {
      if (this.closer.test(text.slice(scanned, newline))) {
        this.add(text.slice(from, scanned));
        this.finish();
        return { used: newline + 1, closed: true };
      }
      scanned = newline + 1;
      if (++this.lines % PART_LINES === 0) {
        this.add(text.slice(from, scanned));
        from = scanned;
        this.newPart();
      }
    }
    this.add(text.slice(from, scanned));
    this.showPartial(text.slice(scanned));
    return { used: scanned, closed: false };
  }

  private add(lines: string): void {
    if (lines) this.partial.before(lines);
  }

  private newPart(): void {
    const last = this.parts[this.parts.length - 1];
    const pre = last.parentElement!.cloneNode(false) as HTMLElement;
    const code = last.cloneNode(false) as HTMLElement;
    pre.classList.add("pi-code-part");
    pre.append(code);
    last.parentElement!.after(pre);
    code.append(this.partial);
    this.parts.push(code);
    this.element.classList.add("pi-code-parts");
  }

  /** The unfinished last line, shown as marked shows the end of an open fence: a closing fence (that a
   * newline will confirm) closes it, anything else is a line. */
  private showPartial(line: string): void {
    this.partial.data = line === "" || this.closer.test(line) ? "" : `${line}\n`;
  }

  /** Each part holds its lines; together, every line before the closing one: marked's text for the block. */
  private finish(): void {
    this.partial.remove();
    const [first, ...rest] = this.parts;
    if (this.lines <= MERGE_LINES) {
      for (const part of rest) {
        first.append(...part.childNodes);
        part.parentElement!.remove();
      }
      this.parts.length = 1;
      this.element.classList.remove("pi-code-parts");
    }
    for (const part of this.parts) part.normalize();
  }
}
