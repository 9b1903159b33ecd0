"""The ``python`` tool: the agent runs code in the notebook's kernel, on the user's namespace, and every stop
path can stop it.

``python_tool()`` returns an :class:`~pi_notebook.agent.AgentTool` named ``python`` taking ``code`` and an
optional ``timeout`` in seconds. The code runs as a cell would (``_exec``): magics, the last
expression's value (which becomes ``_``), prints, ``display()``; the variables it makes are the user's
afterwards. The model gets stdout, stderr, displays' text, the value (``Out: ...``) and the traceback, as
text tail-truncated like ``bash`` (2000 lines / 50 KB, the full output in ``<tempdir>/pi-python-*.log``).
``details`` carry the rich bundles for a widget: ``outputs`` (``display()`` bundles, at most 20),
``result`` (the value's bundle) and the truncation info. Live output goes to :func:`add_python_listener`
listeners while the code runs (``on_update`` cannot: it needs the event loop, which the code blocks); the run
widget's panel is one of them (``pi_notebook.notebook.widget._live``). The listeners always get an ``end`` after a
``start``, even if making the result fails.

Where the code runs, and why
----------------------------
On the kernel's **main thread, synchronously inside** ``execute``, as a cell runs. matplotlib, GUI toolkits,
``signal``, and most libraries expect the main thread; code in a thread would also race the user's next
cell on the same namespace, and a subshell would need ipykernel 7 and give the same race. The price: while
the code runs the event loop is blocked, so nothing that runs on it — the run widget's Stop button (ipywidgets
handles kernel-opened comms on the main thread), asyncio timers, ``on_update`` — can act until the code
returns. So every stop path reaches the code without the loop:

- A stop is a **SIGINT sent to the main thread** (``_interrupt``): like the kernel's interrupt in a cell, it
  raises ``KeyboardInterrupt`` in a busy loop at the next bytecode and ends a blocking call (``time.sleep``,
  a socket read) through EINTR, within milliseconds. Our handler is installed only while the code runs and
  raises only then (a late signal is dropped), and the previous handler (ipykernel's) is restored after.
- :func:`interrupt_running_code` sends it from any thread; :func:`hold_interrupt` also interrupts code that
  starts before it is released (a stop whose abort is still on its way to the blocked loop). The control
  comm (toolbar Stop, Accel+., and the run widget's Stop, which the JupyterLab extension forwards over that
  comm) is opened by the frontend, so JupyterLab >= 4.4 routes it over a kernel subshell, whose thread holds
  the interrupt before handing the abort to the loop, and releases it once the runs have settled.
- The kernel's interrupt button SIGINTs the kernel process: our handler ends the code and the tool raises
  :class:`~pi_notebook.session.AbortRun`, so the run settles ``aborted=True``.
- Timeouts: the call's ``timeout``, the session's tool timeout (``timeouts.tool_ms``,
  ``AgentTool.timeout_ms``), turn timeout (``timeouts.turn_ms``) and wall-time budget
  (``budget.wall_time_ms``) are asyncio timers, which cannot fire meanwhile. The session puts the earliest
  of them on the tool's abort signal (``signal.deadline``); a watchdog thread interrupts the code then.
  After the code returns the session's own timer logic decides the outcome, as for other tools: a tool
  timeout is an error result and the run goes on; the turn timeout or wall-time budget aborts the run
  (``budget_exceeded``).
- After a stop (other than its own ``timeout`` and the kernel's interrupt, which the tool ends itself) the
  tool waits, at most :data:`ABORT_WAIT_S`, for its signal to abort before returning, even if the code
  caught the ``KeyboardInterrupt`` or ignored SIGINT: the abort lands only once the loop runs again, and
  the run must not go on to another model request first.
- While the code runs, ``exit()``/``quit()`` raise an error instead of shutting the user's kernel down.
- Processes the code started (``subprocess.Popen``, ``!cmd``) are killed when a stop ends it, as ``bash`` kills
  its tree: SIGTERM, then SIGKILL after :data:`KILL_GRACE_S` (``_code_processes``); the result names them. What
  the code leaves running when it completes normally is kept.

With the setting ``python.namespace=scratch`` (a run sets :data:`~._scratch.current_scratch`) the code runs in the
session's scratch namespace instead: it reads the user's variables and keeps what it binds (``_scratch``).

Keys: while the code runs, the variables that hold keys are not in ``os.environ`` (``_hidden_env``: the kernel's
own environment, which the code shares; ``provider_keys=True`` keeps them), and under an ``AgentSession`` every key
the session knows is redacted from the result (``session._redact``) and from the full-output temp log.

Code that swallows the interrupt (a bare ``except:`` around the work in a loop, ``signal.signal(SIGINT, SIG_IGN)``,
a blocked signal mask) is interrupted again, harder, until it returns (``_interrupt``: a ``KeyboardInterrupt``
raised asynchronously in the main thread, and a signal that ends a blocking call with it); the result says how
many interrupts it took. If it has not returned :data:`~pi_notebook.kernel._interrupt.UNSTOPPABLE_AFTER_S` after
the Stop, listeners get a second ``stuck`` event, "the code does not stop ... Restart the kernel to end it now",
which the widget and the status bar show. The run cannot settle before the code returns: the code holds the
main thread, where the event loop that would settle it runs.

Code that does not return to Python (a long C call that retries on EINTR or blocks signals): the signal is
handled when it returns. If it has not ended :data:`~pi_notebook.kernel._interrupt.STUCK_AFTER_S` after the
interrupt, listeners get a ``stuck`` event ("waiting for the code to return to Python"; the run widget shows it
on the tool's panel and its status line, see ``pi_notebook.notebook.widget._live``). The run is never reported settled
meanwhile: the event loop, which would settle it, is blocked by the same code.

Which stop paths work where
---------------------------
=============================================  ==================================  ===========================
stop path                                      no subshell (see below)             ipykernel 7 + JupyterLab >= 4.4
=============================================  ==================================  ===========================
kernel interrupt button (SIGINT)               yes                                 yes
call ``timeout``, ``tool_ms``, ``turn_ms``,    yes (watchdog thread)               yes
wall-time budget
toolbar Stop / Accel+. / widget Stop           after the code returns (the comm    yes (control comm on a
(control comm ``{"action": "abort"}``)         waits for the main thread)          subshell thread)
ipywidgets Stop button click by itself         after the code returns              after the code returns
=============================================  ==================================  ===========================

Frontends that open no subshell (classic Notebook, VS Code, nbclient) get the no-subshell column (so did
ipykernel 6, which pi_notebook no longer supports); the kernel's interrupt works everywhere. Off the main
thread (an event loop in another thread) only pure-Python code can be interrupted, and not by the kernel's
interrupt. Without IPython the code runs in a plain dict namespace owned by the tool (or ``namespace=``),
without magics.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..agent import AgentTool, AgentToolResult, ToolPrompt
from ..ai import AbortSignal, Deadline, ToolError, abortable_sleep, known_secrets
from ..session import AbortRun
from ..tools import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, OutputAccumulator, js_number, tail_text
from ..tools.bash import resolve_timeout
from ._checkpoint import watch_code
from ._code_processes import CodeProcesses
from ._exec import (
    MAX_RICH_OUTPUTS,
    Capture,
    CodeResult,
    PythonEvent,
    current_shell,
    run_code,
)
from ._hidden_env import variables_hidden
from ._interrupt import Execution, Interruption
from ._kernel import KERNEL, Kernel, add_python_listener, hold_interrupt, interrupt_running_code
from ._scratch import current_scratch

__all__ = [
    "ABORT_WAIT_S",
    "MAX_RICH_OUTPUTS",
    "CodeRun",
    "PythonError",
    "PythonEvent",
    "add_python_listener",
    "hold_interrupt",
    "interrupt_running_code",
    "python_tool",
    "run_stoppable",
]

ABORT_WAIT_S = 1.0
"""After an interrupt other than its own timeout, how long the tool waits for its signal to abort."""
KILL_GRACE_S = 0.2
"""After a stop, how long the processes the code started get between SIGTERM and SIGKILL (``bash``'s default)."""
STUCK_TEXT = "waiting for the code to return to Python"
PROMPT = ToolPrompt(
    "Run Python code in the user's Jupyter kernel, on the notebook's namespace (their variables)",
    (
        "Use python to look at the user's data and variables, compute and plot; variables you make stay for the user",
        "Use python for short steps the user can follow; prefer several small calls to one long script",
    ),
)
"""The system prompt's lines about the tool."""
UNSTOPPABLE_TEXT = (
    "the code does not stop: it catches or ignores the interrupt, or waits in a call that does not return; it is "
    "interrupted again every 50 ms. Restart the kernel to end it now (the kernel's variables are lost)"
)


class PythonError(ToolError):
    """Raised by the python tool's ``execute``; the agent loop turns its text into an error tool result.

    ``reason``: ``"error"`` (the code raised), ``"interrupted"`` (a stop), ``"timeout"`` (the call's own
    ``timeout``), ``"invalid"`` (bad arguments) or ``"aborted"`` (the run was aborted before the code ran).
    ``details`` as for a successful result.
    """

    def __init__(self, text: str, reason: str, details: Any = None) -> None:
        super().__init__(text)
        self.reason = reason
        self.details = details


class PythonKernelInterrupt(PythonError, AbortRun):
    """The kernel's interrupt ended the code: an error result, and the session aborts the run."""


def _resolve_timeout(value: object) -> float | None:
    return resolve_timeout(value, lambda text: PythonError(text, "invalid"))


def _description(max_lines: int, max_bytes: int, timeout_s: float | None) -> str:
    text = (
        "Run Python code in the user's Jupyter kernel, as a notebook cell: in the notebook's namespace (the "
        "user's variables are visible; variables you define stay for the user and for later calls). Returns "
        "stdout, stderr, display() output as text, the value of the last expression (Out: ...) and the "
        f"traceback if it fails. IPython magics (%timeit, !ls) work. Output is truncated to last {max_lines} "
        f"lines or {js_number(max_bytes / 1024)}KB (whichever is hit first). If truncated, full output is saved "
        "to a temp file. The user can stop the code at any time. Optionally provide a timeout in seconds."
    )
    if timeout_s is not None:
        text += f" Without one, code times out after {js_number(timeout_s)} seconds."
    return text


def _schema(timeout_s: float | None) -> dict[str, Any]:
    default = "no default timeout" if timeout_s is None else f"default {js_number(timeout_s)}"
    return {
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "Python code to run (IPython syntax: magics allowed)"},
            "timeout": {"type": "number", "description": f"Timeout in seconds (optional, {default})"},
        },
        "required": ["code"],
    }


class _Python:
    def __init__(
        self,
        *,
        namespace: dict[str, Any] | None,
        timeout_s: float | None,
        max_lines: int,
        max_bytes: int,
        kernel: Kernel,
        provider_keys: bool = False,
    ):
        self.kernel = kernel
        self.namespace = namespace
        self.provider_keys = provider_keys
        self.own_namespace: dict[str, Any] = {"__name__": "__main__"}
        self.timeout_s = timeout_s
        self.max_lines = max_lines
        self.max_bytes = max_bytes

    def prepare(self, args: Any, signal: AbortSignal | None) -> tuple[str, Deadline | None]:
        code = args.get("code") if isinstance(args, Mapping) else None
        if not isinstance(code, str):
            raise PythonError("Invalid code: must be a string", "invalid")
        timeout = _resolve_timeout(args.get("timeout"))
        if timeout is None:
            timeout = self.timeout_s
        if signal is not None and signal.aborted:
            raise PythonError("Python code not run: the run was aborted", "aborted")
        own = None
        if timeout is not None:
            own = Deadline(time.monotonic() + timeout, f"Python code timed out after {js_number(timeout)} seconds")
        return code, own

    async def execute(
        self, tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: Any
    ) -> AgentToolResult:
        code, own = self.prepare(args, signal)
        shell = current_shell()
        namespace = self.namespace
        scratch = current_scratch.get() if namespace is None else None
        if namespace is None:
            namespace = shell.user_ns if shell is not None else self.own_namespace
            namespace = scratch.prepare(namespace) if scratch is not None else namespace
        known = known_secrets()
        output = OutputAccumulator(self.max_lines, self.max_bytes, prefix="pi-python", secrets=known.values)
        deadline = Deadline.first(own, signal.deadline if signal is not None else None)
        try:
            ran = await run_stoppable(
                tool_call_id,
                code,
                shell=shell,
                namespace=namespace,
                output=output,
                deadline=deadline,
                kernel=self.kernel,
                hidden=() if self.provider_keys else known.variables,
            )
            text, details = self._report(ran.capture, ran.result)
        finally:
            output.close()
            if scratch is not None:
                scratch.settle()
        if ran.killed:
            killed = ", ".join(ran.killed)
            text = f"{text}\n\nStopped with the code: {killed}" if text else f"Stopped: {killed}"
        await ran.let_abort_land(own, signal)
        ending = ran.ending(own)
        if ending.status == "ok":
            return AgentToolResult(content=text or "(no output)", details=details)
        if not ending.stopped:
            raise PythonError(text, "error", details)
        text = f"{text}\n\n{ending.stop_line}" if text else ending.stop_line
        if ran.kernel_interrupted:
            raise PythonKernelInterrupt(text, "interrupted", details)
        raise PythonError(text, ending.status, details)

    def _report(self, capture: Capture, result: CodeResult) -> tuple[str, dict[str, Any]]:
        if result.has_value:
            plain = str(result.bundle.get("data", {}).get("text/plain", ""))
            capture.line(f"Out:{chr(10) if chr(10) in plain else ' '}{plain}")
        if result.error is not None:
            capture.line(result.traceback)
        output = capture.output
        output.finish()
        snapshot = output.snapshot()
        text, truncated = tail_text(output, replace(snapshot, content=snapshot.content.rstrip("\n")), "")
        details: dict[str, Any] = {
            "outputs": capture.rich,
            "dropped_outputs": capture.dropped,
            "result": result.bundle if result.has_value else None,
        }
        if truncated is not None:
            details.update(truncated)
        return text, details


@dataclass(frozen=True, slots=True)
class CodeEnding:
    """How the agent's code ended, as its tool reports it: ``status`` ``ok``, ``error`` (it raised), ``interrupted``
    (a stop ended it) or ``timeout`` (the call's own ``timeout`` did); ``stop_line`` what the result says about the
    stop (``""`` when it was not stopped)."""

    status: Literal["ok", "error", "interrupted", "timeout"]
    stop_line: str = ""

    @property
    def stopped(self) -> bool:
        return self.status in ("interrupted", "timeout")


@dataclass(slots=True)
class CodeRun:
    """How one run of the agent's code ended (:func:`run_stoppable`): what it wrote, its result, and whether and
    why it was interrupted (``interruption`` may be set although the code finished: the stop came as it
    returned)."""

    capture: Capture
    result: CodeResult
    interruption: Interruption | None
    kernel_interrupted: bool
    repeats: int = 0
    """How many more interrupts the code took after the first (it caught or ignored them)."""
    killed: list[str] = field(default_factory=list)
    """The processes the code started that a stop killed (``name (pid N)``)."""

    def own_timeout(self, own: Deadline | None) -> bool:
        """The call's own ``timeout`` (``own``) ended the code."""
        return own is not None and self.interruption is not None and self.interruption.deadline is own

    async def let_abort_land(self, own: Deadline | None, signal: AbortSignal | None) -> None:
        """Every stop but the call's own timeout and the kernel's interrupt (the tool ends those itself) comes
        with an abort of the tool's signal, which can land only once the loop runs again: wait for it, at most
        :data:`ABORT_WAIT_S` (see the module docstring), also when the code finished regardless of the stop."""
        ends_itself = self.kernel_interrupted or self.own_timeout(own)
        if self.interruption is not None and signal is not None and not ends_itself:
            await abortable_sleep(ABORT_WAIT_S, signal)

    def ending(self, own: Deadline | None) -> CodeEnding:
        """How the code ended. A stop that came as the code returned (no error, not the kernel's interrupt) did not
        stop it."""
        if self.interruption is not None and (self.result.error is not None or self.kernel_interrupted):
            return CodeEnding("timeout" if self.own_timeout(own) else "interrupted", self.stop_line(own))
        return CodeEnding("ok" if self.result.error is None else "error")

    def stop_line(self, own: Deadline | None) -> str:
        """What the result says about the stop: the kernel's interrupt, the call's timeout or ``Interrupted: ...``."""
        if self.kernel_interrupted:
            return "Interrupted by the kernel's interrupt; the run is aborted"
        if own is not None and self.own_timeout(own):
            line = own.reason
        else:
            line = f"Interrupted: {self.interruption.reason if self.interruption else 'Stopped'}"
        if self.repeats:
            line += f" (the code did not stop at the first interrupt; it was interrupted {self.repeats + 1} times)"
        return line


async def run_stoppable(
    call_id: str,
    code: str,
    *,
    shell: Any,
    namespace: dict[str, Any],
    output: OutputAccumulator,
    deadline: Deadline | None,
    kernel: Kernel = KERNEL,
    hidden: Collection[str] = (),
    name: str | None = None,
) -> CodeRun:
    """Run the agent's ``code`` on this thread as the ``python`` tool does, stoppable by every stop path (see the
    module docstring); :func:`add_python_listener` listeners get ``start``, what it writes and displays, and
    ``end``, under ``call_id``, on ``kernel``'s listeners. The environment variables ``hidden`` are out of
    ``os.environ`` meanwhile; after a stop, the processes the code started are killed. Never raises for what the
    code does. ``cell_run`` runs a cell's code with it (``name``: how tracebacks name the code, ``Cell In[12]``)."""
    started, ending = False, "error"
    emit = kernel.listeners.emit
    processes = CodeProcesses()
    watch = watch_code(namespace, code, shell)  # the run's checkpoint: the variables before (before any interrupt)

    def stuck() -> None:
        emit(PythonEvent(call_id, "stuck", STUCK_TEXT))

    def unstoppable() -> None:
        emit(PythonEvent(call_id, "stuck", UNSTOPPABLE_TEXT))

    try:
        with (
            variables_hidden(hidden),
            processes.marking(),
            Execution(kernel.interrupts, deadline, stuck, unstoppable) as execution,
        ):
            emit(PythonEvent(call_id, "start", code))  # from here on, any interrupt reaches the code
            started = True
            capture = Capture(call_id, execution, output, kernel.listeners)
            result = run_code(code, shell=shell, namespace=namespace, capture=capture, name=name)
        stop = execution.interruption
        ending = "ok" if result.error is None else "interrupted" if stop else "error"
        ran = CodeRun(capture, result, stop, execution.kernel_interrupted, execution.repeats)
    finally:
        if watch is not None:
            watch.finish()  # also after a stop: what the code bound before it was interrupted
        if started:
            emit(PythonEvent(call_id, "end", ending))  # always after a start: live views wait for it
    if stop is not None:
        ran.killed = await processes.kill(KILL_GRACE_S)
    return ran


def python_tool(
    *,
    namespace: dict[str, Any] | None = None,
    timeout_s: float | None = None,
    max_lines: int = DEFAULT_MAX_LINES,
    max_bytes: int = DEFAULT_MAX_BYTES,
    kernel: Kernel = KERNEL,
    provider_keys: bool = False,
) -> AgentTool:
    """The ``python`` tool; see the module docstring for behaviour, stop paths and threads.

    - ``namespace``: where the code runs; ``None`` means the IPython user namespace when a shell is running
      (looked up at each call), else a dict owned by this tool.
    - ``timeout_s``: timeout for calls that give none (``None``: no timeout).
    - ``max_lines`` / ``max_bytes``: the output tail kept in the result.
    - ``kernel``: whose interrupts and live listeners the code runs with (this process's).
    - ``provider_keys``: leave the variables that hold keys in ``os.environ`` while the code runs (by default
      they are removed for the call's duration; see the module docstring).

    The tool is ``execution_mode="sequential"``: calls run in order, as cells do, and a stop ends the batch.
    Raises ``ValueError`` for invalid settings.
    """
    if timeout_s is not None:
        try:
            timeout_s = _resolve_timeout(timeout_s)
        except PythonError as exc:
            raise ValueError(str(exc)) from None
    for name, value in (("max_lines", max_lines), ("max_bytes", max_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if namespace is not None and not isinstance(namespace, dict):
        raise ValueError(f"namespace must be a dict, got {type(namespace).__name__}")
    python = _Python(
        namespace=namespace,
        timeout_s=timeout_s,
        max_lines=max_lines,
        max_bytes=max_bytes,
        kernel=kernel,
        provider_keys=provider_keys,
    )
    return AgentTool(
        name="python",
        label="python",
        description=_description(max_lines, max_bytes, timeout_s),
        parameters=_schema(timeout_s),
        execute=python.execute,
        execution_mode="sequential",
        approval="ask",
        preview=_preview,
        preview_syntax="python",
        prompt=PROMPT,
    )


def _preview(args: Mapping[str, Any]) -> str:
    """What an approval question shows of a call: the code."""
    code = args["code"]
    if not isinstance(code, str):
        raise TypeError("code is not text")
    return code
