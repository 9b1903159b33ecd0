"""What prompt caching is worth: the input cost of a scripted 20-request session with a 30k-token prefix, with and
without caching, at Anthropic's and OpenAI's published prices, for our request bodies and Pi 0.83's.

    python bench/bench_caching.py   # ours; Pi's too when Pi 0.83 is in $PI083_DIR (default ~/.cache/pi-notebook/pi083)

The session: a 30k-token system prompt (project notes) and two tools, then 10 prompts each answered by one tool
call and a reply: 20 model requests, each re-sending everything before it. For each API the 20 request bodies are
built by our providers (``build_payload``) and, for Pi, recorded from Pi's own ``streamSimple`` with the same
model, context and options (the recorder of ``tests/fixtures/pi-requests/README.md``, run on this session's cases).

The bodies are then charged as the providers charge them (token counts are characters / 4 of each part, the same
rule for ours and Pi's):

* Anthropic (prompt order tools, system, messages): a block with ``cache_control`` writes the prefix up to it to the
  cache (at 1.25x the input price); a later request reads the longest cached prefix that ends at one of its own
  breakpoints or up to 20 blocks before one (0.1x); the rest is input. Prefixes under 1,024 tokens are not cached.
  Without ``cache_control`` nothing is cached.
* OpenAI (tools, then the messages): the longest prefix a previous request of the session shared is read from the
  cache (0.25x-0.5x by model) once the prompt has 1,024 tokens, in steps of 128 tokens. OpenAI caches without being
  asked; ``prompt_cache_key`` (the session id) keeps a session's requests on the machine that holds its cache. The
  "no cache" column is what the tokens cost at the full input price.

The first row of each API is ours with ``cache_retention="none"`` (what we sent before issue 29: no breakpoints,
no cache key): Anthropic then caches nothing, OpenAI still caches by itself.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import math
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pi_notebook.ai import Context, Model, StreamOptions, Tool
from pi_notebook.ai.messages import message_from_dict
from pi_notebook.ai.providers import _anthropic_request, _openai_request, _responses_request

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "tests" / "fixtures" / "pi-requests" / "README.md"
SESSION = "bench-caching-session-0001"
PROMPTS = 10  # each one tool round: 20 requests

# Published prices, US dollars per million tokens (input, cache read, cache write), as in Pi 0.83's catalog.
MODELS: dict[str, dict[str, Any]] = {
    "claude-sonnet-4-5 (Anthropic)": {
        "id": "claude-sonnet-4-5", "api": "anthropic-messages", "provider": "anthropic",
        "baseUrl": "https://api.anthropic.com", "reasoning": True,
        "cost": {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75},
    },
    "gpt-4.1 (OpenAI Responses)": {
        "id": "gpt-4.1", "api": "openai-responses", "provider": "openai", "baseUrl": "https://api.openai.com/v1",
        "reasoning": False, "cost": {"input": 2.0, "output": 8.0, "cacheRead": 0.5, "cacheWrite": 0.0},
        "compat": {"supportsStrictMode": True},
    },
    "gpt-4.1 (OpenAI chat completions)": {
        "id": "gpt-4.1", "api": "openai-completions", "provider": "openai", "baseUrl": "https://api.openai.com/v1",
        "reasoning": False, "cost": {"input": 2.0, "output": 8.0, "cacheRead": 0.5, "cacheWrite": 0.0},
        "compat": {"supportsStrictMode": True},
    },
}  # fmt: skip
for _model in MODELS.values():
    _model |= {"name": _model["id"], "input": ["text", "image"], "contextWindow": 1_000_000, "maxTokens": 32_000}

BUILDERS = {
    "anthropic-messages": _anthropic_request.build_payload,
    "openai-responses": _responses_request.build_payload,
    "openai-completions": _openai_request.build_payload,
}
TOOLS: list[dict[str, Any]] = [
    {"name": "bash", "description": "Run a shell command.",
     "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}},
    {"name": "read", "description": "Read a file.",
     "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
]  # fmt: skip


def system_prompt(tokens: int = 30_000) -> str:
    """About ``tokens`` tokens (4 characters each) of project notes, deterministic."""
    lines: list[str] = []
    index = size = 0
    while size < tokens * 4:
        index += 1
        lines.append(f"Note {index}: module m{index % 97} calls m{(index * 7) % 97}; keep function f{index} pure.")
        size += len(lines[-1]) + 1
    return "You are a coding assistant for this project.\n" + "\n".join(lines)


def conversation(model: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The messages of each of the 20 requests (Pi's message format)."""
    usage = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}  # fmt: skip

    def reply(content: list[dict[str, Any]], stop: str, t: int) -> dict[str, Any]:
        return {"role": "assistant", "content": content, "api": model["api"], "provider": model["provider"],
                "model": model["id"], "usage": usage, "stopReason": stop, "timestamp": t}  # fmt: skip

    requests, messages, t = [], [], 0
    for n in range(1, PROMPTS + 1):
        messages.append(
            {"role": "user", "content": [{"type": "text", "text": f"Task {n}: check m{n}."}], "timestamp": t}
        )
        requests.append(copy.deepcopy(messages))
        call_id = f"call_{n}|fc_{n}" if model["api"] == "openai-responses" else f"toolu_{n:02d}"
        call = {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": f"m{n}.py"}}
        messages.append(reply([call], "toolUse", t + 1))
        output = f"def f{n}():\n" + "    return 1  # line\n" * 40
        result = [{"type": "text", "text": output}]
        messages.append({"role": "toolResult", "toolCallId": call_id, "toolName": "read", "content": result,
                         "isError": False, "timestamp": t + 2})  # fmt: skip
        requests.append(copy.deepcopy(messages))
        messages.append(reply([{"type": "text", "text": f"m{n} looks fine."}], "stop", t + 3))
        t += 4
    return requests


def ours(model: dict[str, Any], system: str, retention: str) -> list[dict[str, Any]]:
    ours_model = Model(**model)
    tools = [Tool(t["name"], t["description"], t["parameters"]) for t in TOOLS]
    options = StreamOptions(session_id=SESSION, cache_retention=retention)  # type: ignore[arg-type]
    bodies = []
    for messages in conversation(model):
        context = Context(system, [message_from_dict(m) for m in messages], tools)
        bodies.append(BUILDERS[model["api"]](ours_model, context, options))
    return bodies


def pi(model: dict[str, Any], system: str, retention: str, pi_dir: Path) -> list[dict[str, Any]] | None:
    """Pi's bodies for the same requests, from Node (``None`` when Pi 0.83 is not installed in ``pi_dir``)."""
    if not (pi_dir / "node_modules" / "@earendil-works" / "pi-ai").is_dir():
        return None
    script = re.search(r"```js\n(.*?)```", README.read_text(), re.S)
    assert script is not None, f"no recorder script in {README}"
    cases = [
        {"name": f"r{index}", "model": "m", "env": {},
         "context": {"systemPrompt": system, "messages": messages, "tools": TOOLS},
         "options": {"sessionId": SESSION, "cacheRetention": retention}}
        for index, messages in enumerate(conversation(model))
    ]  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cases.json"
        path.write_text(json.dumps({"models": {"m": model}, "cases": cases}))
        recorder = pi_dir / f".bench-caching-{os.getpid()}.mjs"  # beside node_modules, so its imports resolve
        recorder.write_text(script.group(1))
        try:
            out = subprocess.run(
                ["node", str(recorder), str(path)], cwd=pi_dir, capture_output=True, text=True, check=True
            )
        finally:
            recorder.unlink()
    recorded = json.loads(out.stdout)["requests"]
    return [recorded[f"r{index}"]["body"] for index in range(len(cases))]


# -- what the provider charges for a body -------------------------------------------------------------------------


def tokens(part: Any) -> int:
    return math.ceil(len(json.dumps(part, separators=(",", ":"), ensure_ascii=False)) / 4)


def without_marks(part: Any) -> Any:
    if isinstance(part, dict):
        return {k: without_marks(v) for k, v in part.items() if k != "cache_control"}
    if isinstance(part, list):
        return [without_marks(v) for v in part]
    return part


@dataclass
class Bill:
    input: int = 0
    read: int = 0
    write: int = 0

    def cost(self, price: dict[str, float], *, long: bool = False) -> float:
        """At the model's prices; Anthropic's one-hour writes (long retention) cost twice the input price."""
        write = 2 * price["input"] if long else price["cacheWrite"]
        return (self.input * price["input"] + self.read * price["cacheRead"] + self.write * write) / 1e6

    def full(self, price: dict[str, float]) -> float:
        return (self.input + self.read + self.write) * price["input"] / 1e6


def anthropic_blocks(body: dict[str, Any]) -> list[tuple[Any, bool]]:
    """The prompt as Anthropic reads it (tools, system, messages), block by block, each with its breakpoint mark."""
    blocks = [(tool, "cache_control" in tool) for tool in body.get("tools", [])]
    blocks += [(block, "cache_control" in block) for block in body.get("system", [])]
    for message in body["messages"]:
        content = message["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks += [({"role": message["role"], **part}, "cache_control" in part) for part in parts]
    return blocks


def anthropic_bills(bodies: list[dict[str, Any]]) -> Bill:
    cache: set[str] = set()
    total = Bill()
    for body in bodies:
        blocks = anthropic_blocks(body)
        sums, hashes, digest, running = [], [], hashlib.sha256(), 0
        for block, _ in blocks:
            digest.update(json.dumps(without_marks(block), sort_keys=True).encode())
            hashes.append(digest.copy().hexdigest())
            running += tokens(without_marks(block))
            sums.append(running)
        marks = [index for index, (_, marked) in enumerate(blocks) if marked]
        read = max((sums[j] for b in marks for j in range(max(0, b - 19), b + 1) if hashes[j] in cache), default=0)
        cacheable = [b for b in marks if sums[b] >= 1024]
        cache.update(hashes[b] for b in cacheable)
        write = max(0, sums[cacheable[-1]] - read) if cacheable else 0
        total.read += read
        total.write += write
        total.input += running - read - write
    return total


def openai_prompt(body: dict[str, Any]) -> str:
    """The prompt's text in the order OpenAI caches it: tools first, then the messages or input items."""
    items = body.get("tools", []) + body.get("messages", body.get("input", []))
    return "".join(json.dumps(item, separators=(",", ":"), ensure_ascii=False) for item in items)


def openai_bills(bodies: list[dict[str, Any]]) -> Bill:
    total, previous = Bill(), ""
    for body in bodies:
        text = openai_prompt(body)
        prompt = math.ceil(len(text) / 4)
        same = next(
            (i for i, (a, b) in enumerate(zip(previous, text, strict=False)) if a != b), min(len(previous), len(text))
        )
        cached = 0
        if prompt >= 1024 and same // 4 >= 1024:
            cached = 1024 + (same // 4 - 1024) // 128 * 128
        total.read += cached
        total.input += prompt - cached
        previous = text
    return total


def bill(api: str, bodies: list[dict[str, Any]]) -> Bill:
    return anthropic_bills(bodies) if api == "anthropic-messages" else openai_bills(bodies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--retention", choices=("short", "long"), default="short")
    args = parser.parse_args()
    pi_dir = Path(os.environ.get("PI083_DIR", "~/.cache/pi-notebook/pi083")).expanduser()
    system = system_prompt()
    print(
        f"{PROMPTS * 2} requests, system prompt {len(system) / 4 / 1000:.0f}k tokens, cache retention {args.retention}"
    )
    print(f"{'':58} {'input k tok':>11} {'read k':>8} {'write k':>8} {'no cache $':>11} {'cached $':>9} {'saved':>6}")
    for name, model in MODELS.items():
        price = model["cost"]
        rows = [
            ("ours, no caching asked", ours(model, system, "none")),
            ("ours", ours(model, system, args.retention)),
            ("Pi 0.83", pi(model, system, args.retention, pi_dir)),
        ]
        for who, bodies in rows:
            label = f"{name} — {who}"
            if bodies is None:
                print(f"{label:58} (Pi 0.83 not found in {pi_dir}: see tests/fixtures/pi-requests/README.md)")
                continue
            paid = bill(model["api"], bodies)
            full, cost = paid.full(price), paid.cost(price, long=args.retention == "long" and who != rows[0][0])
            print(
                f"{label:58} {(paid.input + paid.read + paid.write) / 1000:>11.1f} {paid.read / 1000:>8.1f} "
                f"{paid.write / 1000:>8.1f} {full:>11.4f} {cost:>9.4f} {1 - cost / full:>6.0%}"
            )


if __name__ == "__main__":
    main()
