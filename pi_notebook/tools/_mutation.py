"""One mutation at a time per file (Pi's ``withFileMutationQueue``), for parallel ``write``/``edit`` calls.

Calls on the same file run one after another in the order they asked; calls on different files run in
parallel. The key is the file's real path, so a symlink and its target share a queue. A caller cancelled while
waiting gives its turn up only after the call before it finished, so two mutations never overlap.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

__all__ = ["file_mutation_lock"]

_tails: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Future[None]]] = (
    weakref.WeakKeyDictionary()
)


@asynccontextmanager
async def file_mutation_lock(path: str) -> AsyncIterator[None]:
    """Hold the queue of ``path`` (absolute) for the body of the ``async with``."""
    # Taken synchronously on purpose: keys must be registered in call order (a few stat calls at most).
    key = os.path.realpath(path)  # noqa: ASYNC240
    loop = asyncio.get_running_loop()
    tails = _tails.setdefault(loop, {})
    previous = tails.get(key)
    mine: asyncio.Future[None] = loop.create_future()
    tails[key] = mine

    def release(_: object = None) -> None:
        if not mine.done():
            mine.set_result(None)
        if tails.get(key) is mine:
            del tails[key]

    if previous is not None and not previous.done():
        try:
            await asyncio.shield(previous)
        except BaseException:
            previous.add_done_callback(release)  # keep the order: the next caller waits for ``previous`` too
            raise
    try:
        yield
    finally:
        release()
