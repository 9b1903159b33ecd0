"""The one boundary where foreign exceptions become error text, and Pi's layer-1 backoff arithmetic."""

from __future__ import annotations

import email.utils
import json

import httpx
import pytest

from pi_notebook.ai._http import ProviderError, describe_transport_error, provider_retry_delay_ms
from pi_notebook.ai.messages import AssistantMessage
from pi_notebook.ai.retry import is_retryable_assistant_error


def all_subclasses(base: type) -> set[type]:
    found: set[type] = set()
    subclasses: list[type] = base.__subclasses__()
    for subclass in subclasses:
        found |= {subclass, *all_subclasses(subclass)}
    return found


HTTPX_ERRORS = sorted(
    (
        cls
        for cls in all_subclasses(httpx.TransportError) | {httpx.TransportError}
        if cls.__module__.startswith("httpx")
    ),
    key=lambda cls: cls.__name__,
)


@pytest.mark.parametrize("error_class", HTTPX_ERRORS, ids=lambda cls: cls.__name__)
def test_every_httpx_transport_error_is_mapped_to_specific_text(error_class: type[Exception]) -> None:
    text = describe_transport_error(error_class("boom"))
    assert not text.startswith(error_class.__name__), text  # not the generic fallback


@pytest.mark.parametrize(
    "error",
    [
        httpx.ConnectError("[Errno 111] Connection refused"),
        httpx.ReadTimeout(""),
        httpx.ConnectTimeout(""),
        httpx.RemoteProtocolError("peer closed connection without sending complete message body"),
        httpx.ReadError(""),
        httpx.WriteError(""),
        httpx.ProxyError("bad gateway"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_transient_transport_failures_read_as_retryable(error: Exception) -> None:
    message = AssistantMessage(stop_reason="error", error_message=describe_transport_error(error))
    assert is_retryable_assistant_error(message), message.error_message


def test_malformed_json_in_a_stream_is_described_not_raised() -> None:
    with pytest.raises(json.JSONDecodeError) as info:
        json.loads('{"broken": ')
    assert describe_transport_error(info.value).startswith("Invalid response from provider: malformed JSON")


def error(status: int | None, **headers: str) -> ProviderError:
    return ProviderError("failed", status, headers)


def test_retry_after_ms_wins_over_retry_after() -> None:
    assert provider_retry_delay_ms(error(429, **{"retry-after-ms": "1500", "retry-after": "9"}), 0) == 1500


def test_retry_after_in_seconds_and_as_a_date() -> None:
    assert provider_retry_delay_ms(error(429, **{"retry-after": "2.5"}), 0) == 2500
    now = 1_800_000_000.0
    date = email.utils.formatdate(now + 7, usegmt=True)
    assert provider_retry_delay_ms(error(503, **{"retry-after": date}), 0, now=now) == pytest.approx(7000, abs=1)
    past = email.utils.formatdate(now - 60, usegmt=True)
    assert provider_retry_delay_ms(error(503, **{"retry-after": past}), 0, now=now) == 0


def test_unparseable_retry_after_means_at_once() -> None:
    assert provider_retry_delay_ms(error(503, **{"retry-after": "soon-ish"}), 0) == 0


@pytest.mark.parametrize("value", ["inf", "Infinity", "-inf", "nan", "NaN", "-5", "1e400", "1e306"])
@pytest.mark.parametrize("header", ["retry-after", "retry-after-ms"])
def test_a_non_finite_or_negative_retry_after_counts_as_absent(header: str, value: str) -> None:
    # issue 10 item 13: "inf" ended the run with a ValueError/OverflowError; now the backoff applies
    # ("1e306" seconds is finite but overflows once scaled to milliseconds).
    delay = provider_retry_delay_ms(error(429, **{header: value}), 1)
    if header == "retry-after-ms" and value == "1e306":
        assert delay == 1e306  # finite milliseconds: a real (absurd) request, left to the cap
    else:
        assert 750 < delay <= 1000


def test_an_invalid_retry_after_ms_falls_back_to_retry_after() -> None:
    assert provider_retry_delay_ms(error(429, **{"retry-after-ms": "nan", "retry-after": "2"}), 0) == 2000


@pytest.mark.parametrize(("attempt", "full"), [(0, 500), (1, 1000), (2, 2000), (3, 4000), (4, 8000), (7, 8000)])
def test_backoff_doubles_from_half_a_second_to_eight_minus_up_to_a_quarter(attempt: int, full: float) -> None:
    delays = [provider_retry_delay_ms(error(503), attempt) for _ in range(200)]
    assert all(0.75 * full < d <= full for d in delays)
    assert max(delays) - min(delays) > 0.05 * full  # jitter is there
