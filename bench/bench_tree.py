"""The session tree's costs on a long session (issue 35): what each step costs at 1,000 and 10,000 messages.

    python bench/bench_tree.py

Writes a session of user / assistant (text + tool call) / tool result messages with ``SessionStore`` (the resume
bench's), resumes it, then times, best of 3: ``session.tree()`` (the snapshot ``%pi tree`` and the widget read),
``tree_text`` and ``tree_items`` on it (what ``%pi tree`` prints, what each open run widget gets when a run
settles), ``branch_to`` an entry half way back and back again (the file re-read and its branch rebuilt: what ``%pi
rewind`` pays for the conversation), and ``navigate_tree(summarize=False)`` to the middle prompt (``%pi fork
--no-summary``). Also the resume itself, whose index of every entry the tree adds to, against ``load_session``'s
read of the current branch only (the ratio is the index's cost).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_store import messages

from pi_notebook.ai.providers.faux import FauxProvider
from pi_notebook.notebook._tree_view import tree_items, tree_text
from pi_notebook.session import AgentSession, SessionStore, load_session


def best_of(repeats: int, call: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - started)
    return best


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def measure(count: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        with SessionStore.new(Path(directory)) as store:
            for message in messages(count):
                store.append_message(message)  # type: ignore[arg-type]
            path = store.path
        faux = FauxProvider()
        session = AgentSession(model=faux.model, stream_fn=faux.stream)
        resume = best_of(1, lambda: session.resume(path))
        load = best_of(3, lambda: load_session(path))
        snapshot = best_of(3, session.tree)
        tree = session.tree()
        text = best_of(3, lambda: tree_text(tree))
        items = best_of(3, lambda: tree_items(tree))
        leaf = session.leaf_id
        middle = tree.branch[len(tree.branch) // 2]

        def there_and_back() -> None:
            session.branch_to(middle)
            session.branch_to(leaf)

        branch = best_of(3, there_and_back) / 2
        prompt = next(n.entry.id for _, n in tree.walk() if n.entry.prompt_number == tree_prompts(tree) // 2)
        started = time.perf_counter()
        asyncio.run(session.navigate_tree(prompt, summarize=False))
        navigate = time.perf_counter() - started
        session.dispose()
    print(
        f"{count:>6} messages: resume {ms(resume)} (load_session {ms(load)}), tree() {ms(snapshot)}, "
        f"tree_text {ms(text)}, tree_items {ms(items)}, branch_to {ms(branch)}, navigate_tree {ms(navigate)}"
    )


def tree_prompts(tree: object) -> int:
    return sum(1 for _, node in tree.walk() if node.entry.is_user)  # type: ignore[attr-defined]


def main() -> None:
    for count in (1_000, 10_000):
        measure(count)


if __name__ == "__main__":
    main()
