import assert from "node:assert/strict";
import { describe, it } from "node:test";

import createDOMPurify from "dompurify";
import { JSDOM } from "jsdom";

import { FollowBottom } from "../src/dom";
import { EventLog, PAGE, SHOWN } from "../src/eventLog";
import { sanitizer } from "../src/markdown/sanitize";
import { TOOL_TAIL_CHARS } from "../src/protocol";
import { ToolPanel } from "../src/toolPanel";

const { window } = new JSDOM("<!doctype html><body></body>");
Object.assign(globalThis, { document: window.document });
const sanitize = sanitizer(createDOMPurify(window as unknown as Parameters<typeof createDOMPurify>[0]));

describe("tool output", () => {
  it("is appended while each update extends the last, replaced when it does not", () => {
    const panel = new ToolPanel("bash", "{}");
    const output = panel.element.querySelector(".pi-tool-output .pi-tool-text")!;
    panel.setOutput("line 1\n");
    panel.paint();
    const first = output.firstChild;
    panel.setOutput("line 1\nline 2\n");
    panel.paint();
    assert.equal(output.firstChild, first, "the text already shown stays");
    assert.equal(output.childNodes.length, 2);
    assert.equal(output.textContent, "line 1\nline 2\n");
    panel.end("[truncated] line 2\nline 3\n", false); // the tool's tail moved on
    panel.paint();
    assert.equal(output.textContent, "[truncated] line 2\nline 3\n");
    assert.equal(panel.element.querySelector(".pi-tool-result")!.textContent, "ok");
  });
});

describe("live output of a tool's code", () => {
  const parts = (panel: ToolPanel) => ({
    output: panel.element.querySelector(".pi-tool-output")!,
    notice: panel.element.querySelector<HTMLElement>(".pi-tool-notice")!,
    note: panel.element.querySelector<HTMLElement>(".pi-tool-note")!,
    displays: panel.element.querySelector(".pi-tool-displays")!,
  });

  it("is appended, keeps its last TOOL_TAIL_CHARS characters and says how many it hides", () => {
    const panel = new ToolPanel("python", "{}");
    const { output, notice } = parts(panel);
    panel.appendOutput("first\n", 6);
    panel.paint();
    const first = output.firstChild;
    panel.appendOutput("second\n", 13);
    panel.paint();
    assert.equal(output.firstChild, first, "what is shown stays: appended, not replaced");
    assert.equal(output.textContent, "first\nsecond\n");
    assert.equal(notice.style.display, "none");
    const chunk = "x".repeat(10_000);
    let total = 13;
    for (let i = 0; i < 20; i++) {
      total += chunk.length;
      panel.appendOutput(chunk, total);
      panel.paint();
    }
    assert.equal(output.textContent!.length, TOOL_TAIL_CHARS);
    assert.ok(output.childNodes.length <= TOOL_TAIL_CHARS / chunk.length + 1, "the oldest pieces left the page");
    assert.equal(notice.textContent, `… ${(total - TOOL_TAIL_CHARS).toLocaleString()} earlier characters not shown`);
    panel.appendOutput("y".repeat(TOOL_TAIL_CHARS), total + 1_000_000); // the kernel dropped a flood's head
    panel.paint();
    assert.equal(output.textContent, "y".repeat(TOOL_TAIL_CHARS));
    assert.match(notice.textContent!, /earlier characters not shown/);
    panel.end("the result\n", false); // the result replaces the live text
    panel.paint();
    assert.equal(output.textContent, "the result\n");
    assert.equal(notice.style.display, "none");
  });

  it("shows rich outputs as such, sanitised", () => {
    const panel = new ToolPanel("python", "{}", sanitize);
    const { displays } = parts(panel);
    panel.addDisplay("text/html", '<table><tr><td>1</td></tr></table><script>window.bad = 1</script><img src=x onerror="window.bad=1">');
    panel.addDisplay("image/png", "iVBORw0KGgo=");
    panel.addDisplay("image/png", '"><script>');
    panel.addDisplay("text/plain", "<b>plain</b>");
    const [html, image, notImage, plain] = [...displays.children] as HTMLElement[];
    assert.ok(html.querySelector("table td"));
    assert.equal(html.querySelector("script"), null);
    assert.equal(html.querySelector("img"), null, "a remote (here relative) image waits for a click");
    assert.equal(html.querySelector("button.pi-remote-image")!.getAttribute("onerror"), null);
    assert.equal((image as HTMLImageElement).src, "data:image/png;base64,iVBORw0KGgo=");
    assert.equal(notImage.tagName, "PRE", "data that is not base64 is shown as text");
    assert.equal(plain.tagName, "PRE");
    assert.equal(plain.textContent, "<b>plain</b>");
    panel.end("done", false);
    panel.paint();
    assert.equal(displays.children.length, 4, "rich outputs stay after the call ends");
  });

  it("takes its rich outputs away on clear_output(), keeps its text", () => {
    const panel = new ToolPanel("python", "{}", sanitize);
    const { displays, output } = parts(panel);
    panel.appendOutput("printed\n", 8);
    panel.addDisplay("text/plain", "frame 1");
    panel.addDisplay("image/png", "iVBORw0KGgo=");
    panel.clearDisplays();
    panel.addDisplay("text/plain", "frame 2");
    panel.paint();
    assert.deepEqual([...displays.children].map((child) => child.textContent), ["frame 2"]);
    assert.equal(output.textContent, "printed\n");
  });

  it("shows a note while the code is stuck, until the call ends", () => {
    const panel = new ToolPanel("python", "{}");
    const { note } = parts(panel);
    panel.setNote("waiting for the code to return to Python");
    assert.equal(note.style.display, "");
    assert.equal(note.textContent, "waiting for the code to return to Python");
    panel.end("stopped", true);
    assert.equal(note.style.display, "none");
    assert.equal(panel.noteText, "");
  });
});

describe("event log", () => {
  const event = (i: number) => ({ op: "event" as const, t: i, label: i % 2 ? "turn_end" : "turn_start", detail: `turn ${i}` });
  const details = (log: EventLog) => [...log.element.querySelectorAll(".pi-log-detail")].map((td) => td.textContent);

  it(`keeps the last ${SHOWN} rows on the page, and shows earlier ones on request`, () => {
    const log = new EventLog();
    for (let i = 0; i < 10_000; i++) log.add(event(i));
    log.paint();
    assert.deepEqual(details(log), Array.from({ length: SHOWN }, (_, i) => `turn ${10_000 - SHOWN + i}`));
    assert.match(log.element.textContent!, /9,800 earlier events hidden/);
    for (let i = 10_000; i < 10_010; i++) log.add(event(i)); // more arrive: the oldest shown rows leave
    log.paint();
    assert.equal(details(log).length, SHOWN);
    assert.equal(details(log).at(-1), "turn 10009");
    const [more] = log.element.querySelectorAll("button");
    assert.equal(more.textContent, `Show ${PAGE.toLocaleString()} earlier`);
    (more as HTMLButtonElement).click();
    assert.equal(details(log).length, SHOWN + PAGE);
    assert.equal(details(log)[0], `turn ${10_010 - SHOWN - PAGE}`);
    const all = [...log.element.querySelectorAll("button")].find((b) => b.textContent === "Show all")!;
    all.click();
    assert.equal(details(log).length, 10_010);
    assert.equal(log.element.querySelector("button"), null);
    log.add(event(10_010)); // expanded, it keeps everything
    log.paint();
    assert.equal(details(log).length, 10_011);
  });
});

describe("following the bottom", () => {
  function scroller(): {
    element: HTMLElement;
    follow: FollowBottom;
    scroll: (top: number) => void;
    read: (top: number) => void;
    grow: (px: number) => void;
  } {
    const element = document.createElement("div");
    let height = 1000;
    let top = 0;
    Object.defineProperties(element, {
      scrollHeight: { get: () => height },
      clientHeight: { get: () => 400 },
      scrollTop: { get: () => top, set: (value: number) => void (top = Math.max(0, Math.min(value, height - 400))) },
    });
    const follow = new FollowBottom(element);
    const scroll = (value: number): void => {
      element.scrollTop = value;
      element.dispatchEvent(new window.Event("scroll"));
    };
    const read = (value: number): void => {
      element.dispatchEvent(new window.Event("wheel"));
      scroll(value);
    };
    return { element, follow, scroll, read, grow: (px) => void (height += px) };
  }

  it("keeps following when the page scrolls by itself", () => {
    const { element, follow, scroll, grow } = scroller();
    follow.follow();
    grow(300); // a new message is added before the scroll event fires
    scroll(element.scrollTop);
    follow.follow();
    assert.equal(element.scrollTop, 1300 - 400);
    grow(-200); // a placeholder above took its real, smaller height
    scroll(element.scrollTop - 200);
    grow(100);
    follow.follow();
    assert.equal(element.scrollTop, 1200 - 400);
  });

  it("stops when the reader scrolls up, and follows again at the bottom", () => {
    const { element, follow, read, grow } = scroller();
    follow.follow();
    read(100);
    grow(500);
    follow.follow();
    assert.equal(element.scrollTop, 100);
    read(1500 - 400);
    grow(500);
    follow.follow();
    assert.equal(element.scrollTop, 2000 - 400);
  });
});

describe("retry countdown", () => {
  it("counts the kernel's remaining time, whatever the browser's clock says", async () => {
    const { default: view } = await import("../src/index");
    const { retryAt } = await import("../src/protocol");
    Object.assign(globalThis, { window });
    const skew = 3_600_000; // the kernel's clock is an hour ahead of the browser's
    const kernelNow = Date.now() + skew;
    const traits: Record<string, unknown> = {
      title: "Run 1",
      state: "retrying",
      usage: "",
      retry_deadline: kernelNow + 5_000,
      retry_text: "attempt 1/3: 503",
      queue: [],
    };
    const handlers = new Map<string, (message: unknown) => void>();
    const model = {
      get: (name: string) => traits[name],
      on: (event: string, callback: (message: unknown) => void) => handlers.set(event, callback),
      off: (event: string) => handlers.delete(event),
      send: () => {},
    };
    const root = document.createElement("div");
    const stop = view.render({ model: model as never, el: root });
    handlers.get("msg:custom")!({ type: "snapshot", ops: [], now: kernelNow });
    handlers.get("change:retry_deadline")!(undefined);
    const text = root.querySelector(".pi-run-retry")!.textContent!;
    const seconds = Number(/retrying in ([\d.]+) s/.exec(text)![1]);
    assert.ok(seconds > 4 && seconds <= 5, text);
    assert.equal(retryAt(kernelNow + 5_000, kernelNow, 1_000), 6_000);
    stop();
  });
});

describe("a tool call as code", () => {
  const kinds = (pre: Element, kind: string) =>
    [...pre.querySelectorAll(`.pi-hl-${kind}`)].map((span) => span.textContent);

  it("shows python code highlighted, with the arguments one click away", () => {
    const code = "import time\nfor i in range(3):  # count\n    print('tick', i)\n";
    const panel = new ToolPanel("python", '{"code": "..."}', sanitize, code, "python");
    const pre = panel.element.querySelector(".pi-tool-preview")!;
    assert.equal(pre.textContent, code);
    assert.deepEqual(kinds(pre, "keyword"), ["import", "for", "in"]);
    assert.deepEqual(kinds(pre, "string"), ["'tick'"]);
    assert.deepEqual(kinds(pre, "comment"), ["# count"]);
    assert.deepEqual(kinds(pre, "number"), ["3"]);
    const args = panel.element.querySelector("details.pi-tool-args-box")!;
    assert.equal((args as HTMLDetailsElement).open, false);
    assert.equal(args.querySelector(".pi-tool-args")!.textContent, '{"code": "..."}');
  });

  it("shows a command line and an edit's diff", () => {
    const bash = new ToolPanel("bash", "{}", sanitize, "$ ls -la | grep \"x\" > $OUT", "shell");
    const line = bash.element.querySelector(".pi-tool-preview")!;
    assert.deepEqual(kinds(line, "prompt"), ["$ "]);
    assert.deepEqual(kinds(line, "program"), ["ls", "grep"]);
    assert.deepEqual(kinds(line, "option"), ["-la"]);
    assert.deepEqual(kinds(line, "variable"), ["$OUT"]);
    const edit = new ToolPanel("edit", "{}", sanitize, "a.py\n\n 1 x = 1\n-2 y = 2\n+2 y = 20\n", "diff");
    const diff = edit.element.querySelector(".pi-tool-preview")!;
    assert.deepEqual(kinds(diff, "del"), ["-2 y = 2\n"]);
    assert.deepEqual(kinds(diff, "add"), ["+2 y = 20\n"]);
  });

  it("keeps markup as text and shows what would hide", () => {
    const code = "x = '<img src=x onerror=alert(1)>'\u202e# evil";
    const panel = new ToolPanel("python", "{}", sanitize, code, "python");
    const pre = panel.element.querySelector(".pi-tool-preview")!;
    assert.equal(pre.querySelector("img"), null);
    assert.deepEqual(kinds(pre, "hidden"), ["<U+202E>"]);
    assert.match(pre.textContent ?? "", /'<img src=x onerror=alert\(1\)>'<U\+202E># evil/);
  });

  it("shows the arguments when the tool has no preview", () => {
    const panel = new ToolPanel("read", '{"path": "a.txt"}');
    assert.equal(panel.element.querySelector(".pi-tool-preview"), null);
    assert.equal(panel.element.querySelector(".pi-tool-args")!.textContent, '{"path": "a.txt"}');
  });
});
