"""A child for the SIGKILL tests: imports the tools once, then forks one writer per request.

Importing ``pi_notebook`` takes seconds on a loaded machine, so this process imports it once and forks a fresh
process per write; the test SIGKILLs that process mid-write. Protocol, one line each way:

- stdin ``write <path> <size>`` or ``edit <path> <size>``; the writer prints ``pid <pid>`` once its content is
  built, just before the tool call, then ``done`` (or ``error <text>``) and exits;
- stdin ``reap``: this process waits for the writer and prints ``exit <status>`` (until then a killed writer
  stays a zombie, so its pid cannot be reused under the test's ``kill``); end of stdin ends it.

``write`` writes ``new_content(size)``; ``edit`` replaces the line ``MARKER`` with ``CHANGED`` in a file holding
``old_content(size)``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from pi_notebook.agent import AgentTool
from pi_notebook.ai import AbortController
from pi_notebook.tools import edit_tool, write_tool


def old_content(size: int) -> bytes:
    body = b"".join(b"old line %08d\n" % i for i in range(size // 18))
    return body[: len(body) // 2] + b"MARKER\n" + body[len(body) // 2 :]


def new_content(size: int) -> bytes:
    return b"".join(b"new line %08d\n" % i for i in range(size // 18))


def _say(line: str) -> None:
    os.write(1, (line + "\n").encode())


async def _call(tool: AgentTool, args: dict[str, Any]) -> None:
    await tool.execute("call", args, AbortController().signal, lambda _: None)


def _writer(kind: str, path: str, size: int) -> None:
    directory = os.path.dirname(path)
    args: dict[str, Any]
    if kind == "write":
        tool, args = write_tool(directory), {"path": path, "content": new_content(size).decode()}
    else:
        tool, args = edit_tool(directory), {"path": path, "edits": [{"oldText": "MARKER", "newText": "CHANGED"}]}
    _say(f"pid {os.getpid()}")
    try:
        asyncio.run(_call(tool, args))
    except Exception as exc:
        _say(f"error {exc}")
        os._exit(1)
    _say("done")
    os._exit(0)


def main() -> None:
    _say("ready")
    for line in sys.stdin:
        kind, path, size = line.split()
        pid = os.fork()
        if pid == 0:
            _writer(kind, path, int(size))
        sys.stdin.readline()  # "reap"
        _, status = os.waitpid(pid, 0)
        _say(f"exit {status}")


if __name__ == "__main__":
    main()
