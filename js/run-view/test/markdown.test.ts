import assert from "node:assert/strict";
import { describe, it } from "node:test";

import createDOMPurify from "dompurify";
import { JSDOM } from "jsdom";

import { markdown } from "../src/markdown/markedOptions";
import { sanitizer } from "../src/markdown/sanitize";
import { MERGE_LINES, PART_LINES } from "../src/markdown/fence";
import { MarkdownStream } from "../src/markdown/stream";
import { randomText, TRICKY } from "./corpus";

const { window } = new JSDOM("<!doctype html><body></body>");
const purify = createDOMPurify(window as unknown as Parameters<typeof createDOMPurify>[0]);
const sanitize = sanitizer(purify);
const document = window.document;

/** What the widget used to do: one render of the whole text. */
function oneShot(text: string): string {
  const element = document.createElement("div");
  element.innerHTML = sanitize(markdown.parse(text.replace(/\r\n?/g, "\n")) as string);
  return element.innerHTML;
}

function shown(root: HTMLElement): string {
  const blocks = root.querySelectorAll(":scope > .pi-md-group > .pi-md-block, :scope > .pi-md-tail");
  return [...blocks].map((block) => block.innerHTML).join("");
}

function stream(pieces: string[], window?: number): HTMLElement {
  const root = document.createElement("div");
  const md = new MarkdownStream(root, sanitize, window);
  for (const piece of pieces) {
    md.append(piece);
    while (md.render()) {
      // catching up: a window at a time
    }
  }
  return root;
}

describe("streamed markdown renders as the whole text would", () => {
  for (const [name, text] of Object.entries(TRICKY)) {
    it(`${name}: cut at every position`, () => {
      const expected = oneShot(text);
      for (let cut = 0; cut <= text.length; cut++) {
        const pieces = [text.slice(0, cut), text.slice(cut)];
        assert.equal(shown(stream(pieces)), expected, `cut at ${cut}: ${JSON.stringify(text.slice(0, cut))}`);
      }
    });

    it(`${name}: one character at a time`, () => {
      assert.equal(shown(stream([...text])), oneShot(text));
    });

    it(`${name}: each prefix shows what it renders to`, () => {
      const root = document.createElement("div");
      const md = new MarkdownStream(root, sanitize);
      for (let end = 1; end <= text.length; end++) {
        md.append(text[end - 1]);
        md.render();
        assert.equal(shown(root), oneShot(text.slice(0, end)), `at ${end}`);
      }
    });
  }

  it("all tricky texts in one reply, in odd pieces and a small catch-up window", () => {
    const text = Object.values(TRICKY).join("\n\n");
    const pieces: string[] = [];
    for (let at = 0, size = 1; at < text.length; at += size, size = (size * 7) % 23 + 1) {
      pieces.push(text.slice(at, at + size));
    }
    assert.equal(shown(stream(pieces, 64)), oneShot(text));
    assert.equal(shown(stream([text], 64)), oneShot(text));
  });

  it("random texts from tricky lines: prefixes as they stream, then the rest in pieces of lines", () => {
    for (let seed = 1; seed <= 60; seed++) {
      const text = randomText(seed, 16);
      const root = document.createElement("div");
      const md = new MarkdownStream(root, sanitize);
      for (let end = 1; end <= text.length; end++) {
        md.append(text[end - 1]);
        md.render();
        if (end % 3 === 0 || end === text.length) {
          assert.equal(shown(root), oneShot(text.slice(0, end)), `seed ${seed} at ${end}: ${JSON.stringify(text)}`);
        }
      }
      const pieces = text.split(/(?<=\n)/);
      assert.equal(shown(stream(pieces)), oneShot(text), `seed ${seed} by lines`);
    }
  });
});

describe("long fenced code blocks", () => {
  const code = (lines: number): string => Array.from({ length: lines }, (_, i) => `line ${i} <&>`).join("\n");

  it("stay one block up to MERGE_LINES lines, streamed in parts", () => {
    const text = `before\n\n\`\`\`js\n${code(MERGE_LINES)}\n\`\`\`\n\nafter\n`;
    const root = stream(text.match(/[^]{1,37}/g)!);
    assert.equal(shown(root), oneShot(text));
  });

  it("are kept in parts beyond it, holding the same text", () => {
    const text = `before\n\n\`\`\`js\n${code(MERGE_LINES + 1)}\n\`\`\`\n\nafter\n`;
    const root = stream(text.match(/[^]{1,37}/g)!);
    const expected = document.createElement("div");
    expected.innerHTML = oneShot(text);
    const parts = root.querySelectorAll("pre.pi-code-part");
    assert.equal(parts.length, Math.ceil((MERGE_LINES + 1) / PART_LINES) - 1);
    const codes = [...root.querySelectorAll("pre > code")];
    assert.ok(codes.every((c) => c.className === "language-js"));
    assert.equal(codes.map((c) => c.textContent).join(""), expected.querySelector("code")!.textContent);
    assert.equal(root.textContent, expected.textContent);
  });
});

describe("the open tail", () => {
  const tail = (root: HTMLElement): HTMLElement => root.querySelector<HTMLElement>(":scope > .pi-md-tail")!;

  it("keeps the nodes of its blocks that render the same, and replaces the block that grows", () => {
    const root = document.createElement("div");
    const md = new MarkdownStream(root, sanitize);
    md.append("First *paragraph*.\n\nSecond"); // the first line of the second block is not complete: no cut
    md.render();
    const [first, , second] = [...tail(root).childNodes];
    assert.equal((first as HTMLElement).outerHTML, "<p>First <em>paragraph</em>.</p>");
    md.append(" grows");
    md.render();
    const nodes = [...tail(root).childNodes];
    assert.equal(nodes[0], first, "the unchanged block is the same node");
    assert.notEqual(nodes[2], second, "the growing block is drawn anew");
    assert.equal(tail(root).innerHTML, oneShot("First *paragraph*.\n\nSecond grows"));
  });

  it("replaces a block that a later addition changes", () => {
    const root = document.createElement("div");
    const md = new MarkdownStream(root, sanitize);
    md.append("[x] is a link\n\n[x]:"); // not a definition yet: two paragraphs, both open
    md.render();
    const first = tail(root).firstChild as HTMLElement;
    assert.equal(first.outerHTML, "<p>[x] is a link</p>");
    md.append(" https://example.com/x"); // now a definition: the paragraph above shows a link
    md.render();
    assert.ok(!root.contains(first), "the changed block is not kept");
    assert.equal(shown(root), oneShot("[x] is a link\n\n[x]: https://example.com/x"));
    assert.equal(tail(root).querySelector("a")?.getAttribute("href"), "https://example.com/x");
  });

  it("shows the sanitised text, and what it drops never reaches the page", () => {
    const root = document.createElement("div");
    const md = new MarkdownStream(root, sanitize);
    md.append("<img src=x onerror=alert(1)> and <script>alert(2)</script>\n\nmore");
    md.render();
    md.append(" text");
    md.render();
    assert.equal(root.querySelector("script"), null);
    assert.equal(root.querySelector("[onerror]"), null);
    assert.equal(shown(root), oneShot("<img src=x onerror=alert(1)> and <script>alert(2)</script>\n\nmore text"));
  });
});
