// Open a session file with Pi 0.83's own SessionManager and print, as JSON, where Pi would continue: its leaf, the
// ids of the entries on its current branch, and the context it would send (convertToLlm of buildSessionContext):
// each message's role and text (text blocks joined; tool calls as name(JSON arguments)).
//
//   node context.mjs <pi-coding-agent dist/core folder> <session file>
import { dirname } from "node:path";

const [core, file] = process.argv.slice(2);
const { SessionManager } = await import(`${core}/session-manager.js`);
const { convertToLlm } = await import(`${core}/messages.js`);

const manager = SessionManager.open(file, dirname(file));
const blockText = (b) => (b.type === "text" ? b.text : b.type === "toolCall" ? `${b.name}(${JSON.stringify(b.arguments)})` : "");
const text = (m) => (typeof m.content === "string" ? m.content : (m.content ?? []).map(blockText).join(""));
const messages = convertToLlm(manager.buildSessionContext().messages).map((m) => [m.role, text(m)]);
const branch = manager.getBranch().map((e) => [e.id, e.type]);
console.log(JSON.stringify({ leafId: manager.getLeafId(), branch, messages }));
