"""The notebook's default model: the offline faux model, which explains how to connect a real provider; and the model
``configure()`` makes of what it is given."""

from __future__ import annotations

from ..ai import Context, Model, StreamFn, StreamOptions, UserMessage
from ..ai.messages import AssistantMessage, text_of
from ..ai.models import SPEC_HELP, model_from_spec
from ..ai.providers.faux import FauxProvider, faux_assistant_message

__all__ = ["WELCOME", "configured_model", "default_faux"]

WELCOME = (
    "Hello! I am **the faux model**: a scripted stand-in that works offline, with no API key.\n\n"
    "You said: *{prompt}*\n\n"
    "To talk to a real model, set a key and pick one:\n\n"
    "- OpenAI: set `OPENAI_API_KEY`, then `%pi model openai:gpt-4o-mini`\n"
    "- Anthropic: set `ANTHROPIC_API_KEY`, then `%pi model anthropic:claude-sonnet-4-5`\n"
    "- A local server (Ollama, vLLM, llama.cpp, LM Studio): "
    "`%pi model openai-compatible:http://127.0.0.1:11434/v1:llama3.2`\n\n"
    "With a real model I can act in this notebook, with tools rooted at the kernel's working directory: "
    "`python` (runs code on your variables), `bash`, `read`, `write`, `edit`, `ls`, `grep` and `find`. "
    "`python`, `bash`, `write` and `edit` ask first: the widget shows the call with **Run**, **Skip** and "
    "**Always for this session** (`%pi tools` lists them; `%pi settings tools.approval=auto` stops the asking).\n\n"
    "Meanwhile, try **Stop** while I stream, or queue a follow-up in the box below."
)


def default_faux(tokens_per_second: float = 40) -> FauxProvider:
    """The notebook's default model: streams a short explanation of itself for any prompt."""
    faux = FauxProvider(tokens_per_second=tokens_per_second, token_size=(1, 2), seed=0)

    def answer(context: Context, options: StreamOptions, state: object, model: Model) -> AssistantMessage:
        prompt = next((text_of(m) for m in reversed(context.messages) if isinstance(m, UserMessage)), "")
        faux.append_responses([answer])  # always have a reply ready for the next request
        return faux_assistant_message(WELCOME.format(prompt=prompt.strip() or "(nothing)"))

    faux.set_responses([answer])
    return faux


def configured_model(
    model: Model | str | None, stream_fn: StreamFn | None
) -> tuple[Model, StreamFn | None, str, FauxProvider | None]:
    """``configure``'s model, stream function, spec (as ``%pi status`` shows it) and faux model (none given: the
    default faux model). Raises ``ValueError`` for a spec it cannot read, or a stream function without a model."""
    if isinstance(model, str) and model.strip() != "faux":
        return model_from_spec(model), stream_fn, model, None
    if isinstance(model, Model):
        return model, stream_fn, f"{model.provider}:{model.id}", None
    if stream_fn is None:
        faux = default_faux()
        return faux.model, faux.stream, "faux", faux
    raise ValueError("configure(stream_fn=...) needs a model too; " + SPEC_HELP)
