// A tool call as code: Python highlighted, a command line, an edit's diff (`AgentTool.preview_syntax`). Built from
// text nodes and spans only (never parsed as HTML), so whatever the model wrote stays text. Characters that would
// hide from a reader (bidi controls, zero-width, other controls) show as a <U+202E> marker, as the approval box
// shows them.

/** The syntaxes a tool's preview may declare (`""`: plain text). */
export type Syntax = "" | "python" | "shell" | "diff";

const PYTHON_KEYWORDS = new Set(
  (
    "False None True and as assert async await break class continue def del elif else except finally for from " +
    "global if import in is lambda nonlocal not or pass raise return try while with yield match case"
  ).split(" "),
);
const PYTHON_BUILTINS = new Set(
  "print len range open int float str list dict set tuple enumerate zip sorted sum min max abs isinstance".split(" "),
);
/** One Python token: a comment, a string (prefixed, triple-quoted or not), a number, a word, or anything else. */
const PYTHON_TOKEN =
  /(#[^\n]*)|((?:[rRbBuUfF]{0,2})(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?))|(\b\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?j?\b)|(@?[A-Za-z_][A-Za-z0-9_]*)|([\s\S])/g;
/** One shell token: a comment, a quoted string, a variable, an option, an operator, a word, or anything else. */
const SHELL_TOKEN =
  /(#[^\n]*)|("(?:\\.|[^"\\])*"?|'[^']*'?)|(\$\{[^}]*\}?|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9?#@*$!])|((?<=^|\s)--?[A-Za-z0-9][\w-]*)|(\|\||&&|[|;&<>]+)|([^\s#"'$|;&<>]+)|([\s\S])/g;
/** Characters a reader would not see: controls (but tab and line feed), format characters (bidi, zero-width),
 * line and paragraph separators. */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
const HIDDEN_ALL = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

/** Append `text` to `parent`, as a span of `kind` when given; hidden characters become markers. */
function put(parent: HTMLElement, text: string, kind?: string): void {
  if (!text) return;
  const target = kind ? document.createElement("span") : parent;
  if (kind) {
    target.className = `pi-hl-${kind}`;
    parent.append(target);
  }
  if (!HIDDEN.test(text.replace(/[\t\n]/g, ""))) {
    target.append(text);
    return;
  }
  let last = 0;
  for (const match of text.matchAll(HIDDEN_ALL)) {
    const char = match[0];
    const at = match.index ?? 0;
    if (char === "\n" || char === "\t") continue;
    target.append(text.slice(last, at));
    const marker = document.createElement("span");
    marker.className = "pi-hl-hidden";
    marker.textContent = `<U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}>`;
    target.append(marker);
    last = at + char.length;
  }
  target.append(text.slice(last));
}

function python(code: HTMLElement, text: string): void {
  for (const [, comment, string, number, word, other] of text.matchAll(PYTHON_TOKEN)) {
    if (comment !== undefined) put(code, comment, "comment");
    else if (string !== undefined) put(code, string, "string");
    else if (number !== undefined) put(code, number, "number");
    else if (word !== undefined) {
      const kind = word.startsWith("@")
        ? "decorator"
        : PYTHON_KEYWORDS.has(word)
          ? "keyword"
          : PYTHON_BUILTINS.has(word)
            ? "builtin"
            : undefined;
      put(code, word, kind);
    } else put(code, other ?? "");
  }
}

function shell(code: HTMLElement, text: string): void {
  const prompt = text.startsWith("$ ") ? "$ " : "";
  put(code, prompt, "prompt");
  let first = true; // the first word of a command is the program
  for (const [, comment, string, variable, option, operator, word, other] of text.slice(prompt.length).matchAll(
    SHELL_TOKEN,
  )) {
    if (comment !== undefined) put(code, comment, "comment");
    else if (string !== undefined) put(code, string, "string");
    else if (variable !== undefined) put(code, variable, "variable");
    else if (option !== undefined) put(code, option, "option");
    else if (operator !== undefined) {
      put(code, operator, "operator");
      first = true;
    } else if (word !== undefined) {
      put(code, word, first ? "program" : undefined);
      first = false;
    } else {
      put(code, other ?? "");
      if (other === "\n") first = true;
    }
  }
}

function diff(code: HTMLElement, text: string): void {
  for (const line of text.split(/(?<=\n)/)) {
    const kind = line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : undefined;
    put(code, line, kind);
  }
}

/** A `<pre><code>` showing `text` as `syntax` reads (highlighted, inert). */
export function codeBlock(text: string, syntax: string): HTMLPreElement {
  const pre = document.createElement("pre");
  pre.className = `pi-tool-preview pi-syntax-${syntax || "plain"}`;
  const code = document.createElement("code");
  pre.append(code);
  if (syntax === "python") python(code, text);
  else if (syntax === "shell") shell(code, text);
  else if (syntax === "diff") diff(code, text);
  else put(code, text);
  return pre;
}
