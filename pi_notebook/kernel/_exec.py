"""Running the agent's code as a notebook cell would: magics, the last expression's value, captured output.

:func:`run_code` transforms the code with IPython (``%magics``, ``!shell``), parses and compiles it with the
shell's compiler flags, executes all statements but a final expression, then evaluates that expression (a
trailing ``;`` silences it, as in a cell) and formats its value with the shell's display formatter. The value
becomes ``_`` (and the old ``_``/``__`` move to ``__``/``___``), as the display hook does for a cell; it gets
no ``Out[n]`` number. While the code runs, ``sys.stdout``/``sys.stderr`` and the shell's display publisher
are swapped for ours (as IPython's ``capture_output`` does), so prints and ``display()`` reach the
:class:`Capture`, which keeps the text, the rich bundles, and tells live listeners. Only the code's: what the threads
that ran before it (the kernel's own, a subshell's, one of the user's) write meanwhile goes where it would have
gone (``_Elsewhere``). ``exit()``/``quit()``
raise an error instead of shutting the user's kernel down.

Without an IPython shell (plain Python) the code runs in a plain dict namespace, without magics, and values
are formatted with ``repr``.

Live listeners (:class:`PythonListeners`; ``add_python_listener``) get a :class:`PythonEvent` per start, write,
display, stuck code and end, synchronously, on the thread where it happens: the code's thread (the kernel's main
thread, which is blocked, so asyncio callbacks cannot run there meanwhile) or, for ``stuck``, the watchdog thread.
A listener must be quick, must not touch asyncio objects, and may send comm messages (ipykernel's iopub channel is
thread-safe); an exception from it is logged and does not reach the code.
"""

from __future__ import annotations

import ast
import functools
import io
import itertools
import linecache
import logging
import re
import sys
import threading
import tokenize
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from ..tools import OutputAccumulator
from ._interrupt import Execution, never_trace

__all__ = ["Capture", "CodeResult", "PythonEvent", "PythonListener", "PythonListeners", "current_shell", "run_code"]

MAX_RICH_OUTPUTS = 20
"""Rich outputs (``display()`` bundles) kept in a result's details; later ones are counted, not kept."""
MAX_BUNDLE_CHARS = 1_000_000
"""A bundle larger than this (JSON-ish size) keeps only its ``text/plain`` in the details."""

EXIT_REFUSED = "exit() and quit() are not available to the agent's code: they would shut down the user's kernel"

AWAIT_HINT = (
    "The python tool runs code synchronously on the kernel's event loop thread, so top-level await is not "
    "available; start a coroutine in the background with asyncio.ensure_future(...) instead."
)

_log = logging.getLogger(__name__)
_numbers = itertools.count(1)
_INPUT = "<python-input-"
_names: dict[str, str] = {}
"""How a traceback names each piece of the agent's code (by its file name): ``Agent code [3]``, or for a cell the
agent ran ``Cell In[12]``, as IPython names a cell (see :func:`format_error`). One short string per piece."""
_FILE = re.compile(r'File "([^"\n]+)"')
_OUR_FILES = frozenset({__file__, sys.modules[Execution.__module__].__file__})
never_trace(__file__)


@dataclass(frozen=True, slots=True)
class PythonEvent:
    """What the ``python`` tool's code is doing, for a live view. ``kind``:

    - ``start``: ``text`` is the code; ``stdout`` / ``stderr``: ``text`` was written;
    - ``display``: ``data`` is a mime bundle shown with ``display()`` (``text`` its ``text/plain``, ``metadata`` its
      metadata);
    - ``clear``: ``clear_output()`` took the rich outputs shown so far away (with ``wait=True``: when the next
      output came);
    - ``stuck``: an interrupt did not end the code within ``STUCK_AFTER_S`` (a C call that does not return to
      Python); ``text`` is ``"waiting for the code to return to Python"``;
    - ``end``: the code has returned; ``text`` is ``ok``, ``error`` or ``interrupted``.
    """

    call_id: str
    kind: Literal["start", "stdout", "stderr", "display", "clear", "stuck", "end"]
    text: str = ""
    data: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] | None = None


PythonListener = Callable[[PythonEvent], None]


class PythonListeners:
    """Who hears the agent's code's :class:`PythonEvent` (live views); a kernel process has one set
    (``pi_notebook.kernel.KERNEL.listeners``). Adding and emitting may happen on any thread."""

    def __init__(self) -> None:
        self._listeners: tuple[PythonListener, ...] = ()

    def add(self, listener: PythonListener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event (see the module docstring for the threads); returns a
        function that removes it."""
        self._listeners = (*self._listeners, listener)

        def remove() -> None:
            self._listeners = tuple(item for item in self._listeners if item is not listener)

        return remove

    def emit(self, event: PythonEvent) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                _log.exception("python tool listener %r raised on %s", listener, event.kind)


def current_shell() -> Any:
    """The running IPython shell, or ``None`` (IPython is not imported unless something else did)."""
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


@dataclass(slots=True)
class CodeResult:
    """How the code ended: ``value`` (formatted ``bundle``) of the last expression, or the ``error`` it raised
    (``traceback``: text without our frames)."""

    has_value: bool = False
    bundle: dict[str, Any] = field(default_factory=dict)
    error: BaseException | None = None
    traceback: str = ""


class Capture:
    """Output of one call: text (bounded, for the model) and rich bundles (bounded, for the widget)."""

    def __init__(
        self, call_id: str, execution: Execution, output: OutputAccumulator, listeners: PythonListeners
    ) -> None:
        self.call_id = call_id
        self._emit = listeners.emit
        self.execution = execution
        self.output = output
        self.rich: list[dict[str, Any]] = []
        self.dropped = 0
        self._at_line_start = True
        self._clear_pending = False

    def text(self, kind: Literal["stdout", "stderr"], text: str) -> None:
        """A write to stdout/stderr (on the code's thread; an interrupt waits until it is recorded)."""
        if not text:
            return
        with self.execution.critical():
            if self._clear_pending:
                self._clear()
            self._append(text)
            self._emit(PythonEvent(self.call_id, kind, text))

    def display(self, data: Mapping[str, Any], metadata: Mapping[str, Any] | None) -> None:
        with self.execution.critical():
            if self._clear_pending:
                self._clear()
            plain = str(data.get("text/plain", ""))
            self.keep({"type": "display", **_bounded(data, metadata)})
            if plain:
                self.line(plain)
            self._emit(PythonEvent(self.call_id, "display", plain, data, metadata))

    def clear(self, wait: bool = False) -> None:
        """``clear_output()``: the rich outputs shown so far go (the text the model gets stays); with ``wait``,
        when the next output comes (an animation loop's ``clear_output(wait=True)`` then ``display(frame)``)."""
        with self.execution.critical():
            if wait:
                self._clear_pending = True
            else:
                self._clear()

    def _clear(self) -> None:
        self._clear_pending = False
        self.rich = []
        self.dropped = 0
        self._emit(PythonEvent(self.call_id, "clear"))

    def keep(self, item: dict[str, Any]) -> None:
        if len(self.rich) < MAX_RICH_OUTPUTS:
            self.rich.append(item)
        else:
            self.dropped += 1

    def line(self, text: str) -> None:
        """Append ``text`` on a line of its own."""
        self._append(text if self._at_line_start else "\n" + text)
        if not text.endswith("\n"):
            self._append("\n")

    def _append(self, text: str) -> None:
        self.output.append(text.encode("utf-8", "replace"))
        self._at_line_start = text.endswith("\n")

    @contextmanager
    def installed(self, shell: Any) -> Iterator[None]:
        """Swap ``sys.stdout``/``sys.stderr`` and the shell's display publisher for ours, then restore them. What
        the threads running before (but this one) write meanwhile is not the code's: it goes where it would go."""
        saved = sys.stdout, sys.stderr, getattr(shell, "display_pub", None)
        others = _Elsewhere.now()
        streams = _STREAMS.take()
        streams[0].serve(self, saved[0], others)
        streams[1].serve(self, saved[1], others)
        sys.stdout, sys.stderr = streams
        if shell is not None:
            shell.display_pub = _publisher_class()(shell=shell, capture=self, original=saved[2], others=others)
            shell.ask_exit = _refuse_exit  # exit()/quit() would shut down the user's kernel
        try:
            yield
        finally:
            sys.stdout, sys.stderr = saved[0], saved[1]
            if shell is not None:
                shell.display_pub = saved[2]
                vars(shell).pop("ask_exit", None)
            _STREAMS.give_back(streams)


def _refuse_exit() -> None:
    raise RuntimeError(EXIT_REFUSED)


class _Elsewhere:
    """Which writes are not the code's: those of the threads that ran before it started (the kernel's shell channel,
    control and iostream threads, a thread of the user's; the code's own thread aside) and of kernel subshells (a
    subshell console, a comm served on a subshell, which may start meanwhile). The kernel's shell channel thread
    logs "No such comm" on stderr while it routes a message for a comm it does not know (a page reloaded meanwhile);
    that is the kernel's, not the code's (issue 37 item 7). What threads the code starts write is the code's."""

    __slots__ = ("_threads",)

    def __init__(self, threads: frozenset[int]) -> None:
        self._threads = threads

    @classmethod
    def now(cls) -> _Elsewhere:
        here = threading.get_ident()
        return cls(frozenset(thread.ident for thread in threading.enumerate() if thread.ident not in (here, None)))

    def __call__(self) -> bool:
        """The calling thread's writes are not the code's."""
        return threading.get_ident() in self._threads or _on_subshell()


class _Stream(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` while the code runs (attached to its capture), and afterwards a plain
    forwarder to the stream it replaced: see :class:`_Streams` for why it outlives the code."""

    def __init__(self, kind: Literal["stdout", "stderr"]) -> None:
        self._kind: Literal["stdout", "stderr"] = kind
        self._capture: Capture | None = None
        self._original: Any = None
        self._elsewhere: Callable[[], bool] = _always

    def serve(self, capture: Capture, original: Any, elsewhere: _Elsewhere) -> None:
        self._original = original
        self._elsewhere = elsewhere
        self._capture = capture

    def retire(self) -> None:
        """The code has returned: forward every write (a print still under way on another thread finishes where
        it began); the capture is let go."""
        self._capture = None
        self._elsewhere = _always

    @property
    def name(self) -> str:
        return f"<{self._kind}>"

    @property
    def encoding(self) -> str:  # type: ignore[override]  # read-only here
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        capture = self._capture
        if capture is None or self._elsewhere():  # a subshell console's output is its own, a kernel thread's log
            return int(self._original.write(text))  # is the kernel's
        capture.text(self._kind, text)
        return len(text)

    def flush(self) -> None:
        if self._capture is None or self._elsewhere():
            self._original.flush()

    def __getattr__(self, name: str) -> Any:
        # ipykernel sets a subshell request's parent on ``sys.stdout`` (``set_thread_parent``) from that subshell's
        # thread meanwhile: the kernel's stream keeps it, for what the subshell writes (forwarded above).
        if name.startswith("__") or name in ("_capture", "_kind", "_original", "_elsewhere"):
            raise AttributeError(name)
        return getattr(self._original, name)


def _always() -> bool:
    return True


class _Streams:
    """Our ``sys.stdout``/``sys.stderr`` pairs, kept for the life of the process and reused, never freed.

    CPython's ``print()`` holds ``sys.stdout`` as a *borrowed* reference between its writes (the text, the
    separator, the end; python/cpython#130163: 3.11.7, 3.12.1 and 3.13.0 crash on it). A thread printing while the
    code returns — a subshell console's ``%pi abort`` printing "pi: stopping" as the code it stopped ends — would
    then write to our stream after the restore had freed it: a crash, or the kernel's own objects misread (CI, stop
    42: "AttributeError: _elsewhere", then ipykernel's "'collections.deque' object has no attribute '_io_loop'"). A
    pair given back is retired (it forwards, holding no capture) and waits for the next code; as many pairs exist as
    codes ever ran at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[tuple[_Stream, _Stream]] = []  # a pair in use is referenced by its code's installed()

    def take(self) -> tuple[_Stream, _Stream]:
        with self._lock:
            return self._idle.pop() if self._idle else (_Stream("stdout"), _Stream("stderr"))

    def give_back(self, pair: tuple[_Stream, _Stream]) -> None:
        for stream in pair:
            stream.retire()
        with self._lock:
            self._idle.append(pair)


_STREAMS = _Streams()


def _on_subshell() -> bool:
    """The calling thread is a kernel subshell's (JupyterLab's subshell console, a comm served on a subshell): what
    it writes or displays while the agent's code runs goes where it would go, not into the code's output."""
    subshell = _subshell_thread_class()
    return subshell is not None and isinstance(threading.current_thread(), subshell)


@functools.cache
def _subshell_thread_class() -> type | None:
    """ipykernel's subshell thread class, imported once (every write of the agent's code asks)."""
    try:
        from ipykernel.subshell import SubshellThread
    except ImportError:  # pragma: no cover - ipykernel >= 7 has subshells
        return None
    return SubshellThread


@functools.cache
def _publisher_class() -> type:
    from IPython.core.displaypub import DisplayPublisher

    class Publisher(DisplayPublisher):
        """The shell's display publisher while the code runs: ``display()`` goes to the capture."""

        def __init__(self, *, shell: Any, capture: Capture, original: Any, others: _Elsewhere) -> None:
            super().__init__(shell=shell)  # type: ignore[no-untyped-call]
            self.capture = capture
            self.original = original
            self.others = others

        def __getattr__(self, name: str) -> Any:
            # ipykernel calls its own methods on the shell's publisher from other threads meanwhile (a
            # subshell's message sets the parent with ``set_parent``): the kernel's publisher answers them.
            if name.startswith("__") or name in ("capture", "original", "others"):
                raise AttributeError(name)
            return getattr(self.original, name)

        def publish(self, data: Any, metadata: Any = None, source: Any = None, **kwargs: Any) -> None:
            if self.others():
                self.original.publish(data, metadata, source, **kwargs)
                return
            self.capture.display(data, metadata)

        def clear_output(self, wait: bool = False) -> None:
            self.capture.clear(wait)

    return Publisher


def _bounded(data: Mapping[str, Any], metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    size = sum(len(str(value)) for value in data.values())
    if size > MAX_BUNDLE_CHARS:
        return {"data": {"text/plain": str(data.get("text/plain", ""))}, "metadata": {}, "omitted_chars": size}
    return {"data": dict(data), "metadata": dict(metadata or {})}


# -- running ------------------------------------------------------------------------------------------
def run_code(
    code: str, *, shell: Any, namespace: dict[str, Any], capture: Capture, name: str | None = None
) -> CodeResult:
    """Run ``code`` in ``namespace`` as a cell would (see the module docstring); never raises for what the
    code does (``KeyboardInterrupt`` and ``SystemExit`` included): that is in the result. ``name``: how its
    traceback names it (``Cell In[12]`` for a cell's code; default ``Agent code [n]``)."""
    result = CodeResult()
    number = next(_numbers)
    filename = f"{_INPUT}{number}>"
    _names[filename] = name or f"Agent code [{number}]"

    def body() -> None:
        source = shell.transform_cell(code) if shell is not None else code
        module, expression = _compile(source, filename, shell)
        exec(module, namespace)
        if expression is not None:
            value = eval(expression, namespace)
            if value is not None:
                result.has_value = True
                result.bundle = _format(value, shell)
                _remember(value, namespace, shell)
        _show_figures()

    with capture.installed(shell):
        try:
            capture.execution.call(body)
        except BaseException as error:  # the code's failure is the result, whatever it is
            result.error = error
            result.traceback = format_error(error, shell)
            if isinstance(error, SyntaxError) and "'await' outside" in str(error.msg):
                result.traceback += "\n" + AWAIT_HINT
    return result


def _show_figures() -> None:
    """What matplotlib's inline backend does when a cell ends: the figures the code drew and did not show are
    displayed (into the capture: the tool's panel and result) and closed. Without this they would show under the
    user's next cell. Only after code that ran to its end: a stopped run should not wait for figures to render."""
    inline = sys.modules.get("matplotlib_inline.backend_inline")
    matplotlib = sys.modules.get("matplotlib")
    if inline is None or matplotlib is None or "matplotlib.pyplot" not in sys.modules:
        return
    if "inline" not in str(matplotlib.get_backend()):  # another backend (ipympl, say) shows its own figures
        return
    inline.flush_figures()


def _compile(source: str, filename: str, shell: Any) -> tuple[Any, Any]:
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)  # tracebacks show lines
    tree = ast.parse(source, filename)
    if shell is not None:
        tree = shell.transform_ast(tree)
    flags = getattr(getattr(shell, "compile", None), "compiler_flags", 0)
    expression = None
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr) and not _silenced(source):
        tree.body.pop()
        expression = compile(ast.Expression(last.value), filename, "eval", flags, dont_inherit=True)
    return compile(tree, filename, "exec", flags, dont_inherit=True), expression


def _silenced(source: str) -> bool:
    """The last token is ``;``: a cell shows no value then."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return False
    skip = {tokenize.ENDMARKER, tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.DEDENT}
    last = next((token for token in reversed(tokens) if token.type not in skip), None)
    return last is not None and last.string == ";"


def _format(value: object, shell: Any) -> dict[str, Any]:
    if shell is None:
        return {"data": {"text/plain": repr(value)}, "metadata": {}}
    data, metadata = shell.display_formatter.format(value)
    return _bounded(data, metadata)


def _remember(value: object, namespace: dict[str, Any], shell: Any) -> None:
    """``_``, ``__``, ``___`` as the display hook keeps them (and the hook's own copies, for the next cell)."""
    hook = getattr(shell, "displayhook", None) if shell is not None and namespace is shell.user_ns else None
    if hook is not None:
        hook.___, hook.__, hook._ = hook.__, hook._, value
    namespace["___"], namespace["__"], namespace["_"] = namespace.get("__", ""), namespace.get("_", ""), value


def format_error(error: BaseException, shell: Any = None) -> str:
    """The traceback as Python prints it, from the agent's code on: without the frames that called it (the
    executor, IPython's parser for a syntax error) and without this package's frames (the interrupt handler).
    Code is named as a notebook names it: ``Cell In[12], line 3`` for a cell (the user's, from IPython's compiler, or
    one the agent ran), ``Agent code [3], line 3`` for the python tool's (not ``File "<python-input-3>"``)."""
    summary = traceback.TracebackException.from_exception(error)
    frames = list(summary.stack)
    first = next((i for i, frame in enumerate(frames) if frame.filename.startswith(_INPUT)), len(frames))
    summary.stack = traceback.StackSummary.from_list(frames[first:])
    _strip(summary, depth=0)
    return _named("".join(summary.format()).rstrip("\n"), shell)


def _named(text: str, shell: Any) -> str:
    cells = getattr(getattr(shell, "compile", None), "_filename_map", None)  # IPython's cells: file -> count

    def name(match: re.Match[str]) -> str:
        filename = match[1]
        if filename in _names:
            return _names[filename]
        if isinstance(cells, dict) and isinstance(cells.get(filename), int):
            return f"Cell In[{cells[filename]}]"
        return match[0]

    return _FILE.sub(name, text)


def _strip(summary: traceback.TracebackException, depth: int) -> None:
    if depth > 20:
        return
    summary.stack = traceback.StackSummary.from_list(
        [frame for frame in summary.stack if frame.filename not in _OUR_FILES]
    )
    for linked in (summary.__cause__, summary.__context__):
        if linked is not None:
            _strip(linked, depth + 1)
