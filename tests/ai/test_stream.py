"""AssistantMessageEventStream: push mode (Pi's EventStream) and pull mode (wrapping an async generator)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Literal

import anyio

from pi_notebook.ai import (
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextContent,
    TextDeltaEvent,
    TextStartEvent,
)


def _partial(text: str | None = None) -> AssistantMessage:
    content = [TextContent(text=text)] if text is not None else []
    return AssistantMessage(content=content, stop_reason="pending")


def _done(text: str = "final") -> DoneEvent:
    return DoneEvent("stop", AssistantMessage(content=[TextContent(text=text)], stop_reason="stop"))


def _error(reason: Literal["error", "aborted"] = "error") -> ErrorEvent:
    return ErrorEvent(reason, AssistantMessage(stop_reason=reason, error_message="upstream failed"))


async def _types(stream: AssistantMessageEventStream) -> list[str]:
    return [event.type async for event in stream]


# -- push mode -------------------------------------------------------------------------------------------


async def test_push_mode_yields_events_in_order_and_ends_after_the_terminal_event() -> None:
    stream = AssistantMessageEventStream()
    partial = _partial("")
    done = _done()
    stream.push(StartEvent(partial))
    stream.push(TextStartEvent(0, partial))
    stream.push(TextDeltaEvent(0, "hi", partial))
    stream.push(done)
    assert await _types(stream) == ["start", "text_start", "text_delta", "done"]
    assert await stream.result() is done.message


async def test_push_mode_result_of_an_error_terminal_is_the_error_message() -> None:
    stream = AssistantMessageEventStream()
    error = _error("aborted")
    stream.push(StartEvent(_partial()))
    stream.push(error)
    assert await _types(stream) == ["start", "error"]
    assert await stream.result() is error.error


async def test_push_after_the_terminal_event_is_ignored() -> None:
    stream = AssistantMessageEventStream()
    done = _done("first")
    stream.push(done)
    stream.push(StartEvent(_partial()))
    stream.push(_done("second"))
    assert await _types(stream) == ["done"]
    assert await stream.result() is done.message


async def test_push_after_end_is_ignored() -> None:
    stream = AssistantMessageEventStream()
    stream.push(StartEvent(_partial()))
    stream.end()
    stream.push(_done())
    assert await _types(stream) == ["start"]
    assert (await stream.result()).stop_reason == "error"


async def test_ended_turns_true_on_the_terminal_event() -> None:
    stream = AssistantMessageEventStream()
    stream.push(StartEvent(_partial()))
    assert stream.ended is False
    stream.push(_done())
    assert stream.ended is True


async def test_end_without_a_terminal_event_gives_an_error_result_keeping_the_last_partial() -> None:
    stream = AssistantMessageEventStream()
    stream.push(StartEvent(_partial("so far")))
    stream.end()
    assert await _types(stream) == ["start"]
    result = await stream.result()
    assert result.stop_reason == "error"
    assert result.error_message == "Stream ended without a terminal event"
    assert result.content == [TextContent(text="so far")]


async def test_end_without_any_event_gives_an_empty_error_result() -> None:
    stream = AssistantMessageEventStream()
    stream.end()
    assert await _types(stream) == []
    result = await stream.result()
    assert (result.stop_reason, result.error_message, result.content) == (
        "error",
        "Stream ended without a terminal event",
        [],
    )


async def test_end_with_a_result_makes_it_the_result() -> None:
    stream = AssistantMessageEventStream()
    given = AssistantMessage(content=[TextContent(text="given")])
    stream.end(given)
    assert await stream.result() is given


async def test_end_after_a_terminal_event_keeps_the_terminal_result() -> None:
    stream = AssistantMessageEventStream()
    done = _done()
    stream.push(done)
    stream.end(AssistantMessage(content=[TextContent(text="other")]))
    assert await stream.result() is done.message


async def test_push_wakes_a_consumer_waiting_for_the_next_event() -> None:
    stream = AssistantMessageEventStream()
    seen: list[str] = []

    async def consume() -> None:
        async for event in stream:
            seen.append(event.type)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await anyio.wait_all_tasks_blocked()
        assert seen == []
        stream.push(StartEvent(_partial()))
        await anyio.wait_all_tasks_blocked()
        assert seen == ["start"]
        stream.push(_done())
    assert seen == ["start", "done"]


async def test_end_releases_a_waiting_consumer() -> None:
    stream = AssistantMessageEventStream()
    finished: list[bool] = []

    async def consume() -> None:
        async for _ in stream:
            pass
        finished.append(True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await anyio.wait_all_tasks_blocked()
        stream.end()
    assert finished == [True]


async def test_result_waits_for_a_terminal_event_pushed_later() -> None:
    stream = AssistantMessageEventStream()
    results: list[AssistantMessage] = []

    async def await_result() -> None:
        results.append(await stream.result())

    done = _done()
    async with anyio.create_task_group() as tg:
        tg.start_soon(await_result)
        await anyio.wait_all_tasks_blocked()
        assert results == []
        stream.push(done)
    assert results == [done.message]


async def test_result_awaited_while_another_task_iterates_does_not_starve_the_iterator() -> None:
    # Pi's result() is a promise independent of iteration; here both share one wake-up future.
    stream = AssistantMessageEventStream()
    seen: list[str] = []
    results: list[AssistantMessage] = []

    async def consume() -> None:
        async for event in stream:
            seen.append(event.type)

    async def await_result() -> None:
        results.append(await stream.result())

    async with anyio.create_task_group() as tg:
        try:
            tg.start_soon(consume)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(await_result)
            await anyio.wait_all_tasks_blocked()
            stream.push(StartEvent(_partial()))
            stream.push(_done())
            await anyio.wait_all_tasks_blocked()
            assert seen == ["start", "done"]
            assert [result.stop_reason for result in results] == ["stop"]
        finally:
            tg.cancel_scope.cancel()  # release a consumer left blocked


# -- pull mode -------------------------------------------------------------------------------------------


async def _script(*events: AssistantMessageEvent) -> AsyncIterator[AssistantMessageEvent]:
    for event in events:
        yield event


async def test_pull_mode_yields_source_events_and_the_result_is_the_terminal_message() -> None:
    partial = _partial("")
    done = _done()
    stream = AssistantMessageEventStream(_script(StartEvent(partial), TextDeltaEvent(0, "x", partial), done))
    assert await _types(stream) == ["start", "text_delta", "done"]
    assert await stream.result() is done.message


async def test_pull_mode_result_drains_an_unread_source() -> None:
    done = _done()
    stream = AssistantMessageEventStream(_script(StartEvent(_partial()), done))
    assert await stream.result() is done.message
    assert stream.ended is True


async def test_pull_mode_stops_at_the_terminal_event_and_closes_the_source() -> None:
    log: list[str] = []
    done = _done()

    async def source() -> AsyncIterator[AssistantMessageEvent]:
        try:
            yield StartEvent(_partial())
            yield done
            log.append("pulled past the terminal event")
            yield StartEvent(_partial())
        finally:
            log.append("closed")

    stream = AssistantMessageEventStream(source())
    types = []
    async for event in stream:
        types.append(event.type)
        if event.type == "done":
            assert log == ["closed"]
    assert types == ["start", "done"]
    assert log == ["closed"]


async def test_pull_mode_source_that_raises_ends_with_an_error_event_instead_of_raising() -> None:
    async def source() -> AsyncIterator[AssistantMessageEvent]:
        yield StartEvent(_partial("half"))
        raise ValueError("boom")

    stream = AssistantMessageEventStream(source())
    events = [event async for event in stream]
    assert [event.type for event in events] == ["start", "error"]
    terminal = events[-1]
    assert isinstance(terminal, ErrorEvent)
    assert terminal.reason == "error"
    result = await stream.result()
    assert result is terminal.error
    assert result.stop_reason == "error"
    assert result.error_message == "ValueError: boom"
    assert result.content == [TextContent(text="half")]


async def test_pull_mode_source_that_raises_at_once_gives_an_empty_error_message() -> None:
    async def source() -> AsyncIterator[AssistantMessageEvent]:
        raise RuntimeError("setup failed")
        yield  # pragma: no cover - makes this an async generator

    stream = AssistantMessageEventStream(source())
    assert await _types(stream) == ["error"]
    result = await stream.result()
    assert (result.stop_reason, result.error_message, result.content) == ("error", "RuntimeError: setup failed", [])


async def test_pull_mode_source_that_stops_without_a_terminal_event_gives_an_error_result() -> None:
    stream = AssistantMessageEventStream(_script(StartEvent(_partial("cut"))))
    assert await _types(stream) == ["start"]
    result = await stream.result()
    assert result.stop_reason == "error"
    assert result.error_message == "Stream ended without a terminal event"
    assert result.content == [TextContent(text="cut")]


async def test_pull_mode_external_cancellation_propagates_instead_of_becoming_an_error_event() -> None:
    async def source() -> AsyncIterator[AssistantMessageEvent]:
        yield StartEvent(_partial())
        await anyio.sleep(30)
        yield _done()

    stream = AssistantMessageEventStream(source())
    seen: list[str] = []
    with anyio.fail_after(1), anyio.CancelScope() as scope:
        async for event in stream:
            seen.append(event.type)
            scope.cancel()
    assert scope.cancelled_caught
    assert seen == ["start"]


async def test_pull_mode_result_awaited_while_another_task_iterates_gives_the_terminal_message() -> None:
    gate = anyio.Event()
    done = _done()

    async def source() -> AsyncIterator[AssistantMessageEvent]:
        yield StartEvent(_partial())
        await gate.wait()
        yield done

    stream = AssistantMessageEventStream(source())
    seen: list[str] = []
    results: list[AssistantMessage] = []

    async def consume() -> None:
        async for event in stream:
            seen.append(event.type)

    async def await_result() -> None:
        results.append(await stream.result())

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(await_result)
            await anyio.wait_all_tasks_blocked()
            gate.set()
    assert seen == ["start", "done"]
    assert results == [done.message]
