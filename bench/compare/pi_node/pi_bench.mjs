// Drive Pi 0.83 (pi-agent-core Agent) with the three compare workloads; prints one JSON object.
// Usage: node pi_bench.mjs [--quick] [--driver faux|scripted]
//   faux (default): pi-ai's own faux provider (createFauxCore, token size 1).
//   scripted: a minimal stream of our own with the same event shape as the Python ports'
//             scripted streams (no per-call usage estimate over the whole transcript).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Agent } from "@earendil-works/pi-agent-core";
import {
  createAssistantMessageEventStream,
  createFauxCore,
  fauxAssistantMessage,
  fauxText,
  fauxToolCall,
  Type,
} from "@earendil-works/pi-ai";

const argv = process.argv.slice(2);
const QUICK = argv.includes("--quick");
const DRIVER = argv.includes("--driver") ? argv[argv.indexOf("--driver") + 1] : "faux";
const W1_SIZES = QUICK ? [1_000, 10_000] : [10_000, 100_000];
const W2_SIZES = QUICK ? [10, 100] : [100, 2000];
const W3_REPS = QUICK ? 20 : 200;
const W3_UPDATES = 20;
const W3_TOKENS_PER_SECOND = 2000;
const W3_TOKENS = 10_000; // 5 s at the nominal rate: never finishes within a repetition or the 2 s timeout
const ABORT_TIMEOUT_MS = 2000;
const now = () => performance.now(); // ms

// Replies are described once and turned into faux messages or a scripted stream.
const textReply = (n) => ({ type: "text", text: "abcd".repeat(n) }); // n tokens of 4 chars
const toolReply = (i) => ({ type: "tool", id: `call_${i}`, name: "echo", args: { text: `t${i}` } });

const echoTool = {
  name: "echo",
  label: "echo",
  description: "Echo the text back",
  parameters: Type.Object({ text: Type.String() }), // TypeBox, as Pi's own tools
  execute: async (_id, params) => ({ content: [{ type: "text", text: `echo: ${params.text}` }], details: {} }),
};

const EMPTY_USAGE = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const pace = (tps) => (tps ? new Promise((r) => setTimeout(r, 1000 / tps)) : new Promise((r) => queueMicrotask(r)));

function scriptedStreamFn(replies, tokensPerSecond) {
  const queue = replies.slice();
  return (model, _context, options) => {
    const out = createAssistantMessageEventStream();
    const reply = queue.shift();
    const signal = options?.signal;
    queueMicrotask(async () => {
      const partial = { role: "assistant", content: [], api: model.api, provider: model.provider, model: model.id, usage: EMPTY_USAGE, stopReason: "stop", timestamp: Date.now() };
      out.push({ type: "start", partial });
      if (reply.type === "text") {
        const block = { type: "text", text: "" };
        partial.content.push(block);
        out.push({ type: "text_start", contentIndex: 0, partial });
        for (let i = 0; i < reply.text.length; i += 4) {
          await pace(tokensPerSecond);
          if (signal?.aborted) {
            Object.assign(partial, { stopReason: "aborted", errorMessage: "Request was aborted" });
            out.push({ type: "error", reason: "aborted", error: partial });
            out.end(partial);
            return;
          }
          const delta = reply.text.slice(i, i + 4);
          block.text += delta;
          out.push({ type: "text_delta", contentIndex: 0, delta, partial });
        }
        out.push({ type: "text_end", contentIndex: 0, content: block.text, partial });
      } else {
        const call = { type: "toolCall", id: reply.id, name: reply.name, arguments: {} };
        partial.content.push(call);
        out.push({ type: "toolcall_start", contentIndex: 0, partial });
        const json = JSON.stringify(reply.args);
        for (let i = 0; i < json.length; i += 4) {
          await pace();
          out.push({ type: "toolcall_delta", contentIndex: 0, delta: json.slice(i, i + 4), partial });
        }
        call.arguments = reply.args;
        partial.stopReason = "toolUse";
        out.push({ type: "toolcall_end", contentIndex: 0, toolCall: call, partial });
      }
      out.push({ type: "done", reason: partial.stopReason, message: partial });
      out.end(partial);
    });
    return out;
  };
}

function makeAgent(replies, tokensPerSecond) {
  const faux = createFauxCore({ tokensPerSecond, tokenSize: { min: 1, max: 1 } });
  let streamFn = faux.stream;
  if (DRIVER === "scripted") {
    streamFn = scriptedStreamFn(replies, tokensPerSecond);
  } else {
    faux.setResponses(
      replies.map((r) =>
        r.type === "text"
          ? fauxAssistantMessage(fauxText(r.text))
          : fauxAssistantMessage(fauxToolCall(r.name, r.args, { id: r.id }), { stopReason: "toolUse" }),
      ),
    );
  }
  return new Agent({
    streamFn,
    toolExecution: "parallel",
    initialState: { model: faux.getModel(), tools: [echoTool], systemPrompt: "" },
  });
}

async function w1(n) {
  const agent = makeAgent([textReply(n)]);
  let events = 0;
  agent.subscribe(() => {
    events++;
  });
  const t0 = now();
  await agent.prompt("hi");
  const ms = now() - t0;
  const reply = agent.state.messages.at(-1);
  if (reply.content[0].text.length !== 4 * n || events <= n) throw new Error(`bad run: ${reply.stopReason} ${events} events`);
  return (ms * 1000) / n;
}

async function w2(turns) {
  const replies = [];
  for (let i = 0; i < turns; i++) replies.push(toolReply(i));
  replies.push(textReply(1));
  const agent = makeAgent(replies);
  let toolEnds = 0;
  agent.subscribe((e) => {
    if (e.type === "tool_execution_end") toolEnds++;
  });
  const t0 = now();
  await agent.prompt("hi");
  const ms = now() - t0;
  if (toolEnds !== turns) throw new Error(`expected ${turns} tool executions, saw ${toolEnds}`);
  return ms / turns;
}

async function w3Once() {
  const agent = makeAgent([textReply(W3_TOKENS)], W3_TOKENS_PER_SECOND);
  let updates = 0;
  let reached;
  const enough = new Promise((r) => (reached = r));
  agent.subscribe((e) => {
    if (e.type === "message_update" && ++updates === W3_UPDATES) reached();
  });
  const run = agent.prompt("hi");
  await Promise.race([enough, run.then(() => Promise.reject(new Error("run ended before enough updates")))]);
  const t0 = now();
  agent.abort();
  let timer;
  const timeout = new Promise((r) => (timer = setTimeout(() => r("timeout"), ABORT_TIMEOUT_MS)));
  const res = await Promise.race([run.then(() => agent.waitForIdle()), timeout]);
  clearTimeout(timer);
  return res === "timeout" ? null : now() - t0;
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.round((p / 100) * (sorted.length - 1)))];
const r3 = (x) => Math.round(x * 1000) / 1000;

const require = createRequire(import.meta.url);
const version = JSON.parse(readFileSync(require.resolve("@earendil-works/pi-agent-core/package.json"), "utf8")).version;
const out = { impl: DRIVER === "faux" ? "pi-0.83-node" : "pi-0.83-node-scripted", version, runtime: `node ${process.version}`, driver: DRIVER, w1_us_per_event: {}, w1_runs: {}, w2_ms_per_turn: {}, w2_runs: {}, w3_abort_ms: null, notes: "" };
const notes = [];

await w1(1000); // warm-up (JIT), untimed
await w2(100);
for (const n of W1_SIZES) {
  try {
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(r3(await w1(n)));
    out.w1_runs[n] = runs;
    out.w1_us_per_event[n] = Math.min(...runs);
  } catch (err) {
    out.w1_us_per_event[n] = null;
    notes.push(`w1 ${n}: ${err.message}`);
  }
}
for (const t of W2_SIZES) {
  try {
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(r3(await w2(t)));
    out.w2_runs[t] = runs;
    out.w2_ms_per_turn[t] = Math.min(...runs);
  } catch (err) {
    out.w2_ms_per_turn[t] = null;
    notes.push(`w2 ${t}: ${err.message}`);
  }
}
try {
  const lat = [];
  for (let i = 0; i < W3_REPS; i++) {
    const ms = await w3Once();
    if (ms === null) throw new Error("abort does not work (run not idle within 2 s of abort())");
    lat.push(ms);
  }
  lat.sort((a, b) => a - b);
  out.w3_abort_ms = { p50: r3(pct(lat, 50)), p99: r3(pct(lat, 99)), n: lat.length };
} catch (err) {
  notes.push(`w3: ${err.message}`);
}
notes.push(
  DRIVER === "faux"
    ? "pi-ai faux provider (createFauxCore, token size 1; it re-serializes the whole transcript per call for its usage estimate)"
    : "scripted stream (4-char deltas, one microtask per delta, no usage estimate)",
);
out.notes = notes.join("; ");
console.log(JSON.stringify(out));
