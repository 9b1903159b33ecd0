"""AbortController / AbortSignal: one cooperative signal per run that can also interrupt any pending await."""

from __future__ import annotations

import asyncio
import time
from contextlib import suppress
from functools import partial
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from pi_notebook.ai import AbortController, AbortSignal, abort_scope, abortable_sleep


def test_new_signal_is_not_aborted_and_has_no_reason() -> None:
    signal = AbortController().signal
    assert isinstance(signal, AbortSignal)
    assert signal.aborted is False
    assert signal.reason is None


def test_abort_sets_aborted_and_the_default_reason() -> None:
    controller = AbortController()
    controller.abort()
    assert controller.signal.aborted is True
    assert controller.signal.reason == "aborted"


def test_abort_keeps_the_given_reason() -> None:
    controller = AbortController()
    reason = RuntimeError("user pressed stop")
    controller.abort(reason)
    assert controller.signal.reason is reason


def test_second_abort_keeps_the_first_reason() -> None:
    controller = AbortController()
    controller.abort("first")
    controller.abort("second")
    assert controller.signal.aborted is True
    assert controller.signal.reason == "first"


def test_listener_is_called_once_even_if_abort_is_repeated() -> None:
    controller = AbortController()
    calls: list[str] = []
    controller.signal.add_listener(lambda: calls.append("called"))
    controller.abort()
    controller.abort()
    assert calls == ["called"]


def test_listeners_are_called_in_registration_order() -> None:
    controller = AbortController()
    calls: list[int] = []
    for index in range(3):
        controller.signal.add_listener(partial(calls.append, index))
    controller.abort()
    assert calls == [0, 1, 2]


def test_listener_sees_the_signal_already_aborted_with_its_reason() -> None:
    controller = AbortController()
    seen: list[tuple[bool, object]] = []
    controller.signal.add_listener(lambda: seen.append((controller.signal.aborted, controller.signal.reason)))
    controller.abort("why")
    assert seen == [(True, "why")]


def test_listener_added_after_abort_is_called_at_once() -> None:
    controller = AbortController()
    controller.abort()
    calls: list[str] = []
    controller.signal.add_listener(lambda: calls.append("called"))
    assert calls == ["called"]


def test_removed_listener_is_not_called() -> None:
    controller = AbortController()
    calls: list[str] = []

    def listener() -> None:
        calls.append("called")

    controller.signal.add_listener(listener)
    controller.signal.remove_listener(listener)
    controller.abort()
    assert calls == []


def test_removing_an_unknown_listener_does_nothing() -> None:
    controller = AbortController()
    calls: list[str] = []
    controller.signal.add_listener(lambda: calls.append("kept"))
    controller.signal.remove_listener(lambda: None)
    controller.abort()
    assert calls == ["kept"]


async def test_raising_listener_is_reported_and_does_not_stop_the_others() -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        controller = AbortController()
        calls: list[str] = []
        error = RuntimeError("listener bug")

        def bad() -> None:
            raise error

        controller.signal.add_listener(lambda: calls.append("before"))
        controller.signal.add_listener(bad)
        controller.signal.add_listener(lambda: calls.append("after"))
        controller.abort()
    finally:
        loop.set_exception_handler(previous)
    assert calls == ["before", "after"]
    assert [context["exception"] for context in reported] == [error]


def test_raising_listener_outside_an_event_loop_does_not_stop_the_others() -> None:
    # The docstring's contract ("does not stop the others") has no exception for code without a running loop.
    controller = AbortController()
    calls: list[str] = []

    def bad() -> None:
        raise RuntimeError("listener bug")

    controller.signal.add_listener(bad)
    controller.signal.add_listener(lambda: calls.append("after"))
    with suppress(RuntimeError):  # surfacing the listener's error is fine; skipping the next listener is not
        controller.abort()
    assert calls == ["after"]


async def test_wait_returns_at_once_when_already_aborted() -> None:
    controller = AbortController()
    controller.abort()
    with anyio.fail_after(1):
        await controller.signal.wait()


async def test_wait_returns_when_another_task_aborts() -> None:
    controller = AbortController()
    woke: list[bool] = []

    async def waiter() -> None:
        await controller.signal.wait()
        woke.append(controller.signal.aborted)

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        assert woke == []
        controller.abort()
    assert woke == [True, True]


async def test_cancelling_one_waiter_does_not_stop_another_from_waking() -> None:
    controller = AbortController()
    woke: list[str] = []

    async def waiter(name: str) -> None:
        await controller.signal.wait()
        woke.append(name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter, "survivor")
        async with anyio.create_task_group() as doomed:
            doomed.start_soon(waiter, "cancelled")
            await anyio.wait_all_tasks_blocked()
            doomed.cancel_scope.cancel()
        controller.abort()
    assert woke == ["survivor"]


async def test_abort_scope_cancels_a_pending_sleep_at_once() -> None:
    controller = AbortController()
    started = anyio.Event()
    outcome: dict[str, Any] = {}

    async def sleeper() -> None:
        with abort_scope(controller.signal) as scope:
            started.set()
            await anyio.sleep(30)
            outcome["finished_sleep"] = True
        outcome["cancelled_caught"] = scope.cancelled_caught

    begin = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(sleeper)
        await started.wait()
        await anyio.wait_all_tasks_blocked()
        controller.abort()
    assert time.monotonic() - begin < 1
    assert outcome == {"cancelled_caught": True}


async def test_abort_scope_on_an_already_aborted_signal_cancels_the_first_await() -> None:
    controller = AbortController()
    controller.abort()
    reached: list[str] = []
    with anyio.fail_after(1), abort_scope(controller.signal) as scope:
        reached.append("entered")
        await anyio.sleep(30)
        reached.append("slept")
    assert reached == ["entered"]
    assert scope.cancelled_caught


async def test_abort_scope_abort_from_inside_the_block_cancels_the_next_await() -> None:
    controller = AbortController()
    with anyio.fail_after(1), abort_scope(controller.signal) as scope:
        controller.abort()
        await anyio.sleep(30)
    assert scope.cancelled_caught


async def test_abort_scope_without_abort_reports_no_cancellation() -> None:
    controller = AbortController()
    with abort_scope(controller.signal) as scope:
        await anyio.lowlevel.checkpoint()
    assert not scope.cancel_called
    assert not scope.cancelled_caught


async def test_abort_scope_with_no_signal_is_a_plain_scope() -> None:
    with abort_scope(None) as scope:
        await anyio.lowlevel.checkpoint()
    assert not scope.cancelled_caught


async def test_abort_after_abort_scope_exits_does_not_cancel_the_scope() -> None:
    controller = AbortController()
    with abort_scope(controller.signal) as scope:
        await anyio.lowlevel.checkpoint()
    controller.abort()
    assert not scope.cancel_called


async def test_abortable_sleep_returns_false_early_on_abort() -> None:
    controller = AbortController()
    results: list[bool] = []

    async def sleeper() -> None:
        results.append(await abortable_sleep(30, controller.signal))

    begin = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(sleeper)
        await anyio.wait_all_tasks_blocked()
        controller.abort()
    assert time.monotonic() - begin < 1
    assert results == [False]


async def test_abortable_sleep_returns_false_at_once_when_already_aborted() -> None:
    controller = AbortController()
    controller.abort()
    with anyio.fail_after(1):
        assert await abortable_sleep(30, controller.signal) is False


async def test_abortable_sleep_returns_true_when_the_time_runs_out() -> None:
    controller = AbortController()
    assert await abortable_sleep(0.01, controller.signal) is True
    assert controller.signal.aborted is False


@pytest.mark.parametrize("seconds", [0, -1])
async def test_abortable_sleep_of_zero_or_negative_seconds_returns_true(seconds: float) -> None:
    assert await abortable_sleep(seconds, AbortController().signal) is True


async def test_abortable_sleep_without_a_signal_returns_true() -> None:
    assert await abortable_sleep(0.01, None) is True


async def test_abortable_sleep_is_cancellable_by_an_outer_scope() -> None:
    controller = AbortController()
    with anyio.fail_after(1), anyio.CancelScope() as scope:
        scope.cancel()
        await abortable_sleep(30, controller.signal)
    assert scope.cancelled_caught
