"""Going elsewhere in the session tree (Pi 0.83's ``AgentSession.navigateTree``): :class:`Navigator` moves the
leaf, writes the branch summary, and makes the new branch the agent's context.

* :meth:`Navigator.branch_to` moves the leaf to an entry, with no summary (``%pi rewind`` uses it); the move is
  written to the journal (a leaf-move entry, ``_tree``) so a reader of the file continues there.
* :meth:`Navigator.navigate` is Pi's ``navigateTree``: to a user message, the leaf becomes its parent and its text
  comes back (``editor_text``) to be edited and sent again; to any other entry, the leaf becomes that entry. With
  ``summarize``, the branch left behind (from the old leaf back to where it meets the target's path) is summarised
  first (``_branch_summary``) and the summary is written at the new leaf; the request goes through the layer-2 retry
  (``summarization_retry_*`` events, ``source="branchSummary"``). An abort (:meth:`Navigator.abort`, which
  ``AgentSession.abort()`` calls after the retry and the compaction, seed 002's order) stops it: the leaf does not
  move and nothing is written.

Either way the agent's messages become the new branch's context, read back from the journal as a resumed file
would be (the file is the truth: what a failed overflow recovery took out of the context comes back, as on resume).

Where this differs from Pi 0.83, on purpose: a move with no summary is written (Pi's leaf goes back to the file's
last entry when the file is opened again), and the session is busy while a summary is written (``is_idle`` is
false, ``wait_for_idle`` waits for it, a ``prompt`` is refused).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..agent import Agent, AgentMessage, CustomMessage
from ..ai import AbortController, PiNotebookError, Usage, UserMessage
from ..ai import stream as default_stream
from ..ai.messages import text_of
from ._branch_summary import BranchSummaryMessage, generate_branch_summary
from ._events import (
    BranchSummaryEndEvent,
    BranchSummaryStartEvent,
    SessionEvent,
    SessionTreeEvent,
    SummarizationRetryAttemptStartEvent,
    SummarizationRetryFinishedEvent,
    SummarizationRetryScheduledEvent,
)
from ._journal import Journal
from ._settings import Settings
from ._store_load import entries_by_id, message_of_entry, read_session
from ._tree import TreeEntry, TreeError

__all__ = ["BranchSummaryFailed", "Navigator", "TreeNavigation"]


class BranchSummaryFailed(PiNotebookError, RuntimeError):
    """The model could not write the branch summary (after the layer-2 retries); the leaf did not move."""


@dataclass(frozen=True, slots=True)
class TreeNavigation:
    """What :meth:`AgentSession.navigate_tree` did. ``cancelled``: nothing changed (``aborted``: an abort stopped
    the summary). ``editor_text``: the text of the user message gone to, to edit and send again.
    ``summary_entry_id``: the branch summary written at the new leaf, if one was."""

    cancelled: bool = False
    aborted: bool = False
    editor_text: str | None = None
    summary_entry_id: str | None = None
    new_leaf_id: str | None = None
    old_leaf_id: str | None = None


class Navigator:
    """Moves one session's leaf (see the module docstring). ``journal`` is the session's (the session sets it again
    when it changes); ``settings`` gives the session's settings; events go to ``emit``."""

    def __init__(
        self, agent: Agent, journal: Journal, settings: Callable[[], Settings], emit: Callable[[SessionEvent], None]
    ) -> None:
        self._agent = agent
        self.journal = journal
        self._settings = settings
        self._emit = emit
        self._controller: AbortController | None = None

    @property
    def summarizing(self) -> bool:
        """A branch summary is being written."""
        return self._controller is not None

    def abort(self) -> None:
        """Stop a branch summary being written (its request and retry backoff); the leaf stays where it was."""
        if self._controller is not None:
            self._controller.abort("branch summary cancelled")

    def branch_to(self, entry_id: str | None) -> None:
        """Continue from ``entry_id`` (``None``: from the start) with no summary; raises :class:`TreeError` for an
        entry the session does not have (nothing changes then)."""
        old = self.journal.leaf_id
        messages = self._context(entry_id)
        self.journal.move_leaf(entry_id)
        self._agent.state.messages = messages
        if entry_id != old:
            self._emit(SessionTreeEvent(entry_id, old))

    async def navigate(
        self,
        target_id: str,
        *,
        summarize: bool = True,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
    ) -> TreeNavigation:
        """Pi's ``navigateTree`` (see the module docstring). Raises :class:`TreeError` for an unknown entry and
        :class:`BranchSummaryFailed` when the summary request fails; in both cases nothing changes."""
        journal = self.journal
        old = journal.leaf_id
        if target_id == old:
            return TreeNavigation(new_leaf_id=old, old_leaf_id=old)
        target = journal.index.get(target_id)
        if target is None:
            raise TreeError(f"no entry {target_id!r} in this session")
        data = journal.read_bytes()
        entries = entries_by_id(data)
        new_leaf, editor_text = _landing(target, entries.get(target_id, {}))
        summary: BranchSummaryMessage | None = None
        usage = None
        if summarize:
            left = _left_behind(journal, old, target_id)
            if left:
                written = await self._summarize(target_id, old, left, entries, new_leaf, custom_instructions,
                                                replace_instructions)  # fmt: skip
                if written is None:
                    return TreeNavigation(cancelled=True, aborted=True, new_leaf_id=old, old_leaf_id=old)
                summary, usage = written
        if summary is not None:
            summary_id: str | None = journal.append_branch_summary(summary, usage)
        else:
            summary_id = None
            journal.move_leaf(new_leaf)
        self._agent.state.messages = self._context(journal.leaf_id)
        self._emit(SessionTreeEvent(journal.leaf_id, old, summary_id))
        return TreeNavigation(
            editor_text=editor_text, summary_entry_id=summary_id, new_leaf_id=journal.leaf_id, old_leaf_id=old
        )

    async def _summarize(
        self,
        target_id: str,
        old: str | None,
        left: list[str],
        entries: dict[str, dict[str, Any]],
        new_leaf: str | None,
        instructions: str | None,
        replace_instructions: bool,
    ) -> tuple[BranchSummaryMessage, Usage | None] | None:
        messages = [m for m in (message_of_entry(entries[i]) for i in left if i in entries) if m is not None]
        self._emit(BranchSummaryStartEvent(target_id, old, len(left)))
        agent = self._agent
        model = agent.state.model
        settings = self._settings()
        controller = self._controller = AbortController()
        try:
            result = await generate_branch_summary(
                messages,
                from_id=new_leaf or "root",
                model=model,
                stream_fn=agent.stream_fn or default_stream,
                policy=settings.retry,
                options=await agent.request_options(controller.signal),
                signal=controller.signal,
                reserve_tokens=settings.compaction.for_window(model.context_window or 0)[0],
                instructions=instructions,
                replace_instructions=replace_instructions,
                on_retry_scheduled=lambda attempt, most, delay, error: self._emit(
                    SummarizationRetryScheduledEvent(attempt, most, delay, error)
                ),
                on_retry_attempt_start=lambda: self._emit(SummarizationRetryAttemptStartEvent(source="branchSummary")),
                on_retry_finished=lambda *_: self._emit(SummarizationRetryFinishedEvent()),
            )
        finally:
            self._controller = None
        if result is None:
            self._emit(BranchSummaryEndEvent(aborted=True))
            return None
        if isinstance(result, str):
            self._emit(BranchSummaryEndEvent(error_message=f"Branch summary failed: {result}"))
            raise BranchSummaryFailed(f"Branch summary failed: {result}")
        self._emit(BranchSummaryEndEvent(result.message))
        return result.message, result.usage

    def _context(self, leaf_id: str | None) -> list[AgentMessage]:
        """The messages of the branch that ends at ``leaf_id``, as the journal holds them (``TreeError``: unknown)."""
        loaded = read_session(self.journal.read_bytes(), leaf_id)
        index = self.journal.index
        for message, entry_id in zip(loaded.messages, loaded.entry_ids, strict=True):
            if entry_id:
                index.remember(message, entry_id)
        return loaded.messages


def _landing(target: TreeEntry, entry: dict[str, Any]) -> tuple[str | None, str | None]:
    """Where the leaf goes for ``target``, and the text to edit: a user (or custom) message's parent and its text
    (Pi), any other entry itself."""
    message = message_of_entry(entry)
    if target.is_user and isinstance(message, UserMessage):
        return target.parent_id, text_of(message)
    if target.type == "custom_message" and isinstance(message, CustomMessage):
        content = getattr(message, "content", "")
        text = content if isinstance(content, str) else "".join(str(getattr(b, "text", "")) for b in content or [])
        return target.parent_id, text
    return target.id, None


def _left_behind(journal: Journal, old: str | None, target_id: str) -> list[str]:
    """Pi's ``collectEntriesForBranchSummary``: the ids from the old leaf back to (not including) the deepest entry
    on both its path and the target's, oldest first."""
    if old is None:
        return []
    index = journal.index
    on_old = {entry.id for entry in index.path(old)}
    common = next((entry.id for entry in reversed(index.path(target_id)) if entry.id in on_old), None)
    left = []
    for entry in reversed(index.path(old)):
        if entry.id == common:
            break
        left.append(entry.id)
    left.reverse()
    return left
