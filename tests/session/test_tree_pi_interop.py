"""Pi 0.83's own code opens our branched session files on the branch we chose, and would send what we send: its
``SessionManager`` and ``convertToLlm`` run on Node (``tests/pi083/context.mjs``; installed by
``tests/pi083/up.sh``, else these tests skip, saying so)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pi083 import pi_context, run_with_pi

from pi_notebook.agent import CustomMessage
from pi_notebook.ai import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from pi_notebook.ai.messages import text_of
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
from pi_notebook.session import AgentSession, SessionStore, Settings


class Recording:
    """A faux model whose replies are scripted and which keeps the context of every request it gets."""

    def __init__(self, *texts: str) -> None:
        self.faux = FauxProvider(token_size=(1, 1))
        self.sent: list[list[Any]] = []
        self.faux.set_responses([self._reply(text) for text in texts])

    def _reply(self, text: str) -> Any:
        def respond(context: Any, *_: Any) -> Any:
            self.sent.append(list(context.messages))
            return faux_assistant_message(text)

        return respond

    def session(self, path: Path) -> AgentSession:
        settings = Settings(compaction={"enabled": False})
        return AgentSession(
            model=self.faux.model, stream_fn=self.faux.stream, settings=settings, store=SessionStore(path)
        )


def as_pi(messages: list[Any]) -> list[list[str]]:
    """``[role, text]`` of messages a model gets, as ``context.mjs`` prints Pi's."""
    out = []
    for message in messages:
        llm = message.to_llm() if isinstance(message, CustomMessage) else message
        if isinstance(llm, AssistantMessage):
            parts = [f"{b.name}({_json(b.arguments)})" if isinstance(b, ToolCall) else getattr(b, "text", "")
                     for b in llm.content if not hasattr(b, "thinking")]  # fmt: skip
            out.append([llm.role, "".join(parts)])
        elif isinstance(llm, UserMessage | ToolResultMessage):
            out.append([llm.role, text_of(llm)])
    return out


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def ids_on_branch(session: AgentSession) -> list[str]:
    return list(session.tree().branch)


async def test_pi_continues_a_file_on_the_branch_branch_to_chose(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    model = Recording("one", "two", "three")
    session = model.session(path)
    await session.prompt("first")
    after_first = session.leaf_id
    await session.prompt("second")
    session.branch_to(after_first)
    pi = pi_context(path)
    assert [entry_id for entry_id, kind in pi["branch"] if kind != "custom"] == ids_on_branch(session)
    assert pi["messages"] == as_pi(session.messages) == [["user", "first"], ["assistant", "one"]]
    await session.prompt("third")  # what we send from the branch: Pi's context and the new prompt
    assert as_pi(model.sent[-1]) == [*pi["messages"], ["user", "third"]]
    pi = pi_context(path)
    assert pi["leafId"] == session.leaf_id
    assert pi["messages"] == as_pi(session.messages)
    session.dispose()


async def test_pi_continues_from_the_start_after_branch_to_none(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Recording("one").session(path)
    await session.prompt("first")
    session.branch_to(None)
    pi = pi_context(path)
    assert pi["messages"] == [] and [kind for _, kind in pi["branch"]] == ["custom"]
    session.dispose()


def user_ids(session: AgentSession) -> dict[str, str]:
    return {node.entry.text: node.entry.id for _, node in session.tree().walk() if node.entry.is_user}


async def test_pi_reads_a_fork_with_its_branch_summary_and_would_send_what_we_send(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    model = Recording("one", "two", "the gist of it", "three")
    session = model.session(path)
    await session.prompt("first")
    await session.prompt("second")
    result = await session.navigate_tree(user_ids(session)["second"])
    pi = pi_context(path)
    assert pi["leafId"] == session.leaf_id == result.summary_entry_id
    assert [entry_id for entry_id, _ in pi["branch"]] == ids_on_branch(session)
    assert pi["branch"][-1][1] == "branch_summary"
    assert pi["messages"] == as_pi(session.messages)
    assert pi["messages"][-1][1].startswith("The following is a summary of a branch that this conversation came back")
    await session.prompt("third")
    assert as_pi(model.sent[-1]) == [*pi["messages"], ["user", "third"]]
    assert pi_context(path)["messages"] == as_pi(session.messages)
    session.dispose()


async def test_pi_reads_a_fork_back_to_the_first_prompt(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Recording("one", "gist").session(path)
    await session.prompt("first")
    result = await session.navigate_tree(user_ids(session)["first"])
    assert result.editor_text == "first"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    model_change, summary = lines[1], lines[-1]  # the model the session started with comes first
    assert (summary["type"], summary["parentId"], summary["fromId"]) == (
        "branch_summary",
        model_change["id"],
        model_change["id"],
    )
    pi = pi_context(path)
    assert [kind for _, kind in pi["branch"]] == ["model_change", "branch_summary"]
    assert pi["messages"] == as_pi(session.messages) and len(pi["messages"]) == 1
    session.dispose()


async def test_pi_reads_a_summary_written_at_the_root_of_a_file_that_starts_with_a_prompt(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with SessionStore(path) as store:  # as Pi writes a session started without a model change
        store.append_message(UserMessage(content="first"))
        store.append_message(faux_assistant_message("one"))
    model = Recording("gist")
    session = AgentSession(model=model.faux.model, stream_fn=model.faux.stream, store=SessionStore(path))
    await session.navigate_tree(user_ids(session)["first"])
    summary = json.loads(path.read_text().splitlines()[-1])
    assert (summary["type"], summary["parentId"], summary["fromId"]) == ("branch_summary", None, "root")
    pi = pi_context(path)
    assert [kind for _, kind in pi["branch"]] == ["branch_summary"]
    assert pi["messages"] == as_pi(session.messages) and len(pi["messages"]) == 1
    session.dispose()


WRITE_A_FORK_WITH_PI = """
const { SessionManager } = await import(process.argv[1]);
const manager = SessionManager.create(process.argv[2], process.argv[2]);
const now = Date.now();
const user = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: now });
const reply = (text) => ({ role: "assistant", content: [{ type: "text", text }], api: "faux", provider: "faux",
  model: "faux-1", usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "stop", timestamp: now });
manager.appendMessage(user("first"));
const one = manager.appendMessage(reply("one"));
manager.appendMessage(user("second"));
manager.appendMessage(reply("two"));
manager.branchWithSummary(one, "Pi's summary of the second question", { readFiles: [], modifiedFiles: ["a.py"] });
manager.appendMessage(user("third"));
console.log(manager.getSessionFile());
"""


async def test_we_continue_a_file_pi_forked_on_its_branch_and_would_send_its_context(tmp_path: Path) -> None:
    path = Path(run_with_pi(WRITE_A_FORK_WITH_PI, str(tmp_path)).strip())
    pi = pi_context(path)
    model = Recording("three")
    session = model.session(path)
    assert session.leaf_id == pi["leafId"] and ids_on_branch(session) == [entry_id for entry_id, _ in pi["branch"]]
    assert as_pi(session.messages) == pi["messages"]
    assert [role for role, _ in pi["messages"]] == ["user", "assistant", "user", "user"]  # the summary is a user's
    await session.continue_()
    assert as_pi(model.sent[-1]) == pi["messages"]
    forked = [node for _, node in session.tree().walk() if node.entry.type == "branch_summary"]
    assert len(forked) == 1 and forked[0].on_branch and forked[0].entry.text == "Pi's summary of the second question"
    session.dispose()
