// A tool call's panel: its arguments, its output as it streams (appended, not replaced, and only its last
// TOOL_TAIL_CHARS characters kept on the page), rich outputs of its code, a note while it runs, its result.
import DOMPurify from "dompurify";

import { el, FollowBottom } from "./dom";
import { codeBlock } from "./highlight";
import { sanitizer, type Sanitize } from "./markdown/sanitize";
import { TOOL_TAIL_CHARS } from "./protocol";

const pageSanitize = sanitizer(DOMPurify);
const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif"]);
const BASE64 = /^[A-Za-z0-9+/=\s]*$/;

/** A <pre> that text is appended to, keeping its last `limit` characters (a text node per piece: dropping the
 * oldest costs what was appended, never the whole text). */
export class TailText {
  private readonly nodes: Text[] = [];
  private length = 0;
  /** characters written, including those no longer shown */
  private total = 0;

  constructor(
    readonly element: HTMLElement,
    private readonly notice: HTMLElement,
    private readonly limit = TOOL_TAIL_CHARS,
  ) {}

  set(text: string): void {
    this.element.replaceChildren();
    this.nodes.length = 0;
    this.length = 0;
    this.total = 0;
    this.append(text);
  }

  /** Append `text`; `total` (if known) counts every character written so far, shown or not. */
  append(text: string, total?: number): void {
    const piece = text.length > this.limit ? text.slice(-this.limit) : text;
    if (piece) {
      const node = document.createTextNode(piece);
      this.element.append(node);
      this.nodes.push(node);
      this.length += piece.length;
    }
    this.total = total ?? this.total + text.length;
    while (this.length > this.limit) {
      const first = this.nodes[0];
      const excess = this.length - this.limit;
      if (first.length <= excess) {
        first.remove();
        this.nodes.shift();
        this.length -= first.length;
      } else {
        first.deleteData(0, excess);
        this.length -= excess;
      }
    }
    const hidden = this.total - this.length;
    this.notice.textContent = hidden > 0 ? `… ${hidden.toLocaleString()} earlier characters not shown` : "";
    this.notice.style.display = hidden > 0 ? "" : "none";
  }

  get text(): string {
    return this.element.textContent ?? "";
  }
}

/** The element for a rich output: a sanitised HTML or SVG fragment, an image, or text. */
export function displayElement(mime: string, data: string, sanitize: Sanitize): HTMLElement {
  if (IMAGE_TYPES.has(mime) && BASE64.test(data)) {
    const image = el("img", "pi-tool-image");
    image.src = `data:${mime};base64,${data.replace(/\s/g, "")}`;
    return image;
  }
  if (mime === "text/html" || mime === "image/svg+xml") {
    const box = el("div", "pi-tool-html");
    box.innerHTML = sanitize(data);
    return box;
  }
  return el("pre", "pi-tool-plain", data);
}

export class ToolPanel {
  readonly element = el("details", "pi-tool");
  private readonly note = el("div", "pi-tool-note");
  private readonly notice = el("div", "pi-tool-notice");
  private readonly output = el("pre", "pi-tool-output");
  /** the text, in a block inside the scrolling `pre` whose growth the browser reports */
  private readonly lines = el("code", "pi-tool-text");
  private readonly displays = el("div", "pi-tool-displays");
  private readonly result = el("div", "pi-tool-result");
  private readonly follow = new FollowBottom(this.output);
  private readonly tail = new TailText(this.lines, this.notice);
  /** The last whole output set (a tool's tail snapshot), to append only what a new one adds; null after live
   * appends. */
  private shown: string | null = "";
  /** To draw at the next paint: a whole output to set, then pieces to append (with the total after each). */
  private pendingSet: string | null = null;
  private pendingAppends: [string, number][] = [];
  /** The note on the running call ("waiting for the code to return to Python"), or "". */
  noteText = "";

  /** `preview`: the call as its tool shows it (the code, the command line, the edit's diff), drawn as `syntax`
   * reads, with the arguments (JSON) one click away; without one, the arguments. */
  constructor(
    name: string,
    args: string,
    private readonly sanitize: Sanitize = pageSanitize,
    preview = "",
    syntax = "",
  ) {
    this.element.open = true;
    this.output.append(this.lines);
    this.follow.watch(this.lines);
    this.note.style.display = "none";
    this.notice.style.display = "none";
    this.element.append(el("summary", "pi-tool-summary", `tool: ${name}`), ...ToolPanel.call(args, preview, syntax));
    this.element.append(
      this.note,
      this.notice,
      this.output,
      this.displays,
      this.result,
    );
  }

  private static call(args: string, preview: string, syntax: string): HTMLElement[] {
    if (!preview) return [el("pre", "pi-tool-args", args)];
    const more = el("details", "pi-tool-args-box");
    more.append(el("summary", "pi-tool-args-summary", "arguments"), el("pre", "pi-tool-args", args));
    return [codeBlock(preview, syntax), more];
  }

  /** The tool's output so far (each update carries all of it, or the tail once it is truncated). */
  setOutput(text: string): void {
    this.pendingSet = text;
    this.pendingAppends = [];
  }

  /** Output the tool's code wrote while it runs; `total` counts every character written so far. */
  appendOutput(text: string, total: number): void {
    this.pendingAppends.push([text, total]);
  }

  /** A rich output of the tool's code (drawn at once: they are few). */
  addDisplay(mime: string, data: string): void {
    this.displays.append(displayElement(mime, data, this.sanitize));
  }

  /** clear_output() in the tool's code: the rich outputs shown so far go. */
  clearDisplays(): void {
    this.displays.replaceChildren();
  }

  setNote(text: string): void {
    this.noteText = text;
    this.note.textContent = text;
    this.note.style.display = text ? "" : "none";
  }

  end(text: string, isError: boolean): void {
    this.setOutput(text);
    this.setNote("");
    this.result.textContent = isError ? "error" : "ok";
    this.element.classList.add(isError ? "pi-tool-error" : "pi-tool-ok");
  }

  paint(): void {
    const text = this.pendingSet;
    if (text !== null) {
      this.pendingSet = null;
      if (this.shown !== null && text.startsWith(this.shown)) this.tail.append(text.slice(this.shown.length));
      else this.tail.set(text);
      this.shown = text;
    }
    if (this.pendingAppends.length) {
      for (const [piece, total] of this.pendingAppends) this.tail.append(piece, total);
      this.pendingAppends = [];
      this.shown = null;
    }
    this.follow.added();
  }
}
