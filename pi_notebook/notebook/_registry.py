"""The kernel's sessions and their runs: ``configure()``, ``get_session()``, ``get_notebook_session()``.

A :class:`SessionRegistry` holds named :class:`NotebookSession` entries (each a session, its model spec and its
runs); ``%pi`` and the functions below use the entry named :data:`DEFAULT_NAME`, created with the offline faux
model on first use (no key, no network; its reply explains how to connect a real provider). The kernel has one
registry, :data:`REGISTRY`, which also owns the kernel's JupyterLab control channel (``_control_comm``); whoever
else wants run state changes subscribes with :meth:`SessionRegistry.on_state`.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agent import AgentTool
from ..ai import Cassette, Model, StreamFn
from ..ai import stream as default_stream
from ..ai.models import model_from_server, model_from_spec, parse_compatible_spec
from ..ai.providers.faux import FauxProvider
from ..kernel import KERNEL, InterruptHook, Kernel, Scratchpad, current_scratch
from ..mcp import McpServers, ServerConfig, server_configs
from ..session import AgentSession, SessionBusyError, Settings, site_policy
from ._approval import NotebookApprover
from ._cell_link import notebook_of_cell, with_cell_tools
from ._checkpoints import RewindRefused, RunCheckpoints, with_checkpoint
from ._control_comm import ControlChannel
from ._default_model import configured_model, default_faux
from ._defaults import allowed_tools_and_settings, system_prompt
from ._fork import Fork, find_prompt, fork_label
from ._mcp_link import sync_mcp_tools, with_mcp_tools
from ._recent import RecentRuns
from ._rewind import rewind
from ._run import Run
from ._run_state import StateListener
from ._saved import default_store
from .widget._tree_panel import tree_items
from .widget._view import RunView

__all__ = [
    "DEFAULT_NAME",
    "REGISTRY",
    "NotebookSession",
    "SessionRegistry",
    "configure",
    "get_notebook_session",
    "get_session",
]

DEFAULT_NAME = "default"


@dataclass(eq=False)
class NotebookSession:
    """One named session of the kernel, how it was configured, and the runs started on it."""

    name: str
    session: AgentSession
    model_spec: str
    faux: FauxProvider | None = None
    runs: list[Run] = field(default_factory=list)
    cassette: Cassette | None = None
    """Every run of this session records to it or replays from it (``%pi cassette``)."""
    cwd: str | None = None
    """The notebook's system prompt is made anew for each run (the user's variables now) with this working
    directory; ``None`` when the caller gave a ``system_prompt`` of their own (then it is left alone)."""
    notebook: str | None = None
    """The notebook's path, recorded in the header of each session file (when the kernel knows it)."""
    model_missing: str | None = None
    """Why no run may start until a model is set: ``%pi resume`` could not restore the session's model (so the faux
    model's replies never land in a real session's file). ``set_model`` clears it."""
    checkpoints: RunCheckpoints = field(default_factory=RunCheckpoints, repr=False)
    """The latest runs' checkpoints, which ``%pi rewind`` and a run's **Undo run** take back (``_rewind``)."""
    scratch: Scratchpad = field(default_factory=Scratchpad, repr=False)
    """The python tool's own namespace when ``python.namespace`` is ``scratch`` (``%pi adopt NAME``)."""
    mcp: McpServers = field(default_factory=McpServers, repr=False)
    """The kernel's MCP servers (the registry's): each run is offered the tools of those ready (``_mcp_link``)."""
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set, repr=False)
    _state_listeners: list[StateListener] = field(default_factory=list, repr=False)
    _recent: RecentRuns = field(default_factory=RecentRuns, repr=False)

    @property
    def busy(self) -> bool:
        """A run was started and has not settled (its task may not have begun yet), or the session works."""
        return self.active_run is not None or not self.session.is_idle

    @property
    def active_run(self) -> Run | None:
        return next((run for run in reversed(self.runs) if not run.done), None)

    @property
    def current_run(self) -> Run | None:
        """The active run, else the last one (``None`` before the first)."""
        return self.active_run or (self.runs[-1] if self.runs else None)

    def start(self, label: str, operation: Callable[[], Any], *, with_view: bool = True) -> Run:
        """Start ``operation`` (a session operation) as a new run of this session (inside its cassette, if any).
        Raises ``RuntimeError`` while the session has no model it may use (:attr:`model_missing`)."""
        if self.model_missing is not None:
            raise RuntimeError(self.model_missing)
        if self.cassette is not None:
            operation = _within(self.cassette, operation)
        number = len(self.runs) + 1
        target = notebook_of_cell(number, self.notebook)
        operation = with_mcp_tools(self, self.mcp, with_cell_tools(self, target, operation))
        operation = with_checkpoint(self.checkpoints.start(number, self.session, target), operation)
        operation = self._with_namespace(operation)
        operation = self._then_show_trees(operation)
        self.refresh_prompt()
        run = Run(
            self.session,
            number,
            operation,
            label=label,
            with_view=with_view,
            notebook=target,
            on_send=self.send_from_view,
            on_undo=lambda: self.undo_from_view(number),
        )
        self.runs.append(run)
        if run.presenter is not None:
            run.presenter.view.on_fork(self.fork_from_view)
            run.presenter.show_tree(self.session.prompt_count, list)
        self._recent.admit(run)
        for listener in self._state_listeners:
            run.on_state(listener)
        return run

    def send_from_view(self, text: str, view: RunView) -> None:
        """A text sent from a settled run's box (on the kernel's loop): a new run with it as the prompt, drawn in
        that view below the box, where it was typed. While another run is active it becomes that run's follow-up
        instead (the box says so); a run that cannot start says why there and gives the text back."""
        active = self.active_run
        if active is not None:
            task = asyncio.ensure_future(self.session.follow_up(text))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            view.say(f"Run {active.number} is active: queued as its follow-up: {text}")
            return
        try:
            run = self.start(text, lambda: self.session.prompt(text))
        except (RuntimeError, ValueError) as exc:
            view.input.value = text
            view.say(f"Not sent: {exc}")
            return
        if run.view is not None:
            view.add_follow_on(run.view)

    def undo_from_view(self, number: int) -> None:
        """Run ``number``'s **Undo run** (on the kernel's loop): rewind it (``_rewind``); what stops it is said under
        its box."""

        async def undo() -> None:
            try:
                await rewind(self, number, busy=lambda: bool(REGISTRY.active_runs()))
            except (RewindRefused, SessionBusyError) as exc:
                view = self.runs[number - 1].view
                if view is not None:
                    view.say(f"Not undone: {exc}")

        task = asyncio.ensure_future(undo())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _with_namespace(self, operation: Callable[[], Any]) -> Callable[[], Any]:
        """``operation`` with the python tool in the scratch namespace when ``python.namespace`` says so."""
        if self.session.settings.python.namespace != "scratch":
            return operation

        async def run() -> Any:
            current_scratch.set(self.scratch)
            return await operation()

        return run

    def start_fork(self, fork: Fork) -> Run:
        """Start ``fork`` (a fork run's operation, see ``_fork``) as a run; it gets the run to give the prompt back
        in."""
        run = self.start(fork_label(fork.target), fork)
        fork.run = run
        return run

    def fork_from_view(self, entry_id: str, view: RunView) -> None:
        """A click on a prompt of a run widget's session tree (on the kernel's loop): a fork run from before it, drawn
        in that view below its box. While a run is active, or for an entry that is not a prompt, the view says why
        (one line) and nothing starts."""
        active = self.active_run
        if active is not None or not self.session.is_idle:
            which = f"Run {active.number} is" if active is not None else "The session is"
            view.say(f"{which} active: stop it (or wait) before forking")
            return
        try:
            run = self.start_fork(Fork(self.session, find_prompt(self.session, entry_id)))
        except (RuntimeError, ValueError) as exc:
            view.say(f"Not forked: {exc}")
            return
        if run.view is not None:
            view.add_follow_on(run.view)

    def show_trees(self) -> None:
        """Draw the session tree as it is now in the open view of each of this session's runs (the tree itself, made
        once, only for views whose tree panel was opened)."""
        presenters = [run.presenter for run in self.runs if run.presenter is not None]

        @functools.cache
        def items() -> list[dict[str, Any]]:
            return [dict(item) for item in tree_items(self.session.tree())]

        for presenter in presenters:
            presenter.show_tree(self.session.prompt_count, items)

    def _then_show_trees(self, operation: Callable[[], Any]) -> Callable[[], Any]:
        async def operation_then_trees() -> Any:
            try:
                return await operation()
            finally:
                self.show_trees()

        return operation_then_trees

    def refresh_prompt(self, left_out: Collection[str] = ()) -> None:
        """Make the notebook's system prompt again from the tools and the user's namespace now (unless the
        session was given a prompt of its own). With a cassette it leaves out the working directory, the Python
        version and the variables, so a recording replays on another machine and after other cells ran.
        ``left_out``: tools the model is not offered this time (the cell tools without a JupyterLab page); the
        prompt says why, except with a cassette.

        Why (reviewed; kept): a cassette matches a request on its JSON body, and the system prompt is in it. The
        working directory and the Python version differ between the machine that recorded and the one that
        replays (a laptop, CI), so with them no committed recording would replay anywhere else; the variables
        depend on which cells ran before, in which order, so a replay after the user re-ran or deleted a cell
        would fail with "no recorded answer" for a reason that has nothing to do with the agent. Matching while
        ignoring those lines was the alternative: the cassette sits at the HTTP transport, below the providers,
        and would have to know where each provider puts the system prompt; and the replayed answers would name
        variables the replaying kernel may not have. The price: while recording, the model is not told the
        variables, so it looks with the ``python`` tool first (its guideline says to) — one more call, recorded
        like the others. The reproducible prompt is itself part of committed recordings
        (``notebooks/cassettes/``): changing its text means recording them again."""
        if self.cwd is None:
            return
        tools = [tool for tool in self.session.tools if tool.name not in left_out]
        scratch = self.session.settings.python.namespace == "scratch"
        if self.cassette is not None:  # what a recording replays against must not depend on machine or state
            prompt = system_prompt(tools, cwd=None, namespace=None, scratch=scratch)
        else:
            namespace = _user_namespace()
            prompt = system_prompt(tools, cwd=self.cwd, namespace=namespace, left_out=left_out, scratch=scratch)
        self.session.agent.state.system_prompt = prompt

    def abort_active(self) -> None:
        for run in self.runs:
            if not run.done:
                run.abort()

    def set_model(
        self,
        spec: str,
        *,
        context_window: int | None = None,
        max_tokens: int | None = None,
        key_env: str | None = None,
        from_server: bool = False,
        base_url: str | None = None,
    ) -> None:
        """Switch the model (a spec string, see ``%pi help``; ``faux`` for the offline model, which takes no
        options). ``context_window``, ``max_tokens``, ``key_env`` and ``base_url`` (another server speaking the
        spec's API) are :func:`model_from_spec`'s; with
        ``from_server`` the model comes from :func:`model_from_server` (one GET of the server's model list, which
        fills in the context window where the server reports it). Raises ``ValueError`` (one line) and leaves the
        model unchanged when the spec, an option or the server's list is wrong."""
        spec = spec.strip()
        session = self.session
        options: dict[str, int | str | None] = {
            "context_window": context_window,
            "max_tokens": max_tokens,
            "key_env": key_env,
            "base_url": base_url,
        }
        if spec == "faux":
            if from_server or any(value is not None for value in options.values()):
                raise ValueError("the faux model takes no options (configure(model=...) sets any Model field)")
            faux = self.faux or default_faux()
            session.model, session.agent.stream_fn = faux.model, faux.stream
            self.faux = faux
        else:
            make = model_from_server if from_server else model_from_spec
            if from_server:  # the listing's GET carries the key: only for a model and server the policy allows
                provider, url, model_id = parse_compatible_spec(spec)
                listed = model_from_spec(f"{provider}:{url}:{model_id or '*'}")  # no model named: any of the server's
                session.policy.check_request(listed, url)
            other: dict[str, Any] = {"base_url": base_url} if base_url else {}
            try:
                model = make(spec, context_window=context_window, max_tokens=max_tokens, key_env=key_env, **other)
            except ValueError as exc:  # model_from_server speaks Python; the magic's option is --context-window
                raise ValueError(str(exc).replace("pass context_window=<tokens>", "add --context-window N")) from None
            spec = _described(spec, model, options, from_server)
            self.use_model(model, spec)
            return
        self.model_spec = spec
        self.model_missing = None

    def use_model(self, model: Model, spec: str) -> None:
        """Switch to ``model`` (an HTTP provider's), shown as ``spec`` (``%pi status``, ``%pi model``)."""
        self.session.model, self.session.agent.stream_fn = model, default_stream
        self.model_spec = spec
        self.model_missing = None

    @property
    def file(self) -> Path | None:
        """The session file it records to (``None``: saving is off); it exists once a message was recorded."""
        store = self.session.store
        return store.path if store is not None else None

    def new_file(self) -> Path | None:
        """Start afresh: an empty transcript recorded to a new file (the previous file is kept as it is).
        Raises ``RuntimeError`` while a run is active."""
        self._check_idle("starting a new session")
        self.checkpoints.release_all()  # their conversation is the old file's
        default = self.name == DEFAULT_NAME
        store = default_store(self.session.settings, name=self.name, notebook=self.notebook, default=default)
        self.session.use_store(store, messages=[])
        return self.file

    def settings_changed(self) -> None:
        """Follow ``sessions.dir`` after a settings change: ``none`` stops saving at once; a folder given while
        saving was off saves the messages from now on to a new file there."""
        settings = self.session.settings
        if settings.sessions.dir is None and self.session.store is not None:
            self.session.use_store(None)
        elif settings.sessions.dir is not None and self.session.store is None:
            default = self.name == DEFAULT_NAME
            self.session.use_store(default_store(settings, name=self.name, notebook=self.notebook, default=default))

    def _check_idle(self, what: str) -> None:
        if self.busy:
            raise SessionBusyError(f"a run is active; wait for it (or %pi abort) before {what}")

    def dispose(self) -> None:
        """Abort its active runs, close the views of all its runs (each shows its static rendering from then on)
        and release the session (its store is closed)."""
        self.abort_active()
        self._recent.close(self.runs)
        self.checkpoints.release_all()
        self.scratch.clear()
        self.session.dispose()


def _user_namespace() -> dict[str, Any] | None:
    try:
        from IPython.core.getipython import get_ipython

        shell = get_ipython()  # type: ignore[no-untyped-call, unused-ignore]
    except Exception:  # pragma: no cover - IPython is a dependency
        return None
    return shell.user_ns if shell is not None else None


def _described(spec: str, model: Model, options: Mapping[str, int | str | None], from_server: bool) -> str:
    """The spec with the options given (as ``%pi model`` takes them), so ``%pi status`` shows what was set."""
    if from_server and spec.startswith(("openai-compatible:", "anthropic-compatible:")):
        spec = f"{model.provider}:{model.base_url}:{model.id}"  # the server may have named the model
    flags = [f"--{name.replace('_', '-')} {value}" for name, value in options.items() if value is not None]
    if from_server:
        flags.append(f"--from-server (context window {model.context_window})")
    return " ".join([spec, *flags])


def _within(cassette: Cassette, operation: Callable[[], Any]) -> Callable[[], Any]:
    """``operation`` with ``cassette`` active: the run's provider requests (its tasks inherit it) use it."""

    async def run() -> Any:
        async with cassette:
            return await operation()

    return run


_KEEP: Any = object()


class SessionRegistry:
    """Named notebook sessions (one is the default), and what the kernel has once: its state
    (:attr:`kernel`), its JupyterLab control channel (:attr:`control`, told of every run's state change) and its
    SIGINT hook (:attr:`interrupt`)."""

    def __init__(self, kernel: Kernel = KERNEL) -> None:
        self._entries: dict[str, NotebookSession] = {}
        self.kernel = kernel
        self.control = ControlChannel(self, kernel)
        self._state_listeners: list[StateListener] = [self.control.publish]
        self.recent = RecentRuns()
        """The runs (of every session) whose views are open; ``recent.keep`` settled ones stay open."""
        self.interrupt = InterruptHook(self.abort_active)
        self.mcp = McpServers()
        """The kernel's MCP servers (``%pi mcp``, ``configure(mcp_servers=...)``, the ``mcpServers`` file): every
        session's runs are offered their tools; ``configure()`` keeps them."""
        self.current = DEFAULT_NAME
        """The name ``%pi`` and the functions below use when given none (``%pi use NAME`` sets it)."""
        self.notebook: str | None = None
        """The notebook's path (set by ``%load_ext``), recorded in new session files."""

    def __iter__(self) -> Iterator[NotebookSession]:
        return iter(list(self._entries.values()))

    def find(self, name: str | None = None) -> NotebookSession | None:
        """The entry called ``name`` (default: :attr:`current`), if it was configured (asking never creates one)."""
        return self._entries.get(name or self.current)

    def get(self, name: str | None = None) -> NotebookSession:
        """The entry called ``name`` (default: :attr:`current`), created on first use: the default session with
        the faux model; another name with the default session's model, tools and settings (the faux model if
        that one uses it), its own file, queue and runs."""
        name = name or self.current
        entry = self._entries.get(name)
        if entry is not None:
            return entry
        base = self._entries.get(DEFAULT_NAME)
        if name == DEFAULT_NAME or base is None or base.faux is not None:
            return self.configure(name=name, settings=base.session.settings if base is not None else None)
        session = base.session
        entry = self.configure(session.model, session.agent.stream_fn, session.tools, session.settings, name=name)
        entry.model_spec = base.model_spec
        return entry

    @contextmanager
    def using(self, name: str | None) -> Iterator[None]:
        """Make ``name`` the current session for the duration (``%pi -s NAME ...``); ``None`` changes nothing."""
        if not name:
            yield
            return
        previous, self.current = self.current, name
        try:
            yield
        finally:
            self.current = previous

    def live_files(self) -> dict[Path, str]:
        """The session files the kernel's sessions record to, with the session's name."""
        return {entry.file: entry.name for entry in self if entry.file is not None}

    def configure(
        self,
        model: Model | str | None = None,
        stream_fn: StreamFn | None = None,
        tools: Iterable[AgentTool] | None = None,
        settings: Settings | Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        cassette: Cassette | str | os.PathLike[str] | None = _KEEP,
        **session_options: Any,
    ) -> NotebookSession:
        """(Re)create the entry ``name`` (default: :attr:`current`); see :func:`configure`. The previous one is
        disposed."""
        name = name or self.current
        previous = self._entries.get(name)
        cassette = _cassette_for(cassette, previous)
        model, stream_fn, spec, faux = configured_model(model, stream_fn)
        # The site policy is checked before the session in place is disposed: a refused configure() changes nothing.
        kept = previous.session if previous is not None else None
        tools, settings = allowed_tools_and_settings(model, tools, settings, kept)
        if "store" not in session_options and isinstance(settings, Settings):
            default = name == DEFAULT_NAME
            session_options["store"] = default_store(settings, name=name, notebook=self.notebook, default=default)
        previous = self._entries.pop(name, None)
        if previous is not None:
            previous.dispose()
        cwd = None if "system_prompt" in session_options else os.getcwd()
        if cwd is not None and previous is not None and previous.cwd is None:  # keep a prompt of one's own
            session_options["system_prompt"] = previous.session.agent.state.system_prompt
            cwd = None
        session = AgentSession(model=model, stream_fn=stream_fn, tools=tools, settings=settings, **session_options)
        entry = NotebookSession(
            name,
            session,
            spec,
            faux,
            cassette=cassette,
            cwd=cwd,
            notebook=self.notebook,
            mcp=self.mcp,
            _state_listeners=self._state_listeners,
            _recent=self.recent,
        )
        session.approver = NotebookApprover(entry, self.control.page_connected)
        if len(self.mcp):
            sync_mcp_tools([entry], self.mcp)
        entry.refresh_prompt()
        self._entries[name] = entry
        return entry

    # -- every session's runs -----------------------------------------------------------------------------
    def active_runs(self) -> list[Run]:
        return [run for entry in self for run in entry.runs if not run.done]

    def current_run(self) -> Run | None:
        """The most recently started active run, else the most recently started run (``None`` before any)."""
        runs = [run for entry in self for run in entry.runs]
        active = [run for run in runs if not run.done]
        candidates = active or runs
        return max(candidates, key=lambda run: run.started_at) if candidates else None

    def abort_active(self) -> None:
        for entry in self:
            entry.abort_active()

    def on_state(self, listener: StateListener) -> None:
        """Call ``listener(state)`` for every state change of every run started from now on."""
        if listener not in self._state_listeners:
            self._state_listeners.append(listener)


REGISTRY = SessionRegistry()
"""The kernel's sessions."""


def configure(
    model: Model | str | None = None,
    stream_fn: StreamFn | None = None,
    tools: Iterable[AgentTool] | None = None,
    settings: Settings | Mapping[str, Any] | None = None,
    cassette: Cassette | str | os.PathLike[str] | None = _KEEP,
    mcp_servers: Mapping[str, Any] | Sequence[ServerConfig] | None = None,
    **session_options: Any,
) -> AgentSession:
    """(Re)create the notebook's session. ``model`` is a :class:`~pi_notebook.ai.Model` or a spec string
    (see ``%pi help``); with neither ``model`` nor ``stream_fn`` the offline faux model is used. ``settings`` is a
    :class:`~pi_notebook.session.Settings` or a dict of its fields (``{"retry": {"max_retries": 5}}``). Other
    keyword arguments go to :class:`~pi_notebook.session.AgentSession`. An active run of the previous session is
    aborted. The new session starts with an empty transcript, saved to a new file under ``settings.sessions.dir``
    (unless that is ``none``, or a ``store=`` is given); the previous session's file is kept.

    ``settings``: left out, the session keeps the settings it has (what ``%pi settings`` changed included);
    given, they replace them all (``{}``: the defaults).

    ``tools``: left out, the session keeps the tools it has (at first the whole set, ``default_tools()``:
    ``read``, ``bash``, ``edit``, ``write``, ``grep``, ``find``, ``ls`` rooted at the working directory, and
    ``python``); a list replaces them (``[]``: none). Whether a tool asks before it runs is the setting
    ``tools.approval`` (``%pi tools`` lists both). Without a ``system_prompt=`` the notebook's own is used, made
    anew for each run (see ``_defaults``), unless an earlier ``configure(system_prompt=...)`` set one, which is
    kept.

    ``cassette``: a :class:`~pi_notebook.ai.Cassette` (or a path, for ``Cassette(path)``) that every ``%pi`` run
    records to or replays from, as ``%pi cassette PATH`` sets; ``None`` turns it off. Left out, the cassette in
    use is kept, so ``configure()`` after ``%pi cassette`` never makes a notebook call out unnoticed.

    ``mcp_servers``: the kernel's MCP servers, in the ``mcpServers`` shape (``{"time": {"command": "uvx", "args":
    ["mcp-server-time"]}}``, with or without the outer ``"mcpServers"`` key) or as
    :class:`~pi_notebook.mcp.ServerConfig` objects: they become exactly the kernel's servers (those configured the
    same way keep running; the others are stopped). Left out, the servers stay as they are: they belong to the kernel,
    not to the session (``%pi mcp``). Checked before anything changes (a bad entry, a ``${VAR}`` not set, a server the
    site policy does not allow raise, and nothing changes)."""
    configs = server_configs(mcp_servers) if mcp_servers is not None else None
    if configs is not None:
        policy = site_policy()
        for config in configs:
            policy.check_mcp_server(config.name, config.resolved().target(), url=config.transport == "http")
    session = REGISTRY.configure(model, stream_fn, tools, settings, cassette=cassette, **session_options).session
    if configs is not None:
        REGISTRY.mcp.replace_all(configs)
        sync_mcp_tools(REGISTRY, REGISTRY.mcp)
    return session


def get_notebook_session() -> NotebookSession:
    """What ``%pi`` drives: the notebook's session with its model spec and runs (created on first use)."""
    return REGISTRY.get()


def get_session() -> AgentSession:
    """The notebook's session (created with the faux model on first use)."""
    return REGISTRY.get().session


def _cassette_for(
    cassette: Cassette | str | os.PathLike[str] | None, previous: NotebookSession | None
) -> Cassette | None:
    """``configure(cassette=...)``'s cassette, loaded: the previous session's if not given (``_KEEP``)."""
    if cassette is _KEEP:
        cassette = previous.cassette if previous is not None else None
    elif cassette is not None and not isinstance(cassette, Cassette):
        cassette = Cassette(cassette)
    if cassette is not None:
        cassette.load()  # a missing file in replay-only mode fails here, not in the first run
    return cassette
