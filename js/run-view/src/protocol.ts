// What the Python side (pi_notebook/notebook/_view.py, _run.py) sends: model traits and operation batches.
// Hand-written to match the Python today; one protocol source (issue 14) will generate or check it.

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
}
export interface ToolOutputOp {
  op: "tool_output";
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
export type Op = MessageOp | TextOp | StatusOp | ToolOp | ToolOutputOp | ToolEndOp | EventOp;

/** A batch of new operations, or a snapshot (every operation so far) that a new view asks for. */
export interface Batch {
  type: "batch" | "snapshot";
  ops: Op[];
}

export interface Traits {
  title: string;
  state: string;
  usage: string;
  retry_deadline: number;
  retry_text: string;
  queue: string[];
}

/** The part of anywidget's model the view uses. */
export interface Model {
  get<K extends keyof Traits>(name: K): Traits[K];
  on(event: string, callback: (message: unknown) => void): void;
  off(event: string, callback: (message: unknown) => void): void;
  send(content: { type: "hello" }): void;
}

export function isBatch(message: unknown): message is Batch {
  const type = (message as Batch | null)?.type;
  return (type === "batch" || type === "snapshot") && Array.isArray((message as Batch).ops);
}
