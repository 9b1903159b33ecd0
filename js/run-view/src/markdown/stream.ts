// Markdown that grows at its end, rendered at a cost that does not grow with its length.
//
// The text is split into finished blocks, rendered and sanitised once (see boundary.ts for when a block is
// finished), and the open tail, re-rendered on each paint (its leading nodes that render the same stay on the
// page). A fenced code block that is still open is appended line by line (fence.ts). Reference definitions can
// change how earlier text renders (`[x]` above `[x]: /url`), so every block is rendered with the definitions
// known so far, and a block whose text mentions a definition that appears or changes is rendered again. The
// result equals one render of the whole text (test/markdown.test.ts checks this, cutting tricky texts at
// every position).
import { Lexer, Parser, walkTokens, type Links, type Token } from "marked";

import { finishedPrefix } from "./boundary";
import { OpenFence, opensFence } from "./fence";
import { options } from "./markedOptions";
import type { Sanitize } from "./sanitize";

export type { Sanitize };

/** Most characters lexed per paint while catching up (a snapshot of a long reply arrives in one piece). */
export const WINDOW = 32_768;
/** Finished blocks per group element. A browser lays out a changed element's children anew, so blocks are
 * grouped: each paint then lays out at most a group of blocks and a list of groups, not every block. */
export const GROUP = 48;

interface Block {
  raw: string;
  element: HTMLElement;
  /** whether the block may use reference links (code blocks never do) */
  references: boolean;
  /** its text as marked compares link labels, computed when first needed */
  labels?: string;
}

export class MarkdownStream {
  /** the text not yet in a finished block (finished text is not kept: its blocks are on the page) */
  private text = "";
  /** whether text arrived since the last render */
  private changed = false;
  private readonly blocks: Block[] = [];
  /** definitions in finished blocks (the first of a label wins, as in marked) */
  private readonly finishedLinks: Links = Object.create(null);
  /** definitions every finished block is currently rendered with */
  private shownLinks: Links = Object.create(null);
  private fence: OpenFence | null = null;
  private group: HTMLElement | null = null;
  private grouped = 0;
  private readonly tail: HTMLElement;
  /** where the tail's HTML is parsed before its new nodes move to the page (see showTail) */
  private parser: HTMLElement | null = null;
  private carriageReturn = false;

  constructor(
    private readonly root: HTMLElement,
    private readonly sanitize: Sanitize,
    private readonly window = WINDOW,
  ) {
    this.tail = this.element("pi-md-tail");
    root.append(this.tail);
  }

  /** Add text (nothing is drawn until `render`). Line endings are normalised as marked does. */
  append(delta: string): void {
    if (this.carriageReturn && delta.startsWith("\n")) delta = delta.slice(1);
    this.carriageReturn = delta.endsWith("\r");
    this.text += delta.replace(/\r\n?/g, "\n").replace(/\0/g, "");
    this.changed = true;
  }

  /** Draw what arrived since the last call; true when text is left for another call (catching up). */
  render(): boolean {
    if (!this.changed) return false;
    let lexAll = false;
    for (;;) {
      if (this.fence !== null) {
        const { used, closed } = this.fence.advance(this.text);
        this.text = this.text.slice(used);
        if (!closed) return this.done(false);
        this.blocks.push({ raw: "", element: this.fence.element, references: false });
        this.fence = null;
        continue;
      }
      if (this.openFence()) continue;
      const more = !lexAll && this.text.length > this.window;
      const source = more ? this.text.slice(0, this.window) : this.text;
      const lexer = new Lexer(options);
      Object.assign(lexer.tokens.links, this.finishedLinks);
      const tokens = lexer.lex(source);
      const cut = finishedPrefix(source, tokens);
      if (cut.count > 0) this.finish(source.slice(0, cut.offset), tokens.slice(0, cut.count));
      this.showLinks(lexer.tokens.links);
      if (cut.count === 0 && more) {
        lexAll = true; // one open block longer than the window
        continue;
      }
      if (cut.count > 0 && opensFence(this.text)) continue;
      this.showTail(this.sanitize(Parser.parse(tokens.slice(cut.count), options)));
      return this.done(more);
    }
  }

  /** Start appending a fenced code block if one opens where the unfinished text starts. */
  private openFence(): boolean {
    const fence = opensFence(this.text);
    if (fence === null) return false;
    this.fence = new OpenFence(fence, this.block(), this.sanitize);
    this.text = this.text.slice(fence[0].length);
    this.tail.replaceChildren();
    return true;
  }

  /** Show `html` as the open tail, keeping the tail's leading nodes that it renders the same: the blocks
   * before the one still growing keep their layout and paint instead of being rebuilt on every paint. */
  private showTail(html: string): void {
    // parsed as `tail.innerHTML = html` would (a div's children), in a document that loads and runs nothing
    this.parser ??= this.root.ownerDocument.implementation.createHTMLDocument("").createElement("div");
    this.parser.innerHTML = html;
    const next = this.parser.childNodes;
    const shown = this.tail.childNodes;
    let same = 0;
    while (same < next.length && same < shown.length && shown[same].isEqualNode(next[same])) same++;
    while (shown.length > same) this.tail.lastChild!.remove();
    this.tail.append(...[...next].slice(same));
    this.parser.replaceChildren();
  }

  private done(more: boolean): boolean {
    this.changed = more;
    return more;
  }

  private element(className: string): HTMLElement {
    const element = this.root.ownerDocument.createElement("div");
    element.className = className;
    return element;
  }

  /** A new block element, placed after the finished ones. */
  private block(): HTMLElement {
    if (this.group === null || this.grouped === GROUP) {
      this.group = this.element("pi-md-group");
      this.grouped = 0;
      this.root.insertBefore(this.group, this.tail);
    }
    this.grouped++;
    return this.group.appendChild(this.element("pi-md-block"));
  }

  private finish(raw: string, tokens: Token[]): void {
    walkTokens(tokens, (token) => {
      if (token.type === "def" && !(token.tag in this.finishedLinks)) {
        this.finishedLinks[token.tag] = { href: token.href, title: token.title };
      }
    });
    const element = this.block();
    element.innerHTML = this.sanitize(Parser.parse(tokens, options));
    this.blocks.push({ raw, element, references: raw.includes("]") });
    this.text = this.text.slice(raw.length);
  }

  /** Render again the finished blocks that mention a label whose definition is not what they show. */
  private showLinks(links: Links): void {
    const changed = changedLabels(this.shownLinks, links);
    if (changed.length === 0) return;
    this.shownLinks = { ...links };
    for (const block of this.blocks) {
      if (!block.references) continue;
      block.labels ??= label(block.raw);
      const labels = block.labels;
      if (!changed.some((name) => labels.includes(name))) continue;
      const lexer = new Lexer(options);
      Object.assign(lexer.tokens.links, links);
      block.element.innerHTML = this.sanitize(Parser.parse(lexer.lex(block.raw), options));
    }
  }
}

/** Text normalised as marked normalises link labels, so that a label is found in it with `includes`. */
function label(text: string): string {
  return text.replace(/\s+/g, " ").toLowerCase().toUpperCase().toLowerCase();
}

function changedLabels(before: Links, after: Links): string[] {
  const names = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...names].filter(
    (name) => before[name]?.href !== after[name]?.href || before[name]?.title !== after[name]?.title,
  );
}
