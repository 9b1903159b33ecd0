// The first reply's first paint ran the markdown lexer, renderer and sanitiser cold: V8 compiled their
// functions and regular expressions there, a 100 ms task on a busy machine. A new view compiles them
// beforehand, while the page is idle (a model takes a while to answer), one kind of block per idle callback
// so that no step is a long task of its own; once per page.
import { MarkdownStream, type Sanitize } from "./markdown/stream";

// small texts, one or two kinds of block each: the first compiles the lexer's block rules, the next ones the
// inline rules and the renderer's paths for each kind of block
const SAMPLES = [
  "x\n",
  "# A heading\n\nA paragraph with **bold**, *emphasis*, `code`, a [link](https://example.com), www.example.com.\n\n",
  "- a point\n- another\n  continued\n\n1. first\n2. second\n\n",
  "```python\ndef f(x):\n    return x\n```\n\n    indented code\n\n",
  "| a | b |\n|---|---:|\n| 1 | 2 |\n\n",
  "> quoted\n\nSetext\n---\n\n<details><summary>more</summary>\n\ntext\n\n</details>\n\n",
  "[x]: https://example.com\n\n[x] and [y][x]\n",
];

let started = false;

export function warmUp(sanitize: Sanitize): void {
  if (started || typeof requestIdleCallback !== "function") return;
  started = true;
  const steps = [
    () => void sanitize('<p class="x">x <a href="https://example.com">y</a></p>'),
    ...SAMPLES.map((sample) => () => {
      const stream = new MarkdownStream(document.createElement("div"), sanitize);
      stream.append(sample);
      while (stream.render());
    }),
  ];
  const next = (): void => {
    steps.shift()?.();
    if (steps.length) requestIdleCallback(next);
  };
  requestIdleCallback(next);
}
