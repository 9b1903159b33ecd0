"""The python tool's executor and interrupt, in this process: the namespace, the last expression's value, captured
prints and displays, traceback texts, truncation, and interrupts from another thread (the real-kernel stop paths
are in tests/notebook/test_python_tool_kernel.py)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest

from pi_notebook.ai import AbortController, AbortSignal, Deadline
from pi_notebook.kernel import (
    PythonError,
    PythonEvent,
    add_python_listener,
    hold_interrupt,
    interrupt_running_code,
    python_tool,
)
from pi_notebook.kernel._interrupt import Execution, Interruption, Interrupts
from pi_notebook.kernel.python_tool import ABORT_WAIT_S

pytestmark = pytest.mark.timeout(30)


async def run(code: str, *, tool: Any = None, signal: AbortSignal | None = None, **args: Any) -> tuple[bool, str, Any]:
    """``(ok, text, details)`` of one call."""
    tool = tool or python_tool(namespace={})
    signal = signal or AbortController().signal
    try:
        result = await tool.execute("call-1", {"code": code, **args}, signal, None)
    except PythonError as error:
        return False, str(error), error.details
    return True, result.content[0].text, result.details


@pytest.fixture
def events() -> Iterator[list[PythonEvent]]:
    seen: list[PythonEvent] = []
    remove = add_python_listener(seen.append)
    yield seen
    remove()


# -- running code as a cell would -----------------------------------------------------------------------
async def test_the_last_expression_is_the_value_and_becomes_underscore() -> None:
    namespace: dict[str, Any] = {}
    tool = python_tool(namespace=namespace)
    assert await run("x = 41\nprint('hi')\nx + 1", tool=tool) == (
        True,
        "hi\nOut: 42",
        {"outputs": [], "dropped_outputs": 0, "result": {"data": {"text/plain": "42"}, "metadata": {}}},
    )
    assert namespace["x"] == 41
    assert namespace["_"] == 42
    assert (await run("_ * 2", tool=tool))[1] == "Out: 84"
    assert (namespace["_"], namespace["__"]) == (84, 42)


async def test_a_multiline_value_starts_on_its_own_line_and_none_or_a_semicolon_shows_nothing() -> None:
    assert (await run("'a\\nb'.splitlines()"))[1] == "Out: ['a', 'b']"
    assert (await run("print('x')\n'line1\\nline2'"))[1] == "x\nOut: 'line1\\nline2'"
    assert (await run("class R:\n    def __repr__(self): return 'one\\ntwo'\nR()"))[1] == "Out:\none\ntwo"
    assert await run("None") == (True, "(no output)", {"outputs": [], "dropped_outputs": 0, "result": None})
    assert (await run("x = 1\nx;  # silenced"))[1] == "(no output)"


async def test_without_ipython_the_tool_keeps_its_own_namespace_between_calls() -> None:
    tool = python_tool()
    await run("secret = 'kept'", tool=tool)
    assert (await run("secret", tool=tool))[1] == "Out: 'kept'"
    assert (await run("secret", tool=python_tool()))[0] is False  # another tool, another namespace


async def test_prints_and_errors_interleave_in_order_with_a_traceback_that_starts_at_the_agents_code() -> None:
    ok, text, details = await run(
        "import sys\nprint('out 1')\nprint('err 1', file=sys.stderr)\ndef f():\n    return 1 / 0\nf()"
    )
    assert not ok
    lines = text.splitlines()
    assert lines[:3] == ["out 1", "err 1", "Traceback (most recent call last):"]
    assert re.fullmatch(r"  Agent code \[\d+\], line 6, in <module>", lines[3])  # named as a notebook names code
    assert "    return 1 / 0" in lines
    assert lines[-1] == "ZeroDivisionError: division by zero"
    assert "pi_notebook" not in text  # none of our frames
    assert details["result"] is None


async def test_a_syntax_error_shows_the_line_and_where() -> None:
    ok, text, _ = await run("x = (1,\ny = 2")
    assert not ok
    assert "Traceback" not in text
    assert text.splitlines()[-1].startswith("SyntaxError: ")
    assert re.search(r"^  Agent code \[\d+\], line 1$", text, re.MULTILINE)


async def test_top_level_await_is_a_syntax_error_that_says_why() -> None:
    ok, text, _ = await run("import asyncio\nawait asyncio.sleep(0)")
    assert not ok
    assert "SyntaxError: 'await' outside function" in text
    assert text.endswith("start a coroutine in the background with asyncio.ensure_future(...) instead.")


async def test_sys_exit_and_a_keyboard_interrupt_the_code_raises_itself_are_errors_not_exits() -> None:
    ok, text, _ = await run("import sys\nsys.exit(3)")
    assert (ok, text.splitlines()[-1]) == (False, "SystemExit: 3")
    ok, text, _ = await run("raise KeyboardInterrupt('mine')")
    assert (ok, text.splitlines()[-1]) == (False, "KeyboardInterrupt: mine")
    assert "Interrupted" not in text


async def test_output_is_tail_truncated_with_the_full_output_saved() -> None:
    ok, text, details = await run("for i in range(30):\n    print('line', i)", tool=python_tool(max_lines=5))
    assert ok
    body, footer = text.split("\n\n")
    assert body.splitlines() == [f"line {i}" for i in range(25, 30)]
    path = details["full_output_path"]
    assert footer == f"[Showing lines 26-30 of 30. Full output: {path}]"
    assert Path(path).name.startswith("pi-python-")
    assert Path(path).read_text().splitlines()[0] == "line 0"  # noqa: ASYNC240 - a small temp file
    assert details["truncation"]["total_lines"] == 30


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"code": 3}, "Invalid code: must be a string"),
        ({"code": "1", "timeout": -1}, "Invalid timeout: must be a finite number of seconds"),
        ({"code": "1", "timeout": True}, "Invalid timeout: must be a finite number of seconds"),
        ({"code": "1", "timeout": 1e10}, "Invalid timeout: maximum is 2147483.647 seconds"),
    ],
)
async def test_bad_arguments_are_clear_errors(args: dict[str, Any], expected: str) -> None:
    with pytest.raises(PythonError, match=expected) as caught:
        await python_tool().execute("c", args, AbortController().signal, lambda _: None)
    assert caught.value.reason == "invalid"


async def test_nothing_runs_once_the_signal_has_aborted() -> None:
    namespace: dict[str, Any] = {}
    controller = AbortController()
    controller.abort()
    ok, text, _ = await run("ran = True", tool=python_tool(namespace=namespace), signal=controller.signal)
    assert (ok, text, "ran" in namespace) == (False, "Python code not run: the run was aborted", False)


def test_bad_settings_raise_value_error() -> None:
    with pytest.raises(ValueError, match="max_lines must be an integer >= 1"):
        python_tool(max_lines=0)
    with pytest.raises(ValueError, match="Invalid timeout"):
        python_tool(timeout_s=float("nan"))


async def test_listeners_see_start_writes_and_end(events: list[PythonEvent]) -> None:
    await run("print('a')\nprint('b', end='')")
    assert [(e.kind, e.text) for e in events] == [
        ("start", "print('a')\nprint('b', end='')"),
        ("stdout", "a"),
        ("stdout", "\n"),
        ("stdout", "b"),
        ("end", "ok"),
    ]
    assert {e.call_id for e in events} == {"call-1"}


# -- with an IPython shell --------------------------------------------------------------------------------
@pytest.fixture
def shell() -> Iterator[Any]:
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config)
    yield shell
    InteractiveShell.clear_instance()


async def test_in_ipython_the_code_runs_in_the_users_namespace_with_magics(shell: Any) -> None:
    shell.user_ns["df_rows"] = 3
    ok, text, details = await run(
        "echo = !echo from a shell\ndoubled = df_rows * 2\n%time z = 1\ndoubled", tool=python_tool()
    )
    assert ok, text
    assert text.endswith("Out: 6")
    assert "Wall time" in text  # %time printed to the captured stdout
    assert shell.user_ns["echo"] == ["from a shell"]
    assert (shell.user_ns["doubled"], shell.user_ns["_"], shell.displayhook._) == (6, 6, 6)
    assert details["result"] == {"data": {"text/plain": "6"}, "metadata": {}}


async def test_in_ipython_displays_are_kept_as_bundles_and_shown_to_the_model_as_text(
    shell: Any, events: list[PythonEvent]
) -> None:
    code = (
        "from IPython.display import HTML, display\n"
        "display(HTML('<b>bold</b>'))\n"
        "print('between')\n"
        "HTML('<i>value</i>')"
    )
    ok, text, details = await run(code, tool=python_tool())
    assert ok
    assert text == "<IPython.core.display.HTML object>\nbetween\nOut: <IPython.core.display.HTML object>"
    [shown] = details["outputs"]
    assert shown["data"]["text/html"] == "<b>bold</b>"
    assert details["result"]["data"]["text/html"] == "<i>value</i>"
    display = next(e for e in events if e.kind == "display")
    assert display.data is not None and display.data["text/html"] == "<b>bold</b>"
    assert shell.display_pub.__class__.__name__ != "Publisher"  # restored


async def test_in_ipython_exit_is_refused_instead_of_shutting_the_kernel_down(shell: Any) -> None:
    ok, text, _ = await run("exit()", tool=python_tool())
    assert not ok
    assert text.endswith(
        "RuntimeError: exit() and quit() are not available to the agent's code: they would shut down the user's kernel"
    )
    assert shell.exit_now is False
    assert "ask_exit" not in vars(shell)  # the shell's own method is back


async def test_in_ipython_rich_outputs_are_bounded(shell: Any) -> None:
    code = "from IPython.display import Markdown, display\nfor i in range(25):\n    display(Markdown(f'*{i}*'))"
    _, _, details = await run(code, tool=python_tool())
    assert len(details["outputs"]) == 20
    assert details["dropped_outputs"] == 5


async def test_in_ipython_clear_output_takes_the_rich_outputs_away_now_or_at_the_next_output(
    shell: Any, events: list[PythonEvent]
) -> None:
    # An animation loop: clear_output(wait=True) then a new frame, 30 times: only the last frame stays, and the
    # limit of 20 kept outputs counts from the last clear. A wait=True with no output after it clears nothing.
    code = (
        "from IPython.display import Markdown, clear_output, display\n"
        "display(Markdown('before'))\n"
        "clear_output()\n"
        "for i in range(30):\n"
        "    clear_output(wait=True)\n"
        "    display(Markdown(f'frame {i}'))\n"
        "print('printed')\n"
        "clear_output(wait=True)"
    )
    ok, text, details = await run(code, tool=python_tool())
    assert ok, text
    assert [shown["data"]["text/markdown"] for shown in details["outputs"]] == ["frame 29"]
    assert "dropped_outputs" not in details or details["dropped_outputs"] == 0
    assert text.count("<IPython.core.display.Markdown object>") == 31 and "printed" in text  # the model's text stays
    kinds = [e.kind for e in events if e.kind in ("display", "clear")]
    assert kinds == ["display", "clear", *["clear", "display"] * 30]  # the last wait=True: no output came after it


# -- interrupts ---------------------------------------------------------------------------------------
STOP = "import threading\nprint('working')\nthreading.Thread(target=__stop__).start()\n"
"""Code prefix: while the code runs, a thread stops it (``__stop__``, see ``stopper``)."""


def stopper(controller: AbortController, reason: str = "Stopped by the test") -> Any:
    """What Stop does from another thread: interrupt the code, then abort the run's signal on its loop."""
    loop = asyncio.get_running_loop()

    def stop() -> None:
        interrupt_running_code(reason)
        loop.call_soon_threadsafe(controller.abort)

    return stop


@pytest.mark.parametrize("body", ["while True:\n    pass", "import time\ntime.sleep(1000)"], ids=["busy", "sleep"])
async def test_an_interrupt_from_another_thread_ends_the_code_and_keeps_the_output(body: str) -> None:
    previous = signal.getsignal(signal.SIGINT)
    controller = AbortController()
    namespace: dict[str, Any] = {"__stop__": stopper(controller)}
    ok, text, _ = await run(STOP + body, tool=python_tool(namespace=namespace), signal=controller.signal)
    assert not ok
    assert text.startswith("working\nTraceback (most recent call last):\n")
    assert text.endswith("\nKeyboardInterrupt\n\nInterrupted: Stopped by the test")
    assert signal.getsignal(signal.SIGINT) is previous


async def test_code_that_catches_the_interrupt_finishes_and_the_tool_still_lets_the_abort_land() -> None:
    controller = AbortController()
    namespace: dict[str, Any] = {"__stop__": stopper(controller)}
    code = (
        "import threading, time\nprint('working')\ntry:\n    threading.Thread(target=__stop__).start()\n"
        "    time.sleep(1000)\nexcept KeyboardInterrupt:\n    print('cleaned up')"
    )
    assert (await run(code, tool=python_tool(namespace=namespace), signal=controller.signal))[:2] == (
        True,
        "working\ncleaned up",
    )
    assert controller.signal.aborted  # the run will not go on to another request


async def test_interrupt_running_code_is_false_when_no_code_runs() -> None:
    assert interrupt_running_code() is False


async def test_a_held_interrupt_stops_code_that_starts_before_it_is_released() -> None:
    """A stop that raced ahead of the code (its abort is still on the way to the blocked loop)."""
    release = hold_interrupt("Stopped before the code started")
    try:
        controller = AbortController()
        asyncio.get_running_loop().call_soon(controller.abort)  # the abort, landing once the loop runs
        ok, text, _ = await run("while True:\n    pass", signal=controller.signal)
    finally:
        release()
    assert (ok, text.splitlines()[-1]) == (False, "Interrupted: Stopped before the code started")
    release()  # idempotent
    assert await run("sum(range(10))") == (True, "Out: 45", ANY)


@pytest.mark.parametrize("body", ["while True:\n    pass", "import time\ntime.sleep(1000)"], ids=["busy", "sleep"])
async def test_the_calls_timeout_ends_the_code_without_waiting_for_an_abort(body: str) -> None:
    started = time.monotonic()
    ok, text, _ = await run("print('working')\n" + body, timeout=0.2)
    assert 0.2 <= time.monotonic() - started < 0.2 + ABORT_WAIT_S
    assert not ok
    assert text.endswith("KeyboardInterrupt\n\nPython code timed out after 0.2 seconds")


async def test_a_default_timeout_applies_to_calls_without_one() -> None:
    _, text, _ = await run("while True:\n    pass", tool=python_tool(namespace={}, timeout_s=0.1))
    assert text.endswith("Python code timed out after 0.1 seconds")


async def test_a_deadline_on_the_signal_interrupts_the_code_and_the_tool_waits_for_the_abort() -> None:
    deadline = Deadline(time.monotonic() + 0.2, "Turn timed out: 200 ms used, limit 200 ms")
    controller = AbortController(deadline)
    asyncio.get_running_loop().call_later(0.2, controller.abort)  # the owner's timer, overdue when the code ends
    _, text, _ = await run("while True:\n    pass", signal=controller.signal)
    assert controller.signal.aborted  # the tool returned after the abort landed
    assert text.endswith("KeyboardInterrupt\n\nInterrupted: Turn timed out: 200 ms used, limit 200 ms")


STUCK = """
import ctypes, signal, threading, time
signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())  # a C call that no signal ends
threading.Thread(target=__stop__).start()
try:
    ctypes.CDLL(None).usleep(1_500_000)
finally:
    returned.append(time.monotonic())
    signal.pthread_sigmask(signal.SIG_UNBLOCK, signal.valid_signals())
print('not reached')
"""


async def test_code_that_does_not_return_to_python_is_reported_stuck_then_interrupted(
    events: list[PythonEvent],
) -> None:
    controller = AbortController()
    returned: list[float] = []
    stuck_at: list[float] = []
    remove = add_python_listener(lambda e: stuck_at.append(time.monotonic()) if e.kind == "stuck" else None)
    try:
        namespace: dict[str, Any] = {"__stop__": stopper(controller), "returned": returned}
        ok, text, _ = await run(STUCK, tool=python_tool(namespace=namespace), signal=controller.signal)
    finally:
        remove()
    assert [e.text for e in events if e.kind == "stuck"] == ["waiting for the code to return to Python"]
    assert stuck_at[0] < returned[0]  # reported while the C call still ran
    assert not ok
    assert "not reached" not in text
    assert "KeyboardInterrupt\n\nInterrupted: Stopped by the test (the code did not stop at the first interrupt" in text
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == set()  # the mask the code left is undone


# -- the interrupt's edges ----------------------------------------------------------------------------
def test_a_signal_after_the_code_returned_is_dropped_and_the_handler_restored() -> None:
    previous = signal.getsignal(signal.SIGINT)
    with Execution(Interrupts()) as execution:
        assert execution.call(lambda: 7) == 7
        assert execution.interrupt(Interruption("stop", "late")) is True  # still inside: remembered, not raised
        for _ in range(1000):  # give the handler bytecodes to run on
            pass
    assert signal.getsignal(signal.SIGINT) is previous
    assert execution.interrupt(Interruption("stop", "later")) is False


def test_an_interrupt_during_our_own_bookkeeping_is_raised_when_it_ends() -> None:
    steps: list[str] = []

    def code() -> None:
        with execution.critical():
            execution.interrupt(Interruption("stop", "now"))
            for _ in range(1000):  # the handler runs here, but must not raise here
                pass
            steps.append("critical section finished")
        steps.append("not reached")

    with Execution(Interrupts()) as execution, pytest.raises(KeyboardInterrupt):
        execution.call(code)
    assert steps == ["critical section finished"]
    assert execution.interruption == Interruption("stop", "now")


def test_off_the_main_thread_pure_python_code_is_interrupted() -> None:
    outcome: list[tuple[bool, str, Any]] = []

    def worker() -> None:
        async def main() -> None:
            controller = AbortController()
            namespace = {"__stop__": stopper(controller, "from another thread")}
            outcome.append(
                await run(
                    STOP + "while True:\n    pass", tool=python_tool(namespace=namespace), signal=controller.signal
                )
            )

        asyncio.run(main())

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(timeout=10)
    [(ok, text, _)] = outcome
    assert (ok, text.splitlines()[-1]) == (False, "Interrupted: from another thread")


def test_a_sigint_another_thread_takes_still_ends_a_blocking_call_on_the_main_thread() -> None:
    """The kernel's interrupt signals the process; Linux may deliver it to any thread, and then only a wake of
    the main thread ends its sleep (here the main thread blocks SIGINT, so another thread must take it)."""

    def code() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGINT)).start()
            time.sleep(20)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

    started = time.monotonic()
    with Execution(Interrupts()) as execution, pytest.raises(KeyboardInterrupt):
        execution.call(code)
    assert time.monotonic() - started < 10
    assert execution.kernel_interrupted
    assert execution.interruption == Interruption("kernel", "Interrupted by the kernel's interrupt")


PRINT_ACROSS_THE_RESTORE = """
import sys, threading
from pi_notebook.kernel._exec import Capture, PythonListeners
from pi_notebook.kernel._interrupt import Execution, Interrupts
from pi_notebook.tools import OutputAccumulator

class Original:  # the kernel's stream; its first write waits (the GIL released) until the code has returned
    def __init__(self):
        self.parts, self.first, self.go = [], threading.Event(), threading.Event()
    def write(self, text):
        self.parts.append(text)
        if len(self.parts) == 1:
            self.first.set()
            self.go.wait()
        return len(text)
    def flush(self):
        pass

original, start, errors = Original(), threading.Event(), []
def console():  # a thread from before the code (a subshell console's): its print goes to the kernel's stream
    start.wait()
    try:
        print("pi:", "stopping")
    except BaseException as error:
        errors.append(repr(error))
thread = threading.Thread(target=console)
thread.start()
real, sys.stdout = sys.stdout, original
execution = Execution(Interrupts())
capture = Capture("call", execution, OutputAccumulator(), PythonListeners())
with execution, capture.installed(None):
    start.set()
    original.first.wait()  # the console's print() has written "pi:" and holds sys.stdout for the rest
del capture, execution
original.go.set()
thread.join()
sys.stdout = real
print(original.parts, errors)
"""


def test_a_print_under_way_on_another_thread_when_the_code_returns_finishes_where_it_began() -> None:
    """CPython's print() holds sys.stdout as a borrowed reference between its writes (python/cpython#130163;
    3.11.7, 3.12.1 and 3.13.0 crash on it): the stream the code's return swapped out must outlive that print (it
    crashed the kernel or misread its objects: CI, stop 42). In a subprocess, so that a crash is this test's failure."""
    done = subprocess.run([sys.executable, "-c", PRINT_ACROSS_THE_RESTORE], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "['pi:', ' ', 'stopping', '\\n'] []\n", "")
