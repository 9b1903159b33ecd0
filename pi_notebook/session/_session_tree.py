"""The session-tree part of :class:`~._session.AgentSession`'s façade (kept apart so each part stays small): where
the session is in its tree (``leaf_id``, ``tree()``) and going elsewhere in it (``branch_to``, ``navigate_tree``).
The tree is ``_tree``'s, the moves ``_navigator``'s."""

from __future__ import annotations

from ._navigator import Navigator, TreeNavigation
from ._operation import Operation
from ._session_file import SessionFile
from ._tree import SessionTree

__all__ = ["SessionTreeMethods"]


class SessionTreeMethods:
    """Mixed into :class:`~._session.AgentSession`, which sets the three parts below."""

    _file: SessionFile
    _operation: Operation
    _navigator: Navigator

    @property
    def leaf_id(self) -> str | None:
        """The last entry of the current branch, where the next one goes (``None``: none, or before the first)."""
        return self._file.journal.leaf_id

    @property
    def prompt_count(self) -> int:
        """How many user prompts the session holds, on every branch (cheap: no tree is made)."""
        return self._file.journal.index.prompts

    def tree(self) -> SessionTree:
        """Every entry of the session (every branch) as a tree, the current branch marked."""
        return self._file.journal.index.snapshot()

    def branch_to(self, entry_id: str | None) -> None:
        """Move the current branch's leaf to ``entry_id`` (``None``: before the first entry), with no summary, and
        record it so that the session file opened again (by us, and by Pi 0.83, whose leaf is the file's last
        entry) continues from there; the entries left behind stay in the file and in :meth:`tree`. The agent's
        messages become that branch's context (``%pi rewind`` moves the conversation back so).

        Raises :class:`~._operation.SessionBusyError` while an operation is active and ``TreeError`` (a
        ``ValueError``) for an entry the session does not have; nothing changes then."""
        self._operation.check_free(navigating=True)
        self._navigator.branch_to(entry_id)

    async def navigate_tree(
        self, target_id: str, *, summarize: bool = True, custom_instructions: str | None = None
    ) -> TreeNavigation:
        """Continue from any entry (Pi's ``navigateTree``, see :meth:`Navigator.navigate`): to a user message, the
        leaf becomes its parent and its text comes back (``editor_text``) to edit and send again; to another entry,
        the leaf becomes that entry. With ``summarize`` the branch left behind is summarised first, with Pi's prompt
        (``custom_instructions``: what to focus on), and written at the new leaf as Pi's ``branch_summary`` entry.
        ``abort()`` stops the summary: the result is ``cancelled`` and ``aborted``, and nothing changed.

        Raises :class:`~._operation.SessionBusyError` while an operation is active, ``TreeError`` for an unknown
        entry and ``BranchSummaryFailed`` (a ``RuntimeError``) when the summary request fails; nothing changes
        then."""
        self._operation.check_free(navigating=True)
        with self._operation.aside("navigation"):
            return await self._navigator.navigate(
                target_id, summarize=summarize, custom_instructions=custom_instructions
            )

    def abort_branch_summary(self) -> None:
        """Stop a branch summary being written (``navigate_tree``); the leaf does not move."""
        self._navigator.abort()
