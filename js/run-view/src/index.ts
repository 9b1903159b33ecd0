// The run widget's front end (anywidget ESM). Python sends batches of operations; a new view asks for a
// snapshot (the operation log replayed). Operations only record what changed; the page is drawn once per
// animation frame, at a cost that does not grow with the transcript: markdown is rendered block by block
// (markdown/stream.ts), tool output and thinking are appended, and the event log keeps its last rows.
import "./run_view.css";
import { el, FollowBottom } from "./dom";
import { EventLog } from "./eventLog";
import { MessageView, sanitize } from "./message";
import { loadRemoteImage } from "./markdown/sanitize";
import { isBatch, retryAt, STATE_CLASS, type Model, type Op } from "./protocol";
import { ToolPanel } from "./toolPanel";
import { TreePanel } from "./tree";
import { warmUp } from "./warmUp";

/** Time one frame may spend catching up on a long backlog (a snapshot of a long run) before yielding. */
const FRAME_BUDGET_MS = 12;

interface Painter {
  paint(): boolean | void;
}

function render({ model, el: root }: { model: Model; el: HTMLElement }): () => void {
  root.classList.add("pi-run");
  root.addEventListener("click", loadRemoteImage); // an image held back by the sanitiser loads on a click
  const title = el("span", "pi-run-title");
  const state = el("span", STATE_CLASS);
  const usage = el("span", "pi-run-usage");
  const header = el("div", "pi-run-header");
  header.append(title, state, usage);
  const retry = el("div", "pi-run-retry");
  const transcript = el("div", "pi-run-transcript");
  const queue = el("div", "pi-run-queue");
  const log = new EventLog();
  const side = el("div", "pi-run-side");
  side.append(queue, el("div", "pi-run-log-title", "Event log"), log.element);
  const body = el("div", "pi-run-body");
  body.append(transcript, side);
  const tree = new TreePanel(
    (entry) => model.send({ type: "fork", entry }),
    () => model.send({ type: "tree" }),
  );
  root.append(header, retry, body, tree.element);
  const followTranscript = new FollowBottom(transcript);
  const followSide = new FollowBottom(side);
  followSide.watch(queue);
  followSide.watch(log.element);

  let messages = new Map<number, MessageView>();
  let tools = new Map<string, ToolPanel>();
  /** A note of a running tool call shown on the status line (its code is stuck in a C call), or "". */
  let note = "";
  const dirty = new Set<Painter>();
  let frame = 0;

  function reset(): void {
    messages = new Map();
    tools = new Map();
    dirty.clear();
    followTranscript.unwatchAll();
    transcript.replaceChildren();
    log.reset();
    if (note) showNote();
  }

  function paint(): void {
    frame = 0;
    const deadline = performance.now() + FRAME_BUDGET_MS;
    for (const item of [...dirty]) {
      if (performance.now() > deadline) break;
      if (!item.paint()) dirty.delete(item);
    }
    followTranscript.added();
    followSide.added();
    if (dirty.size) schedule();
  }

  function schedule(): void {
    if (!frame) frame = requestAnimationFrame(paint);
  }

  function touch(item: Painter): void {
    dirty.add(item);
    schedule();
  }

  function apply(op: Op): void {
    switch (op.op) {
      case "message": {
        const message = new MessageView(op.role, op.text ?? "");
        transcript.append(message.element);
        followTranscript.watch(message.element);
        messages.set(op.id, message);
        touch(message);
        break;
      }
      case "append":
      case "thinking": {
        const message = messages.get(op.id);
        if (!message) break;
        if (op.op === "append") message.appendText(op.text);
        else message.appendThinking(op.text);
        touch(message);
        break;
      }
      case "status":
        messages.get(op.id)?.setStatus(op.stop_reason, op.error);
        break;
      case "tool": {
        const panel = new ToolPanel(op.name, op.args, undefined, op.preview ?? "", op.syntax ?? "");
        transcript.append(panel.element);
        followTranscript.watch(panel.element);
        tools.set(op.call, panel);
        break;
      }
      case "tool_output":
      case "tool_append":
      case "tool_end": {
        const panel = tools.get(op.call);
        if (!panel) break;
        if (op.op === "tool_end") {
          panel.end(op.text, op.is_error);
          showNote();
        } else if (op.op === "tool_append") panel.appendOutput(op.text, op.total);
        else panel.setOutput(op.text);
        touch(panel);
        break;
      }
      case "tool_display":
        tools.get(op.call)?.addDisplay(op.mime, op.data);
        break;
      case "tool_clear":
        tools.get(op.call)?.clearDisplays();
        break;
      case "tool_note":
        tools.get(op.call)?.setNote(op.text);
        showNote();
        break;
      case "event":
        log.add(op);
        touch(log);
        break;
    }
  }

  /** The kernel's clock and the browser's when the last batch arrived (for the retry countdown). */
  let clock = { kernel: Date.now(), browser: Date.now() };

  function onMessage(message: unknown): void {
    if (!isBatch(message)) return;
    if (typeof message.now === "number") clock = { kernel: message.now, browser: Date.now() };
    if (message.type === "snapshot") reset();
    for (const op of message.ops) apply(op);
  }

  function showNote(): void {
    note = [...tools.values()].map((panel) => panel.noteText).find((text) => text) ?? "";
    showState();
  }

  function showState(): void {
    title.textContent = model.get("title");
    const value = model.get("state");
    state.textContent = note ? `${value} · ${note}` : value;
    state.className = `${STATE_CLASS} pi-state-${value.replace(/\s+/g, "-")}`;
    usage.textContent = model.get("usage");
  }

  function showQueue(): void {
    const items = model.get("queue");
    queue.replaceChildren();
    if (!items.length) return;
    queue.append(el("div", "pi-queue-title", "Queued"));
    for (const text of items) queue.append(el("div", "pi-queue-item", text));
  }

  function showTree(): void {
    tree.count(model.get("tree_prompts") ?? 0);
    tree.show(model.get("tree") ?? []);
  }

  let timer = 0;
  function showRetry(): void {
    const deadline = model.get("retry_deadline");
    if (!deadline) {
      retry.textContent = "";
      retry.style.display = "none";
      if (timer) window.clearInterval(timer);
      timer = 0;
      return;
    }
    retry.style.display = "";
    const left = Math.max(0, (retryAt(deadline, clock.kernel, clock.browser) - Date.now()) / 1000);
    retry.textContent = `⟳ retrying in ${left.toFixed(1)} s — ${model.get("retry_text")}`;
    if (!timer) timer = window.setInterval(showRetry, 100);
  }

  const handlers: [string, (message: unknown) => void][] = [
    ["msg:custom", onMessage],
    ["change:state", showState],
    ["change:usage", showState],
    ["change:title", showState],
    ["change:queue", showQueue],
    ["change:tree", showTree],
    ["change:tree_prompts", showTree],
    ["change:retry_deadline", showRetry],
    ["change:retry_text", showRetry],
  ];
  for (const [event, handler] of handlers) model.on(event, handler);
  showState();
  showQueue();
  showTree();
  showRetry();
  model.send({ type: "hello" });
  warmUp(sanitize);
  return () => {
    if (timer) window.clearInterval(timer);
    if (frame) cancelAnimationFrame(frame);
    for (const [event, handler] of handlers) model.off(event, handler);
  };
}

export default { render };
