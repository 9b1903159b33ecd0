// One transcript message: role, thinking (plain text, appended), body (markdown, or plain text for the
// user's own words) and stop status.
import DOMPurify from "dompurify";

import { el } from "./dom";
import { MarkdownStream } from "./markdown/stream";
import { sanitizer } from "./markdown/sanitize";

export const sanitize = sanitizer(DOMPurify);

export class MessageView {
  readonly element: HTMLDivElement;
  private readonly thinking = el("div", "pi-msg-thinking");
  private readonly body = el("div", "pi-msg-body");
  private readonly status = el("div", "pi-msg-status");
  private readonly markdown: MarkdownStream | null;
  private pendingThinking = "";
  private pendingText = "";

  constructor(role: string, text: string) {
    this.element = el("div", `pi-msg pi-msg-${role}`);
    this.element.append(el("div", "pi-msg-role", role), this.thinking, this.body, this.status);
    this.thinking.style.display = "none";
    this.markdown = role === "user" ? null : new MarkdownStream(this.body, sanitize);
    this.appendText(text);
  }

  appendText(text: string): void {
    if (this.markdown) this.markdown.append(text);
    else this.pendingText += text;
  }

  appendThinking(text: string): void {
    this.pendingThinking += text;
  }

  setStatus(stopReason: string, error: string | null | undefined): void {
    if (stopReason !== "error" && stopReason !== "aborted" && stopReason !== "length") return;
    this.status.textContent = `[${stopReason}${error ? `: ${error}` : ""}]`;
    this.element.classList.add(`pi-msg-${stopReason}`);
  }

  /** Draw what arrived; true when there is more to draw at the next frame (a long backlog). */
  paint(): boolean {
    if (this.pendingThinking) {
      this.thinking.append(this.pendingThinking);
      this.thinking.style.display = "";
      this.pendingThinking = "";
    }
    if (this.pendingText) {
      this.body.append(this.pendingText);
      this.pendingText = "";
    }
    return this.markdown?.render() ?? false;
  }
}
