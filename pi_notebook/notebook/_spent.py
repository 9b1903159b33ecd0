"""What a run spent, as the widget's usage line and the run's receipt say it: one wording, so the two agree.

Input counts every token the model was given: plain, read from the prompt cache and written to it (as
``budget.max_input_tokens`` counts them); the cached share is said beside it. Usage a server did not report
(llama-cpp-python reports none; a stopped reply's rest) is estimated, characters / 4 (``usage.estimated``): its
counts read ``~5204`` and the line ends ``estimated``. A model without prices (a local server, an id the catalog does
not know) reads "cost unknown (no prices)", never ``$0.0000``, which would read as free, and says when a cost budget
cannot apply to it. The offline faux model is free: ``$0.0000``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..ai import AssistantMessage, Model, cache_savings, input_tokens
from ..ai.providers.faux import FAUX_API

__all__ = ["Spent", "is_priced"]


def is_priced(model: Model) -> bool:
    """The model has prices, so a cost of 0 means free (the offline faux model is free)."""
    price = model.cost
    return model.api == FAUX_API or any((price.input, price.output, price.cache_read, price.cache_write))


@dataclass(frozen=True, slots=True)
class Spent:
    """Tokens and cost of some replies (``input`` counts every input token: see the module docstring)."""

    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    cost: float = 0.0
    saved: float = 0.0
    """What the prompt cache saved (negative: what writing to it cost more)."""
    estimated: bool = False
    priced: bool = True

    @classmethod
    def of(cls, replies: Iterable[AssistantMessage], model: Model) -> Spent:
        """What ``replies`` (made with ``model``) spent."""
        replies = list(replies)
        return cls(
            input=sum(input_tokens(reply.usage) for reply in replies),
            cache_read=sum(reply.usage.cache_read for reply in replies),
            cache_write=sum(reply.usage.cache_write for reply in replies),
            output=sum(reply.usage.output for reply in replies),
            cost=sum(reply.usage.cost.total for reply in replies),
            saved=sum(cache_savings(model, reply.usage) for reply in replies),
            estimated=any(reply.usage.estimated for reply in replies),
            priced=is_priced(model),
        )

    def input_text(self, limit: int | None = None) -> str:
        """``in 5204 tok/8000 (2982 cached, saved $0.0081)``."""
        return f"in {self._count(self.input)} tok" + (f"/{limit}" if limit else "") + self._cached()

    def output_text(self, limit: int | None = None) -> str:
        """``out 120 tok``, ``out ~120 tok`` (estimated)."""
        return f"out {self._count(self.output)} tok" + (f"/{limit}" if limit else "")

    def cost_text(self, limit: float | None = None) -> str:
        """``$0.0133/$0.50``, or ``cost unknown (no prices)`` for a model without them."""
        if not self.priced:
            return "cost unknown (no prices" + (f": the ${limit:.2f} budget cannot apply)" if limit else ")")
        return f"${self.cost:.4f}" + (f"/${limit:.2f}" if limit else "")

    def parts(
        self, *, max_input: int | None = None, max_output: int | None = None, max_cost: float | None = None
    ) -> list[str]:
        """``["in 5204 tok (2982 cached)", "out 120 tok", "$0.0000"]``, against the limits given, and
        ``"estimated"`` last when some count is (its numbers read ``~``)."""
        parts = [self.input_text(max_input), self.output_text(max_output), self.cost_text(max_cost)]
        return parts + (["estimated"] if self.estimated else [])

    def _count(self, tokens: int) -> str:
        return f"~{tokens}" if self.estimated else str(tokens)

    def _cached(self) -> str:
        """`` (30000 cached, 2000 written, saved $0.0810)``: the prompt cache's share of the input and what it saved
        (for a priced model; writes cost more than plain input on Anthropic, so a first turn can cost more)."""
        if not (self.cache_read or self.saved):
            return ""
        shown = [f"{self.cache_read} cached"]
        if self.saved:
            shown += [f"{self.cache_write} written"] if self.cache_write else []
            shown.append(f"saved ${self.saved:.4f}" if self.saved > 0 else f"cost ${-self.saved:.4f} more")
        return f" ({', '.join(shown)})"
