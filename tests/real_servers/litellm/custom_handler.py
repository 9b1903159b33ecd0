"""A LiteLLM custom provider for tests/real_servers: scripted streams (a tool call, malformed tool arguments, a
slow reply, a length stop) that LiteLLM itself turns into the OpenAI and Anthropic wire formats.

Loaded by the LiteLLM proxy (``custom_provider_map`` in config.yaml), in its own virtual environment: it is not
part of pi_notebook and is not imported by the tests.
"""

import asyncio

import litellm
from litellm import CustomLLM

USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}


def _chunk(text="", tool=None, finished=False, reason="", usage=None):
    return {
        "text": text,
        "is_finished": finished,
        "finish_reason": reason,
        "usage": usage,
        "index": 0,
        "tool_use": tool,
    }


def _tool_result(messages):
    results = [m for m in messages if m.get("role") == "tool"]
    return results[-1]["content"] if results else None


class Scripted(CustomLLM):
    def completion(self, *args, **kwargs):
        return litellm.completion(
            model="gpt-3.5-turbo", messages=[{"role": "user", "content": "x"}], mock_response="non-streaming mock"
        )

    async def acompletion(self, *args, **kwargs):
        return self.completion()

    async def astreaming(self, model, messages, *args, **kwargs):
        if model == "overflow":  # LiteLLM's own exception, as a backend whose prompt did not fit raises it
            raise litellm.ContextWindowExceededError(
                message="This model's maximum context length is 8192 tokens", model=model, llm_provider="scripted"
            )
        if model in ("tool", "badargs"):
            result = _tool_result(messages)
            if result is None:
                arguments = '{"a": 2, "b": 3}' if model == "tool" else '{"a": 2, "b": '
                yield _chunk(
                    tool={"id": "call_1", "type": "function", "index": 0, "function": {"name": "add", "arguments": ""}}
                )
                for i in range(0, len(arguments), 4):
                    await asyncio.sleep(0.01)
                    yield _chunk(
                        tool={
                            "id": None,
                            "type": "function",
                            "index": 0,
                            "function": {"name": None, "arguments": arguments[i : i + 4]},
                        }
                    )
                yield _chunk(finished=True, reason="tool_calls", usage=USAGE)
                return
            text = f"The tool said {result}."
            for i in range(0, len(text), 3):
                yield _chunk(text=text[i : i + 3])
            yield _chunk(finished=True, reason="stop", usage=USAGE)
            return
        if model == "slow":  # 400 words, 25 ms apart: long enough to stop part-way
            for i in range(400):
                await asyncio.sleep(0.025)
                yield _chunk(text=f"word{i} ")
            yield _chunk(finished=True, reason="stop", usage=USAGE)
            return
        if model == "length":
            yield _chunk(text="cut short")
            yield _chunk(finished=True, reason="length", usage=USAGE)
            return
        yield _chunk(text="hello from the scripted provider")
        yield _chunk(finished=True, reason="stop", usage=USAGE)


scripted = Scripted()
