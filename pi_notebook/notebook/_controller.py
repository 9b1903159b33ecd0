"""The notebook's one session and its runs: ``configure()``, ``get_session()``, starting runs, the SIGINT hook.

The default model is the offline faux model: no key, no network; its reply explains how to connect a real
provider (``%pi model openai:gpt-4o-mini`` with ``OPENAI_API_KEY`` set, and so on).
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from ..agent import AgentTool
from ..ai import Cassette, Context, Model, StreamFn, StreamOptions, UserMessage
from ..ai.messages import text_of
from ..ai.models import SPEC_HELP, model_from_spec
from ..ai.providers.faux import FauxProvider, faux_assistant_message
from ..session import AgentSession, Settings
from ._run import Run

__all__ = ["NotebookAgent", "configure", "default_faux", "get_agent", "get_session"]

WELCOME = (
    "Hello! I am **the faux model**: a scripted stand-in that works offline, with no API key.\n\n"
    "You said: *{prompt}*\n\n"
    "To talk to a real model, set a key and pick one:\n\n"
    "- OpenAI: set `OPENAI_API_KEY`, then `%pi model openai:gpt-4o-mini`\n"
    "- Anthropic: set `ANTHROPIC_API_KEY`, then `%pi model anthropic:claude-sonnet-4-5`\n"
    "- A local server (Ollama, vLLM, llama.cpp, LM Studio): "
    "`%pi model openai-compatible:http://127.0.0.1:11434/v1:llama3.2`\n\n"
    "Meanwhile, try **Stop** while I stream, or queue a follow-up in the box below."
)


def default_faux(tokens_per_second: float = 40) -> FauxProvider:
    """The notebook's default model: streams a short explanation of itself for any prompt."""
    faux = FauxProvider(tokens_per_second=tokens_per_second, token_size=(1, 2), seed=0)

    def answer(context: Context, options: StreamOptions, state: Any, model: Model) -> Any:
        prompt = next((text_of(m) for m in reversed(context.messages) if isinstance(m, UserMessage)), "")
        faux.append_responses([answer])  # always have a reply ready for the next request
        return faux_assistant_message(WELCOME.format(prompt=prompt.strip() or "(nothing)"))

    faux.set_responses([answer])
    return faux


@dataclass
class NotebookAgent:
    """What ``%pi`` drives: one session, its runs, and how it was configured."""

    session: AgentSession
    model_spec: str
    faux: FauxProvider | None = None
    runs: list[Run] = field(default_factory=list)
    interrupt_hook: bool = False
    cassette: Cassette | None = None
    _previous_sigint: Any = None

    @property
    def busy(self) -> bool:
        """A run was started and has not settled (its task may not have begun yet), or the session works."""
        return self.active_run is not None or not self.session.is_idle

    @property
    def active_run(self) -> Run | None:
        return next((run for run in reversed(self.runs) if not run.done), None)

    @property
    def current_run(self) -> Run | None:
        """The active run, else the last one (``None`` before the first)."""
        return self.active_run or (self.runs[-1] if self.runs else None)

    def start(self, label: str, operation: Callable[[], Any], *, with_view: bool = True) -> Run:
        if self.cassette is not None:
            operation = _within(self.cassette, operation)
        run = Run(self.session, len(self.runs) + 1, operation, label=label, with_view=with_view)
        self.runs.append(run)
        return run

    def abort_active(self) -> None:
        for run in self.runs:
            if not run.done:
                run.abort()

    # -- SIGINT while idle ------------------------------------------------------------------------------
    def set_interrupt_hook(self, on: bool, kernel: Any = None) -> None:
        """Opt-in: SIGINT while the kernel is idle (the interrupt button) aborts active runs.

        ipykernel ignores SIGINT while idle; around each request it installs its own handler and then restores
        the one it saved (``kernel.saved_sigint_handler``), so the hook is installed there as well as now.
        While a cell runs, ipykernel's handler wins: an awaiting cell is cancelled, which aborts its run too.
        """
        if on == self.interrupt_hook:
            return
        if on:
            loop = asyncio.get_running_loop()

            def handler(signum: int, frame: FrameType | None) -> None:
                loop.call_soon_threadsafe(self.abort_active)

            self._previous_sigint = getattr(kernel, "saved_sigint_handler", None) or signal.getsignal(signal.SIGINT)
            installed: Any = handler
        else:
            installed = self._previous_sigint or signal.SIG_IGN
        signal.signal(signal.SIGINT, installed)
        if kernel is not None:
            kernel.saved_sigint_handler = installed
        self.interrupt_hook = on


def _within(cassette: Cassette, operation: Callable[[], Any]) -> Callable[[], Any]:
    """``operation`` with ``cassette`` active: the run's provider requests (its tasks inherit it) use it."""

    async def run() -> Any:
        async with cassette:
            return await operation()

    return run


_agent: NotebookAgent | None = None
_KEEP: Any = object()


def configure(
    model: Model | str | None = None,
    stream_fn: StreamFn | None = None,
    tools: Iterable[AgentTool] = (),
    settings: Settings | Mapping[str, Any] | None = None,
    cassette: Cassette | str | os.PathLike[str] | None = _KEEP,
    **session_options: Any,
) -> AgentSession:
    """(Re)create the notebook's session. ``model`` is a :class:`~pi_notebook.ai.Model` or a spec string
    (see ``%pi help``); with neither ``model`` nor ``stream_fn`` the offline faux model is used. ``settings`` is a
    :class:`~pi_notebook.session.Settings` or a dict of its fields (``{"retry": {"max_retries": 5}}``). An active
    run of the previous session is aborted.

    ``cassette``: a :class:`~pi_notebook.ai.Cassette` (or a path, for ``Cassette(path)``) that every ``%pi`` run
    records to or replays from, as ``%pi cassette PATH`` sets; ``None`` turns it off. Left out, the cassette in
    use is kept, so ``configure()`` after ``%pi cassette`` never makes a notebook call out unnoticed."""
    global _agent
    if cassette is _KEEP:
        cassette = _agent.cassette if _agent is not None else None
    elif cassette is not None and not isinstance(cassette, Cassette):
        cassette = Cassette(cassette)
    if cassette is not None:
        cassette.load()  # a missing file in replay-only mode fails here, not in the first run
    if _agent is not None:
        _agent.abort_active()
        _agent.session.dispose()
    faux = None
    spec = "faux"
    if isinstance(model, str) and model.strip() != "faux":
        spec = model
        model = model_from_spec(model)
    elif isinstance(model, Model):
        spec = f"{model.provider}:{model.id}"
    elif stream_fn is None:
        faux = default_faux()
        model, stream_fn = faux.model, faux.stream
    if not isinstance(model, Model):
        raise ValueError("configure(stream_fn=...) needs a model too; " + SPEC_HELP)
    session = AgentSession(model=model, stream_fn=stream_fn, tools=tools, settings=settings, **session_options)
    _agent = NotebookAgent(session=session, model_spec=spec, faux=faux, cassette=cassette)
    return session


def get_agent() -> NotebookAgent:
    if _agent is None:
        configure()
    assert _agent is not None
    return _agent


def get_session() -> AgentSession:
    """The notebook's session (created with the faux model on first use)."""
    return get_agent().session
