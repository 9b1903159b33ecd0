import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { JSDOM } from "jsdom";

import type { TreeItem } from "../src/protocol";
import { TreePanel } from "../src/tree";

const { window } = new JSDOM("<!doctype html><body></body>");
Object.assign(globalThis, { document: window.document });

function item(id: string, parent: string, text: string, extra: Partial<TreeItem> = {}): TreeItem {
  return { id, parent, kind: "user", text, on_branch: false, number: 0, here: false, replies: 1, ...extra };
}

/** first -> second (left behind) | summary -> third (current, here) */
const FORKED: TreeItem[] = [
  item("a1", "", "first", { on_branch: true }),
  item("b2", "a1", "second"),
  item("s3", "a1", "the gist", { kind: "summary", on_branch: true, replies: 0 }),
  item("c4", "s3", "third", { on_branch: true, here: true }),
];

describe("session tree", () => {
  it("draws a line of prompts, then one open fold per branch where the conversation parts", () => {
    const panel = new TreePanel(() => {});
    panel.show(FORKED);
    const body = panel.element.querySelector(".pi-tree-body")!;
    const classes = [...body.children].map((child) => child.className);
    assert.deepEqual(classes, ["pi-tree-row pi-tree-kind-user pi-tree-current", "pi-tree-branch", "pi-tree-branch"]);
    const [left, current] = body.querySelectorAll(":scope > details");
    const entries = (fold: Element) => [...fold.querySelectorAll<HTMLElement>("[data-entry]")].map((row) => row.dataset.entry);
    assert.equal((left as HTMLDetailsElement).open, true);
    assert.deepEqual(entries(left), ["b2"]);
    assert.deepEqual(entries(current), ["s3", "c4"]);
    const title = panel.element.querySelector(".pi-tree-title")!.textContent;
    assert.equal(title, "Session tree: 3 prompts, 2 branches (click a prompt to continue from before it)");
    assert.equal(current.querySelector(".pi-tree-here")!.textContent, "◀ here");
    assert.equal(current.querySelector(".pi-tree-summary")!.textContent, "[branch summary] the gist");
  });

  it("forks on a click on a prompt, and a summary is not a place to fork", () => {
    const forked: string[] = [];
    const panel = new TreePanel((entry) => forked.push(entry));
    panel.show(FORKED);
    const buttons = [...panel.element.querySelectorAll<HTMLButtonElement>("button.pi-tree-fork")];
    assert.deepEqual(buttons.map((button) => button.textContent), ["first", "second", "third"]);
    buttons[1].click();
    assert.deepEqual(forked, ["b2"]);
    const fold = panel.element.querySelector<HTMLDetailsElement>(".pi-tree-branch")!;
    assert.equal(fold.open, true, "a click on a prompt in a fold's head forks, it does not fold");
  });

  it("puts every text in the page as text", () => {
    const panel = new TreePanel(() => {});
    panel.show([item("x1", "", '<img src=x onerror="globalThis.bad=1">', { on_branch: true })]);
    assert.equal(panel.element.querySelector("img"), null);
    assert.equal(panel.element.querySelector("button")!.textContent, '<img src=x onerror="globalThis.bad=1">');
  });

  it("says how many prompts there are, and asks for the tree once, when it is opened", () => {
    let asked = 0;
    const panel = new TreePanel(() => {}, () => asked++);
    panel.count(2);
    assert.equal(panel.element.querySelector(".pi-tree-title")!.textContent, "Session tree: 2 prompts (open it to see them and fork)");
    for (const open of [true, false, true]) {
      panel.element.open = open;
      panel.element.dispatchEvent(new window.Event("toggle"));
    }
    assert.equal(asked, 1);
    panel.show(FORKED);
    panel.count(3); // a later count does not replace the drawn tree's title
    assert.match(panel.element.querySelector(".pi-tree-title")!.textContent!, /^Session tree: 3 prompts, 2 branches/);
  });

  it("is hidden while the session has no prompt, and draws a long linear session without recursion", () => {
    const panel = new TreePanel(() => {});
    assert.equal(panel.element.style.display, "none");
    const line = Array.from({ length: 20_000 }, (_, i) => item(`p${i}`, i ? `p${i - 1}` : "", `prompt ${i}`));
    panel.show(line);
    assert.equal(panel.element.style.display, "");
    assert.equal(panel.element.querySelectorAll(".pi-tree-row").length, 20_000);
    assert.equal(panel.element.querySelectorAll("details.pi-tree-branch").length, 0);
  });
});
