// Where a streamed markdown text can be cut so that what comes before never changes again.
//
// The open tail of a message is lexed as markdown on every paint; its leading tokens are *finished* and are
// rendered once when a later token starts after a blank line (markdown blocks cannot reach back over one:
// no setext underline, table delimiter row or lazy continuation line applies across it; lists, indented code
// and HTML blocks that do span blank lines are lexed as one token that includes them) and that later token's
// first line is complete (so `2` cannot still become the `2.` that continues an ordered list above it). A
// fenced code block whose opening line is complete also ends what precedes it, blank line or not. Raw HTML
// left open (`<details>` ... `</details>`) keeps the cut from happening until it is closed. Reference
// definitions are handled by the caller, since they change how *earlier* text renders.
import { Parser, type Token } from "marked";

import { OpenElements } from "./balance";
import { options } from "./markedOptions";

export interface Cut {
  /** how many leading tokens are finished */
  count: number;
  /** where the first unfinished token starts in the lexed text */
  offset: number;
}

const FENCE_START = /^ {0,3}(`{3,}|~{3,})/;

/** The last safe cut in `text`, lexed as `tokens` (whose raws add up to `text`); count 0 when there is none. */
export function finishedPrefix(text: string, tokens: Token[]): Cut {
  let cut: Cut = { count: 0, offset: 0 };
  const open = new OpenElements();
  let offset = 0;
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index];
    if (index > 0 && token.type !== "space" && open.balanced && startsBlock(text, offset, token)) {
      cut = { count: index, offset };
    }
    if (token.raw.includes("<")) open.feed(Parser.parse([token], options));
    offset += token.raw.length;
  }
  return cut;
}

function startsBlock(text: string, offset: number, token: Token): boolean {
  if (text.indexOf("\n", offset) === -1) return false; // its first line may still change what it is
  return blankLineBefore(text, offset) || (token.type === "code" && FENCE_START.test(token.raw));
}

/** The line before the one at `offset` is empty or white space only. */
export function blankLineBefore(text: string, offset: number): boolean {
  let at = offset - 1;
  for (let newlines = 0; at >= 0; at--) {
    const char = text[at];
    if (char === "\n") {
      if (++newlines === 2) return true;
    } else if (char !== " " && char !== "\t") {
      return false;
    }
  }
  return false;
}
