"""Session-file append cost per message, flat from 100 to 10 000 messages.

    python bench/bench_store.py

Each append serialises one message and writes one line with a single ``os.write`` (no fsync: a SIGKILL
cannot lose what the kernel already has). The cost must not grow with the file.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from pi_notebook.ai import AssistantMessage, TextContent, ToolCall, ToolResultMessage, Usage, UserMessage
from pi_notebook.session import SessionStore


def messages(n: int) -> list[object]:
    out: list[object] = []
    for i in range(n // 3 + 1):
        out.append(UserMessage(content=[TextContent(text=f"question {i} " + "x" * 200)]))
        out.append(
            AssistantMessage(
                content=[
                    TextContent(text="answer " * 40),
                    ToolCall(id=f"c{i}", name="bash", arguments={"command": "ls"}),
                ],
                usage=Usage(input=100, output=50, total_tokens=150),
                stop_reason="toolUse",
            )
        )
        out.append(ToolResultMessage(tool_call_id=f"c{i}", tool_name="bash", content=[TextContent(text="file\n" * 20)]))
    return out[:n]


def per_message_us(n: int, repeats: int = 3) -> float:
    best = float("inf")
    batch = messages(n)
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as directory, SessionStore(Path(directory) / "s.jsonl") as store:
            started = time.perf_counter()
            for message in batch:
                store.append_message(message)  # type: ignore[arg-type]
            best = min(best, (time.perf_counter() - started) / n * 1e6)
    return best


def main() -> None:
    small, large = per_message_us(100), per_message_us(10_000)
    print(
        f"store append: {small:.1f} µs/message @100, {large:.1f} µs/message @10000 — ratio {large / small:.2f}x (flat)"
    )


if __name__ == "__main__":
    main()
