"""An MCP server written with the official SDK (``mcp.server.mcpserver.MCPServer``), for the tests: run as a user runs
one, ``python mcp_test_server.py [--http PORT] [--hang-initialize | --fail-start]``.

Its tools, one per behaviour the client must handle:

- ``echo`` (read-only): returns its text;
- ``note`` (changes something): appends its text to the file ``$MCP_TEST_NOTES`` and says how many notes it holds;
- ``hang``: says it started (a progress notification) and never returns; when the client's ``notifications/cancelled``
  cancels it, it writes ``cancelled`` to the file it is given (so a test sees that the cancellation reached it);
- ``hang_deaf``: says it started and never returns, ignoring cancellation (a shielded wait);
- ``progress``: reports ``steps`` progress notifications, then returns (with ``hold``: then waits until cancelled);
- ``exit_now``: the process exits in the middle of the call;
- ``big``: returns ``megabytes`` MB of text in numbered lines;
- ``picture``: returns a small PNG image and a caption;
- ``env``: the value of an environment variable of the server's process (``<unset>`` when it has none);
- ``header_digest``: the SHA-256 of an HTTP request header it received (``--http``);
- ``fails``: a tool error (``isError``) with its text.

``--hang-initialize`` reads its input and never answers (a server stuck before ``initialize``); ``--fail-start``
writes an error to stderr and exits with status 3 at once.
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import time
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True)
CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=False)
# A 1x1 PNG (transparent).
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer("pi-notebook-test-server", instructions="Tools for pi_notebook's MCP tests.")


@server.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Return the text as it was given."""
    return text


@server.tool(annotations=CHANGES)
def note(text: str) -> str:
    """Append a note to the notes file and say how many it holds."""
    path = Path(os.environ.get("MCP_TEST_NOTES", "notes.txt"))
    with path.open("a", encoding="utf-8") as file:
        file.write(text + "\n")
    count = len(path.read_text(encoding="utf-8").splitlines())
    return f"noted ({count} notes)"


@server.tool(annotations=READ_ONLY)
async def hang(ctx: Context, marker: str = "") -> str:
    """Say it started (a progress notification), then wait forever (until cancelled)."""
    try:
        await ctx.report_progress(0, None, "started")
        await anyio.sleep_forever()
    finally:
        if marker:
            with anyio.CancelScope(shield=True):
                await anyio.Path(marker).write_text("cancelled", encoding="utf-8")
    return "unreachable"


@server.tool(annotations=READ_ONLY)
async def hang_deaf(ctx: Context) -> str:
    """Say it started (a progress notification), then wait forever, ignoring cancellation."""
    with anyio.CancelScope(shield=True):
        await ctx.report_progress(0, None, "started")
        await anyio.sleep_forever()
    return "unreachable"


@server.tool(annotations=READ_ONLY)
async def progress(steps: int, ctx: Context, hold: bool = False) -> str:
    """Report progress ``steps`` times, then finish (or, with ``hold``, wait until cancelled)."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    if hold:
        await anyio.sleep_forever()
    return f"done after {steps} steps"


@server.tool(annotations=READ_ONLY)
def exit_now() -> str:
    """Exit the server process in the middle of the call."""
    sys.stdout.flush()
    os._exit(7)


@server.tool(annotations=READ_ONLY)
def big(megabytes: float) -> str:
    """Return ``megabytes`` MB of numbered lines."""
    lines, size, number = [], 0, 0
    while size < megabytes * 1024 * 1024:
        number += 1
        line = f"line {number:08d} " + "x" * 80
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


@server.tool(annotations=READ_ONLY, structured_output=False)
def picture() -> list[object]:
    """A small image and its caption."""
    return ["a one-pixel PNG", Image(data=PIXEL, format="png")]


@server.tool(annotations=READ_ONLY)
def env(name: str) -> str:
    """The value of an environment variable of the server's process."""
    return os.environ.get(name, "<unset>")


@server.tool(annotations=READ_ONLY)
def header_digest(name: str, ctx: Context) -> str:
    """The SHA-256 of an HTTP request header the server received (``<none>`` without it), so a test sees the value
    arrived without it being shown."""
    value = (ctx.headers or {}).get(name.lower())
    return hashlib.sha256(value.encode()).hexdigest() if value is not None else "<none>"


@server.tool(annotations=READ_ONLY)
def fails(text: str) -> str:
    """Raise an error with the text."""
    raise ToolError(text)


def main(argv: list[str]) -> None:
    if "--fail-start" in argv:
        sys.stderr.write("mcp_test_server: cannot start (asked to fail)\n")
        sys.exit(3)
    if "--hang-initialize" in argv:
        while sys.stdin.readline():
            pass
        time.sleep(3600)
        return
    if "--http" in argv:
        port = int(argv[argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
        return
    server.run()


if __name__ == "__main__":
    main(sys.argv[1:])
