"""Forking from the notebook: ``%pi fork N`` and a click on a prompt of the run widget's session tree continue
the conversation from before that prompt (``AgentSession.navigate_tree``), in a run of their own, so the branch
summary it writes shows, streams its events and stops with Stop like any run.

:func:`find_prompt` reads what the user typed (an entry id, or the start of one) and says in one line why it is not
a place to fork (no such entry, several, not a prompt). :class:`Fork` is the run's operation: the summary, then,
with a new prompt, the run goes on with it; without one, the old prompt comes back in the run's box to edit and
send (Pi puts it in its editor).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..session import AgentSession, TreeEntry, TreeError, TreeNavigation
from ._run import Run

__all__ = ["Fork", "find_prompt", "fork_label"]

_WHAT = {
    "assistant": "a reply",
    "toolResult": "a tool result",
    "custom": "a note",
    "branch_summary": "a branch summary",
    "compaction": "a compaction summary",
    "model_change": "a model change",
}


def find_prompt(session: AgentSession, text: str) -> TreeEntry:
    """The user prompt ``text`` names: its entry id, ``#2`` (the session's second prompt, as ``%pi tree`` numbers
    them), or the start of its id; a bare number (``2``) is a prompt's number when the session has that prompt, else
    the start of an id (ids are hex, so one may start with digits: ``75659``). Raises :class:`TreeError` (one line)
    when there is none, when several ids start so, or when the entry is not a prompt."""
    wanted = text.strip()
    if not wanted:
        raise TreeError("fork needs the number or id of a prompt (%pi tree lists them)")
    entries = [node.entry for _, node in session.tree().walk()]
    found = [entry for entry in entries if entry.id == wanted]
    number = wanted.removeprefix("#")
    if not found and _is_number(number):
        prompt = next((entry for entry in entries if entry.is_user and entry.prompt_number == int(number)), None)
        if prompt is not None:
            return prompt
        if number != wanted:
            raise TreeError(f"no prompt #{number} in this session (%pi tree lists them)")
    found = found or [entry for entry in entries if entry.id.startswith(wanted)]
    shown = wanted if len(wanted) <= 40 else wanted[:40] + "…"
    if not found:
        nothing = f"no prompt #{wanted} and no entry id starting with" if _is_number(wanted) else "no entry"
        raise TreeError(f"{nothing} {shown!r} in this session (%pi tree lists the prompts)")
    if len(found) > 1:
        raise TreeError(f"{len(found)} entries' ids start with {shown!r}: give more of the id (%pi tree)")
    entry = found[0]
    if not entry.is_user:
        what = _WHAT.get(entry.role or entry.type, f"a {entry.type} entry")
        raise TreeError(f"entry {entry.id} is {what}, not a prompt: %pi fork continues from before a prompt (%pi tree)")
    return entry


def _is_number(text: str) -> bool:
    """Reads as a prompt's number: ASCII digits only (``"²".isdigit()`` is true, but ``int`` refuses it), at most
    nine (``int`` refuses more than 4,300, and no session has a billion prompts)."""
    return text.isascii() and text.isdigit() and len(text) <= 9


def fork_label(entry: TreeEntry) -> str:
    """A fork run's label: the prompt it goes back to."""
    return f"(fork before) {entry.text}"


@dataclass
class Fork:
    """A fork run's operation: go back to before ``target`` (a prompt), summarising the branch left behind unless
    ``summarize`` is false; then ``prompt``, if given, is sent. ``run`` (set once the run exists) gets the old
    prompt back in its box; ``result`` is what the navigation did."""

    session: AgentSession
    target: TreeEntry
    prompt: str | None = None
    summarize: bool = True
    run: Run | None = None
    result: TreeNavigation | None = None

    async def __call__(self) -> None:
        self.result = result = await self.session.navigate_tree(self.target.id, summarize=self.summarize)
        if result.cancelled:
            return
        if self.prompt:
            await self.session.prompt(self.prompt)
            return
        run, text = self.run, result.editor_text or ""
        if run is not None and text:
            run.note("fork", f"the prompt is back in the box below, to edit and send: {text}")
            if run.presenter is not None:
                run.presenter.hand_back([text])
