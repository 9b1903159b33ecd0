"""Numeric settings stay within what timers accept, and a run settles even when a timer cannot be armed."""

from __future__ import annotations

import asyncio

import pytest
from session_helpers import make_session

from pi_notebook.ai.providers.faux import faux_assistant_message
from pi_notebook.ai.retry import MAX_TIMER_MS, RetryPolicy
from pi_notebook.session import BudgetSettings, Settings, SettingsError

HUGE = "1" + "0" * 400

MS_FIELDS = [
    ("budget", "wall_time_ms"),
    ("timeouts", "tool_ms"),
    ("timeouts", "turn_ms"),
    ("timeouts", "http_idle_ms"),
    ("timeouts", "mcp_call_ms"),
    ("timeouts", "abort_grace_ms"),
    ("retry", "base_delay_ms"),
]


@pytest.mark.parametrize(("section", "name"), MS_FIELDS)
def test_a_millisecond_setting_over_the_timer_limit_is_a_one_line_error_naming_it(section: str, name: str) -> None:
    with pytest.raises(SettingsError) as info:
        Settings(**{section: {name: HUGE}})
    message = str(info.value)
    assert f"settings.{section}.{name}: Input should be less than or equal to {MAX_TIMER_MS}" in message
    assert "\n" not in message
    assert len(message) < 200  # the 401-digit value is shortened
    assert getattr(getattr(Settings(**{section: {name: MAX_TIMER_MS}}), section), name) == MAX_TIMER_MS


@pytest.mark.parametrize("name", ["max_retry_delay_ms", "timeout_ms"])
def test_provider_millisecond_settings_are_bounded_too(name: str) -> None:
    with pytest.raises(SettingsError, match=rf"settings\.retry\.provider\.{name}: Input should be less than or equal"):
        Settings(retry={"provider": {name: MAX_TIMER_MS + 1}})


@pytest.mark.parametrize("value", ["inf", "nan", HUGE + ".0"], ids=["inf", "nan", "1e400"])
def test_a_cost_budget_must_be_finite(value: str) -> None:
    with pytest.raises(SettingsError, match=r"settings\.budget\.max_cost_usd"):
        Settings(budget={"max_cost_usd": value})


def test_a_backoff_past_the_timer_limit_is_capped_instead_of_overflowing() -> None:
    policy = RetryPolicy(max_retries=5000, base_delay_ms=2000)
    assert policy.delay_ms(3) == 8000
    assert policy.delay_ms(40) == MAX_TIMER_MS
    assert policy.delay_ms(2000) == MAX_TIMER_MS  # was OverflowError: 2.0 ** 1999


async def test_a_run_whose_wall_timer_cannot_be_armed_still_settles_and_abort_returns() -> None:
    session, recorder, _ = make_session([faux_assistant_message("never sent")])
    unchecked = BudgetSettings().model_copy(update={"wall_time_ms": int(HUGE)})  # what validation now refuses
    session.settings = session.settings.model_copy(update={"budget": unchecked})
    with pytest.raises(OverflowError):
        await asyncio.wait_for(session.prompt("hi"), 5)
    assert session.is_idle
    assert recorder.types().count("agent_settled") == 1
    await asyncio.wait_for(session.abort(), 5)  # was: hung forever, the session stuck "running"
    assert session.is_idle
