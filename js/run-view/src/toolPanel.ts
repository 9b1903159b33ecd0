// A tool call's panel: its arguments, its output as it streams (appended, not replaced), its result.
import { el, FollowBottom } from "./dom";

export class ToolPanel {
  readonly element = el("details", "pi-tool");
  private readonly output = el("pre", "pi-tool-output");
  /** the text, in a block inside the scrolling `pre` whose growth the browser reports */
  private readonly lines = el("code", "pi-tool-text");
  private readonly result = el("div", "pi-tool-result");
  private readonly follow = new FollowBottom(this.output);
  /** the output text on the page, and the text to show at the next paint */
  private shown = "";
  private text = "";

  constructor(name: string, args: string) {
    this.element.open = true;
    this.output.append(this.lines);
    this.follow.watch(this.lines);
    this.element.append(el("summary", "pi-tool-summary", `tool: ${name}`), el("pre", "pi-tool-args", args), this.output, this.result);
  }

  /** The tool's output so far (each update carries all of it, or the tail once it is truncated). */
  setOutput(text: string): void {
    this.text = text;
  }

  end(text: string, isError: boolean): void {
    this.text = text;
    this.result.textContent = isError ? "error" : "ok";
    this.element.classList.add(isError ? "pi-tool-error" : "pi-tool-ok");
  }

  paint(): void {
    if (this.text === this.shown) return;
    if (this.text.startsWith(this.shown)) this.lines.append(this.text.slice(this.shown.length));
    else this.lines.textContent = this.text;
    this.shown = this.text;
    this.follow.added();
  }
}
