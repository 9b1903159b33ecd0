// What the Python side sends: model traits and operation batches. The one definition is Python's
// (pi_notebook/notebook/widget/_protocol.py); tests/test_protocol.py checks that every union and operation below matches it.

/** The run's state (the `state` trait). */
export type RunStatus =
  | "idle"
  | "starting"
  | "streaming"
  | "running tool"
  | "awaiting approval"
  | "retrying"
  | "compacting"
  | "settled"
  | "aborted"
  | "error";
export type OpName =
  | "message"
  | "append"
  | "thinking"
  | "status"
  | "tool"
  | "tool_output"
  | "tool_append"
  | "tool_display"
  | "tool_clear"
  | "tool_note"
  | "tool_end"
  | "event";
export type BatchType = "batch" | "snapshot";
export type WidgetRequest = "hello" | "tree" | "fork";

export interface MessageOp {
  op: "message";
  id: number;
  role: string;
  text?: string;
}
export interface TextOp {
  op: "append" | "thinking";
  id: number;
  text: string;
}
export interface StatusOp {
  op: "status";
  id: number;
  stop_reason: string;
  error?: string | null;
}
export interface ToolOp {
  op: "tool";
  call: string;
  name: string;
  args: string;
  preview?: string;
  syntax?: string;
}
export interface ToolOutputOp {
  op: "tool_output";
  call: string;
  text: string;
}
/** Output the tool's code writes while it runs, appended to its panel (which keeps its last TOOL_TAIL_CHARS
 * characters); `total` counts every character written so far. */
export interface ToolAppendOp {
  op: "tool_append";
  call: string;
  text: string;
  total: number;
}
/** A rich output of the tool's code: text/html and image/svg+xml are sanitised; images come in base64. */
export interface ToolDisplayOp {
  op: "tool_display";
  call: string;
  mime: string;
  data: string;
}
/** clear_output() in the tool's code: the rich outputs its panel shows so far go (its text stays). */
export interface ToolClearOp {
  op: "tool_clear";
  call: string;
}
/** A note on the running call ("waiting for the code to return to Python"); empty: none. */
export interface ToolNoteOp {
  op: "tool_note";
  call: string;
  text: string;
}
export interface ToolEndOp {
  op: "tool_end";
  call: string;
  text: string;
  is_error: boolean;
}
export interface EventOp {
  op: "event";
  t: number;
  label: string;
  detail: string;
}
export type Op =
  | MessageOp
  | TextOp
  | StatusOp
  | ToolOp
  | ToolOutputOp
  | ToolAppendOp
  | ToolDisplayOp
  | ToolClearOp
  | ToolNoteOp
  | ToolEndOp
  | EventOp;

/** A node of the session tree (the `tree` trait; parents before children): a prompt (kind "user": a click forks
 * before it; `number`: its number, as `%pi fork N` takes it), a branch summary ("summary") or a compaction
 * ("compaction"); parent "" is a root. */
export interface TreeItem {
  id: string;
  parent: string;
  kind: string;
  text: string;
  on_branch: boolean;
  number: number;
  here: boolean;
  replies: number;
}

/** The run state in the widget's header: the JupyterLab extension's "kernel gone" rule rewrites it (STATE_CLASS in
 * _protocol.py). */
export const STATE_CLASS = "pi-run-state";

/** A tool panel's live output keeps its last this many characters (TOOL_TAIL_CHARS in _protocol.py). */
export const TOOL_TAIL_CHARS = 50_000;

/** A batch of new operations, or a snapshot (every operation so far) that a new view asks for. */
export interface Batch {
  type: BatchType;
  ops: Op[];
  /** The kernel's clock (epoch ms) when it sent this: the retry countdown corrects for clock skew with it. */
  now?: number;
}

export interface Traits {
  title: string;
  state: RunStatus;
  usage: string;
  retry_deadline: number;
  retry_text: string;
  queue: string[];
  tree_prompts: number;
  tree: TreeItem[];
}

/** The part of anywidget's model the view uses. */
export interface Model {
  get<K extends keyof Traits>(name: K): Traits[K];
  on(event: string, callback: (message: unknown) => void): void;
  off(event: string, callback: (message: unknown) => void): void;
  send(content: { type: WidgetRequest; entry?: string }): void;
}

/**
 * When (browser clock, ms) a retry due at `deadline` (kernel clock) fires: the kernel's remaining time, counted
 * from when its message arrived (`kernelNow` is the kernel clock then). The toolbar (labextension status.ts, `retryAtOf`) uses
 * the same rule.
 */
export function retryAt(deadline: number, kernelNow: number, browserNow: number): number {
  return browserNow + (deadline - kernelNow);
}

export function isBatch(message: unknown): message is Batch {
  const type = (message as Batch | null)?.type;
  return (type === "batch" || type === "snapshot") && Array.isArray((message as Batch).ops);
}
