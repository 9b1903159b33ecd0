// The run widget's front end (anywidget ESM). Python sends batches of operations; a new view asks for a
// snapshot (the operation log replayed). Model output is rendered as markdown and sanitised before use.
import DOMPurify from "dompurify";
import { marked } from "marked";

marked.setOptions({ gfm: true, breaks: true });

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function markdown(text) {
  return DOMPurify.sanitize(marked.parse(text || ""));
}

function seconds(ms) {
  return `${(ms / 1000).toFixed(3)}`;
}

function render({ model, el: root }) {
  root.classList.add("pi-run");
  const header = el("div", "pi-run-header");
  const title = el("span", "pi-run-title");
  const state = el("span", "pi-run-state");
  const usage = el("span", "pi-run-usage");
  const retry = el("div", "pi-run-retry");
  header.append(title, state, usage);
  const body = el("div", "pi-run-body");
  const transcript = el("div", "pi-run-transcript");
  const side = el("div", "pi-run-side");
  const queue = el("div", "pi-run-queue");
  const logTitle = el("div", "pi-run-log-title", "Event log");
  const log = el("table", "pi-run-log");
  side.append(queue, logTitle, log);
  body.append(transcript, side);
  root.append(header, retry, body);

  let messages = new Map();
  let tools = new Map();
  const dirty = new Set();
  let frame = 0;

  function reset() {
    messages = new Map();
    tools = new Map();
    dirty.clear();
    transcript.replaceChildren();
    log.replaceChildren();
  }

  function paint() {
    frame = 0;
    for (const entry of dirty) {
      entry.thinkingNode.textContent = entry.thinking;
      entry.thinkingNode.style.display = entry.thinking ? "" : "none";
      entry.body.innerHTML = entry.role === "user" ? "" : markdown(entry.text);
      if (entry.role === "user") entry.body.textContent = entry.text;
    }
    dirty.clear();
    const atBottom = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
    if (atBottom) transcript.scrollTop = transcript.scrollHeight;
  }

  function touch(entry) {
    dirty.add(entry);
    if (!frame) frame = requestAnimationFrame(paint);
  }

  function apply(op) {
    switch (op.op) {
      case "message": {
        const node = el("div", `pi-msg pi-msg-${op.role}`);
        const who = el("div", "pi-msg-role", op.role);
        const thinkingNode = el("div", "pi-msg-thinking");
        const bodyNode = el("div", "pi-msg-body");
        const status = el("div", "pi-msg-status");
        node.append(who, thinkingNode, bodyNode, status);
        transcript.append(node);
        const entry = { role: op.role, text: op.text || "", thinking: "", body: bodyNode, thinkingNode, status, node };
        messages.set(op.id, entry);
        touch(entry);
        break;
      }
      case "append":
      case "thinking": {
        const entry = messages.get(op.id);
        if (!entry) break;
        if (op.op === "append") entry.text += op.text;
        else entry.thinking += op.text;
        touch(entry);
        break;
      }
      case "status": {
        const entry = messages.get(op.id);
        if (!entry) break;
        if (op.stop_reason === "error" || op.stop_reason === "aborted" || op.stop_reason === "length") {
          entry.status.textContent = `[${op.stop_reason}${op.error ? `: ${op.error}` : ""}]`;
          entry.node.classList.add(`pi-msg-${op.stop_reason}`);
        }
        break;
      }
      case "tool": {
        const panel = el("details", "pi-tool");
        panel.open = true;
        const summary = el("summary", "pi-tool-summary", `tool: ${op.name}`);
        const args = el("pre", "pi-tool-args", op.args);
        const output = el("pre", "pi-tool-output");
        const result = el("div", "pi-tool-result");
        panel.append(summary, args, output, result);
        transcript.append(panel);
        tools.set(op.call, { panel, summary, output, result });
        break;
      }
      case "tool_output": {
        const tool = tools.get(op.call);
        if (tool) tool.output.textContent = op.text;
        break;
      }
      case "tool_end": {
        const tool = tools.get(op.call);
        if (!tool) break;
        tool.output.textContent = op.text;
        tool.result.textContent = op.is_error ? "error" : "ok";
        tool.panel.classList.add(op.is_error ? "pi-tool-error" : "pi-tool-ok");
        break;
      }
      case "event": {
        const row = el("tr", `pi-log-row pi-log-${op.label}`);
        row.append(el("td", "pi-log-t", seconds(op.t)), el("td", "pi-log-label", op.label), el("td", "pi-log-detail", op.detail));
        log.append(row);
        break;
      }
      default:
        break;
    }
  }

  function onMessage(msg) {
    if (!msg || (msg.type !== "batch" && msg.type !== "snapshot")) return;
    if (msg.type === "snapshot") reset();
    for (const op of msg.ops) apply(op);
  }

  function showState() {
    title.textContent = model.get("title");
    const value = model.get("state");
    state.textContent = value;
    state.className = `pi-run-state pi-state-${value.replace(/\s+/g, "-")}`;
    usage.textContent = model.get("usage");
  }

  function showQueue() {
    const items = model.get("queue");
    queue.replaceChildren();
    if (!items.length) return;
    queue.append(el("div", "pi-queue-title", "Queued"));
    for (const text of items) queue.append(el("div", "pi-queue-item", text));
  }

  let timer = 0;
  function showRetry() {
    const deadline = model.get("retry_deadline");
    if (!deadline) {
      retry.textContent = "";
      retry.style.display = "none";
      if (timer) clearInterval(timer);
      timer = 0;
      return;
    }
    retry.style.display = "";
    const left = Math.max(0, (deadline - Date.now()) / 1000);
    retry.textContent = `⟳ retrying in ${left.toFixed(1)} s — ${model.get("retry_text")}`;
    if (!timer) timer = setInterval(showRetry, 100);
  }

  model.on("msg:custom", onMessage);
  model.on("change:state", showState);
  model.on("change:usage", showState);
  model.on("change:title", showState);
  model.on("change:queue", showQueue);
  model.on("change:retry_deadline", showRetry);
  model.on("change:retry_text", showRetry);
  showState();
  showQueue();
  showRetry();
  model.send({ type: "hello" });
  return () => {
    if (timer) clearInterval(timer);
    if (frame) cancelAnimationFrame(frame);
    model.off("msg:custom", onMessage);
  };
}

export default { render };
