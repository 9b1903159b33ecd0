"""The activity signal for idle cullers, beat by beat (``ActivitySignal.beat``, no thread and no clock): it signals
while a run works, not while every active run waits for a person's approval, and ends once no run is active. Its
interval comes from ``PI_NOTEBOOK_ACTIVITY_INTERVAL``. The real cullers are in
tests/deploy/test_kernel_culler.py and tests/deploy/test_hub_culler.py."""

from __future__ import annotations

import logging

import pytest

from pi_notebook.notebook._activity import DEFAULT_INTERVAL_S, ActivitySignal, interval
from pi_notebook.notebook._run_state import RunState


class FakeRun:
    def __init__(self, state: str) -> None:
        self.status = state

    def state(self) -> RunState:
        return {"state": self.status, "run": 1, "aborted": False, "retry_deadline": 0, "silent_s": 0, "note": ""}  # type: ignore[typeddict-item]


def signal_for(runs: list[FakeRun]) -> tuple[ActivitySignal, list[int]]:
    sent: list[int] = []
    return ActivitySignal(lambda: runs, lambda: sent.append(1), every=60), sent


def test_a_working_run_is_signalled_at_each_beat() -> None:
    signal, sent = signal_for([FakeRun("running tool")])
    assert signal.beat() and signal.beat()
    assert len(sent) == signal.sent == 2


def test_a_run_waiting_for_approval_is_not_activity() -> None:
    waiting = FakeRun("awaiting approval")
    signal, sent = signal_for([waiting])
    assert signal.beat()  # the run is active: the signal goes on, sending nothing
    assert sent == []
    waiting.status = "running tool"  # answered
    signal.beat()
    assert sent == [1]


def test_one_working_run_among_waiting_ones_is_enough() -> None:
    signal, sent = signal_for([FakeRun("awaiting approval"), FakeRun("streaming")])
    signal.beat()
    assert sent == [1]


def test_the_signal_ends_when_no_run_is_active() -> None:
    runs = [FakeRun("retrying")]
    signal, sent = signal_for(runs)
    assert signal.beat()
    runs.clear()
    assert not signal.beat()
    assert sent == [1]


def test_a_failing_send_does_not_stop_the_signal() -> None:
    def broken() -> None:
        raise OSError("iopub closed")

    signal = ActivitySignal(lambda: [FakeRun("streaming")], broken, every=60)
    assert signal.beat()
    assert signal.sent == 0


@pytest.mark.parametrize(
    ("value", "seconds"), [("", DEFAULT_INTERVAL_S), ("15", 15.0), ("2.5", 2.5), ("0", 0.0), ("-3", 0.0)]
)
def test_the_interval_comes_from_the_environment(value: str, seconds: float) -> None:
    assert interval({"PI_NOTEBOOK_ACTIVITY_INTERVAL": value}) == seconds
    assert interval({}) == DEFAULT_INTERVAL_S


def test_a_bad_interval_is_logged_and_the_default_used(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert interval({"PI_NOTEBOOK_ACTIVITY_INTERVAL": "a minute"}) == DEFAULT_INTERVAL_S
    assert "PI_NOTEBOOK_ACTIVITY_INTERVAL='a minute' is not a number of seconds" in caplog.text


def test_off_starts_no_thread_and_status_says_so() -> None:
    signal = ActivitySignal(lambda: [FakeRun("streaming")], lambda: None, every=0)
    signal.observe(FakeRun("streaming").state())
    assert not signal.running
    assert signal.describe() == "activity for idle cullers: off (PI_NOTEBOOK_ACTIVITY_INTERVAL=0)"


def test_a_run_whose_code_would_not_stop_ends_the_signal() -> None:
    """Issue 37 item 21: a run whose code swallows every interrupt reads ``aborted`` while its code still holds the
    loop (it cannot settle): it no longer counts, so the idle cullers can reclaim the kernel."""
    run = FakeRun("running tool")
    signal, sent = signal_for([run])
    assert signal.beat() and sent == [1]
    run.status = "aborted"  # StatusMachine.given_up, from the watchdog thread
    assert not signal.beat()
    assert sent == [1]
