"""The run budget's kinds are one table (``session/_budget.py``): every ``BudgetSettings`` field has its row, and
each row's kind is what the event reports when that limit is broken."""

from __future__ import annotations

from pi_notebook.session import BudgetSettings
from pi_notebook.session._budget import KINDS, RunBudget


def test_each_budget_setting_has_one_row_and_each_row_one_setting() -> None:
    assert sorted(kind.limit for kind in KINDS) == sorted(BudgetSettings.model_fields)
    assert len({kind.name for kind in KINDS}) == len(KINDS)


def test_the_first_row_exceeded_is_the_kind_reported() -> None:
    budget = RunBudget(BudgetSettings(max_input_tokens=10, max_output_tokens=5, max_cost_usd=0.5))
    budget.start()
    budget.input_tokens, budget.output_tokens, budget.cost_usd = 11, 6, 0.1234567
    exceeded = budget.check(before_request=False)
    assert exceeded is not None and (exceeded.kind, exceeded.limit, exceeded.used) == ("input_tokens", 10, 11)
    budget.input_tokens, budget.output_tokens, budget.cost_usd = 0, 0, 0.6000004
    exceeded = budget.check(before_request=False)
    assert exceeded is not None and (exceeded.kind, exceeded.used) == ("cost_usd", 0.6)


def test_reaching_max_turns_stops_only_the_next_request() -> None:
    budget = RunBudget(BudgetSettings(max_turns=2))
    budget.start()
    budget.turns = 2
    assert budget.check(before_request=False) is None
    exceeded = budget.check(before_request=True)
    assert exceeded is not None and (exceeded.kind, exceeded.limit, exceeded.used) == ("turns", 2, 2)
