"""The prompt tree ``%pi tree`` prints and the run widget draws (``notebook/_tree_view.py``): replies folded into their
prompt, branches indented only where the conversation parts, hostile text made visible, a long session flat."""

from __future__ import annotations

from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
from pi_notebook.notebook._tree_view import prompt_tree, tree_text
from pi_notebook.notebook.widget._tree_panel import tree_items
from pi_notebook.session import AgentSession, Settings


def session(*replies: str) -> AgentSession:
    faux = FauxProvider(token_size=(1, 1))
    faux.set_responses([faux_assistant_message(text) for text in replies])
    return AgentSession(model=faux.model, stream_fn=faux.stream, settings=Settings(compaction={"enabled": False}))


def prompt_id(agent: AgentSession, number: int) -> str:
    return next(node.entry.id for _, node in agent.tree().walk() if node.entry.prompt_number == number)


async def test_a_fork_draws_two_branches_from_where_they_part() -> None:
    agent = session("one", "two", "the gist", "three")
    await agent.prompt("first")
    await agent.prompt("second")
    await agent.navigate_tree(prompt_id(agent, 2))
    await agent.prompt("third")
    first, second, third = (prompt_id(agent, n) for n in (1, 2, 3))
    summary = agent.tree().branch[-3]
    lines = tree_text(agent.tree()).splitlines()[2:]
    assert lines == [
        f"* {first}  #1  first  (1 reply)",
        f"  ├─ {second}  #2  second  (1 reply)",
        f"* └─ {summary}  [branch summary] the gist",
        f"*    {third}  #3  third  (1 reply)  ◀ here",
    ]
    items = tree_items(agent.tree())
    assert [(item["id"], item["parent"], item["kind"], item["on_branch"]) for item in items] == [
        (first, "", "user", True),
        (second, first, "user", False),
        (summary, first, "summary", True),
        (third, summary, "user", True),
    ]
    assert [item["number"] for item in items] == [1, 2, 0, 3]


async def test_control_and_bidi_characters_in_a_prompt_are_shown_as_marks() -> None:
    agent = session("ok")
    await agent.prompt("clear \x1b[2J\x1b[H the screen \u202eevil")
    line = tree_text(agent.tree()).splitlines()[-1]
    assert "\x1b" not in line and "\u202e" not in line
    assert "clear <U+001B>[2J<U+001B>[H the screen <U+202E>evil" in line


async def test_a_long_linear_session_is_one_column_and_costs_no_recursion() -> None:
    agent = session(*["ok"] * 1200)
    for number in range(1200):
        await agent.prompt(f"prompt {number}")
    roots = prompt_tree(agent.tree())
    assert len(roots) == 1
    lines = tree_text(agent.tree()).splitlines()[2:]
    assert len(lines) == 1200 and all(line.startswith("* ") and "─" not in line for line in lines)
    assert lines[-1].endswith("(1 reply)  ◀ here")


def test_an_empty_session_says_so() -> None:
    assert tree_text(session().tree()) == "pi: the session has no prompt yet"
