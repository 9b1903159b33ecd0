"""HTTP provider benchmark over real loopback HTTP (the fault server).

    python bench/bench_http.py

A1  abort-to-final latency mid-SSE: a reply streams one event every 2 ms; after 20 text deltas abort() is
    called; time until the stream's final (aborted) message is available. p50/p99 over 200 runs (target p99
    < 20 ms), for each wire API (chat completions, Anthropic Messages, OpenAI Responses, Gemini).
A2  SSE events parsed per second for one long stream (50k text chunks, no pacing), ours against the official
    ``openai`` SDK reading the same bytes from the same server, as a ratio, best of 3.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

import openai

from pi_notebook.ai import AbortController, Context, StreamOptions, TextContent, UserMessage, stream
from pi_notebook.testing import FaultServer, Reply

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
from wire_apis import APIS, model_for

KEY = "sk-bench"


CONTEXT = Context(messages=[UserMessage(content=[TextContent(text="go")])])


async def abort_latency(api: str, runs: int = 200) -> dict[str, float]:
    samples = []
    with FaultServer() as server:
        model = model_for(api, server)
        for _ in range(runs):
            server.script([Reply.text("word " * 400, chunk_chars=5, delay_s=0.002)])
            controller = AbortController()
            response = stream(model, CONTEXT, StreamOptions(api_key=KEY, signal=controller.signal))
            deltas = 0
            started = 0.0
            async for event in response:
                if event.type == "text_delta":
                    deltas += 1
                    if deltas == 20:
                        started = time.perf_counter()
                        controller.abort()
            message = await response.result()
            samples.append((time.perf_counter() - started) * 1000)
            assert message.stop_reason == "aborted", message.error_message
            await server.wait_until_async(lambda s: s.open_connections == 0)
    samples.sort()
    return {"p50": statistics.median(samples), "p99": samples[int(len(samples) * 0.99) - 1], "n": len(samples)}


async def ours_events_per_second(server: FaultServer, chunks: int) -> float:
    server.script([Reply.text("abcd" * chunks, chunk_chars=4)])
    model = model_for("openai", server)
    started = time.perf_counter()
    count = 0
    async for event in stream(model, CONTEXT, StreamOptions(api_key=KEY)):
        if event.type == "text_delta":
            count += 1
    elapsed = time.perf_counter() - started
    assert count == chunks, count
    return count / elapsed


async def sdk_events_per_second(server: FaultServer, chunks: int) -> float:
    server.script([Reply.text("abcd" * chunks, chunk_chars=4)])
    client = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key=KEY, max_retries=0)
    started = time.perf_counter()
    count = 0
    response = await client.chat.completions.create(
        model="bench", messages=[{"role": "user", "content": "go"}], stream=True
    )
    async for chunk in response:
        if chunk.choices and chunk.choices[0].delta.content:
            count += 1
    elapsed = time.perf_counter() - started
    await client.close()
    assert count == chunks, count
    return count / elapsed


async def parse_rate(chunks: int = 50_000, repeats: int = 3) -> dict[str, float]:
    with FaultServer() as server:
        ours = max([await ours_events_per_second(server, chunks) for _ in range(repeats)])
        sdk = max([await sdk_events_per_second(server, chunks) for _ in range(repeats)])
    return {"ours": ours, "openai_sdk": sdk, "ratio": ours / sdk}


async def main() -> None:
    for api in APIS:
        result = await abort_latency(api)
        print(
            f"A1 abort→final mid-SSE ({api:9}): p50 {result['p50']:.2f} ms, p99 {result['p99']:.2f} ms "
            f"(target p99 < 20 ms: {result['p99'] / 20:.2f}x of target), n={result['n']}"
        )
    rates = await parse_rate()
    print(
        f"A2 SSE events/s, one 50k-event stream: ours {rates['ours']:,.0f}/s, official openai SDK "
        f"{rates['openai_sdk']:,.0f}/s — ours/SDK = {rates['ratio']:.2f}x"
    )


if __name__ == "__main__":
    asyncio.run(main())
