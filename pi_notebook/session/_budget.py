"""The run budget: what one session operation used against ``BudgetSettings``, and which limit it broke.

The kinds are one table, :data:`KINDS`: a kind names its ``BudgetExceededEvent.kind``, its ``BudgetSettings``
field and what it counts. A new kind is one row here and one field in ``BudgetSettings`` (and, if it counts
something new, one attribute on :class:`RunBudget` that :meth:`RunBudget.record` fills). The wall-time kind is
also armed as a timer (``_timers.py``), since a tool that blocks is not checked between turns.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ..ai import AssistantMessage, Model, cache_savings, input_tokens
from ._events import BudgetExceededEvent
from ._settings import BudgetSettings

__all__ = ["KINDS", "BudgetKind", "RunBudget"]


@dataclass(slots=True)
class RunBudget:
    """Usage of one session operation against ``BudgetSettings``."""

    limits: BudgetSettings
    started: float = 0.0
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cache_read_tokens: int = 0
    """Of ``input_tokens``, those read from the provider's prompt cache (at its cache price)."""
    cache_write_tokens: int = 0
    """Of ``input_tokens``, those written to the prompt cache (Anthropic charges a quarter more for them)."""
    cache_saved_usd: float = 0.0
    """What caching saved: cached and cache-written tokens at the input price, less what they cost."""
    estimated: bool = False
    """A reply's usage was estimated (the server reported none, or not all of it): ``usage.estimated``."""

    def start(self) -> None:
        self.started = time.monotonic()
        self.turns = self.input_tokens = self.output_tokens = 0
        self.cache_read_tokens = self.cache_write_tokens = 0
        self.cost_usd = self.cache_saved_usd = 0.0
        self.estimated = False

    @property
    def elapsed_ms(self) -> float:
        return (time.monotonic() - self.started) * 1000

    def record(self, message: AssistantMessage, model: Model | None = None) -> None:
        """Count a reply; ``model`` (its prices) values what the cache saved."""
        usage = message.usage
        self.turns += 1
        self.input_tokens += input_tokens(usage)
        self.output_tokens += usage.output
        self.estimated = self.estimated or bool(usage.estimated)
        self.cost_usd += usage.cost.total
        self.cache_read_tokens += usage.cache_read
        self.cache_write_tokens += usage.cache_write
        if model is not None:
            self.cache_saved_usd += cache_savings(model, usage)

    def check(self, *, before_request: bool) -> BudgetExceededEvent | None:
        """The first limit exceeded, in :data:`KINDS`' order, if any. Before a request, reaching ``max_turns``
        already counts."""
        for kind in KINDS:
            limit: float | None = getattr(self.limits, kind.limit)
            if limit is None or (kind.at_request and not before_request):
                continue
            used = kind.used(self)
            if used >= limit if kind.at_request else used > limit:
                return BudgetExceededEvent(kind.name, limit, kind.shown(used))
        return None


def _as_is(used: float) -> float:
    return used


@dataclass(frozen=True, slots=True)
class BudgetKind:
    """One row of :data:`KINDS`."""

    name: str
    """``BudgetExceededEvent.kind``, as the event and its reason show it."""
    limit: str
    """The ``BudgetSettings`` field holding the limit (``None``: no limit)."""
    used: Callable[[RunBudget], float]
    """What the operation used so far, compared with the limit."""
    shown: Callable[[float], float] = _as_is
    """What the event reports of ``used``."""
    at_request: bool = False
    """Checked only before a request, where reaching the limit already counts (a turn counts before it is taken);
    else checked before each request and at each turn end, where passing the limit counts."""


KINDS: tuple[BudgetKind, ...] = (
    BudgetKind("wall_time", "wall_time_ms", lambda budget: budget.elapsed_ms, shown=round),
    BudgetKind("turns", "max_turns", lambda budget: budget.turns, at_request=True),
    BudgetKind("input_tokens", "max_input_tokens", lambda budget: budget.input_tokens),
    BudgetKind("output_tokens", "max_output_tokens", lambda budget: budget.output_tokens),
    BudgetKind("cost_usd", "max_cost_usd", lambda budget: budget.cost_usd, shown=lambda used: round(used, 6)),
)
"""Which limits a run has, in the order they are checked (the first exceeded is the one reported)."""
