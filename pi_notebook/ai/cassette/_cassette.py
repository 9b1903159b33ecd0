"""Cassettes: record the providers' HTTP exchanges once, replay them later with no key and no network.

    from pi_notebook.ai import Cassette

    with Cassette("cassettes/demo.jsonl"):          # mode "once": replay if the file exists, else record
        message = await complete(model, context)

A cassette answers the requests made while it is active, at the HTTP transport of the shared client, so the
providers' code (streaming, layer-1 retries, 429s with ``retry-after``, overflow errors, Stop) runs the same in
replay as it did live. It is active inside ``with``/``async with`` and in every task started there (a context
variable); in a notebook, ``%pi cassette PATH`` or ``configure(cassette=...)`` applies one to every ``%pi`` run.

Modes (vcrpy's): ``once`` replays when the file exists (a request it has no answer for is an error), else
records; ``none`` only replays (a missing file or an unmatched request is an error); ``all`` records everything
again (the file is rewritten from the first recorded exchange); ``new`` replays what it has and records what it
has not (appended). The environment variable ``PI_NOTEBOOK_CASSETTE_MODE`` overrides the mode of every cassette:
``PI_NOTEBOOK_CASSETTE_MODE=none`` in CI makes sure nothing calls out.

Matching: method, URL and JSON body, minus the fields in ``ignore_body_fields`` (dotted paths, ``*`` matches any
key or list index). Each recorded exchange answers once; identical requests get their answers in recorded order.
An unmatched request fails with :class:`CassetteError` naming it and saying where its body first differs from the
closest recorded one (the recorded request at that URL whose body agrees with it longest, those not replayed yet
first), with both values: ``CassetteError: cassette x.jsonl (mode none) has no recorded response for POST
https://…/chat/completions: the closest recorded request (exchange 3 in the file) differs first at
messages[3].content: "What is 2+2?" != "What is 3+3?" (recorded != sent); …``. Providers report it as the stream's
error message (failures are data). Its message carries ``request_failure.should_retry=False``, so no layer retries
it, whatever its text holds (a port with ``500`` in it once made the session retry it in vain). When the
environment variable ``PI_NOTEBOOK_CASSETTE_MISSES`` names a file, each such message is also appended to it as a
JSON line (``{"cassette": ..., "message": ...}``): the pytest plugin (``pytest --pi-replay``) reads it to fail the
cell whose run missed.

Notes: a host records there what was decided outside HTTP that a replay must decide the same way (the notebook
records the user's answers to tool calls that asked for approval): :meth:`Cassette.remember` writes one while the
cassette records, :meth:`Cassette.recall` gives the recorded one back (each once, in recorded order).

While a cassette can only replay (mode ``none``, or ``once`` with an existing file), a provider that finds no API
key sends a placeholder instead of failing, so a notebook recorded with a key replays without one.

What replay does not reproduce: time spent outside the HTTP body (a layer-1 retry still waits for the recorded
``retry-after``; session backoff still waits), and a Stop made by hand while recording: the body replays up to
where it was stopped, then goes quiet until the run is stopped again or its idle timeout expires. Stop runs
from code (a listener, ``run.abort()``) in notebooks meant for CI.
"""

from __future__ import annotations

import json
import os
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeAlias, get_args

import httpx

from .._secret_env import HELD_SECRETS, secret_variables
from ._format import Exchange, FormatError, Note, TapeRequest, header_line, parse_lines
from ._match import Difference, Redactor, first_difference, match_key, without_fields
from ._route import CassetteError, activate, deactivate
from ._transport import Timing, record, replay, tape_request

__all__ = [
    "CASSETTE_MODE_VARIABLE",
    "DEFAULT_IGNORED_FIELDS",
    "MISSES_VARIABLE",
    "Cassette",
    "CassetteError",
    "CassetteMode",
    "CassetteTiming",
]

CassetteMode: TypeAlias = Literal["once", "none", "all", "new"]
CassetteTiming: TypeAlias = Timing
CASSETTE_MODE_VARIABLE = "PI_NOTEBOOK_CASSETTE_MODE"
MISSES_VARIABLE = "PI_NOTEBOOK_CASSETTE_MISSES"
"""Names a file to which every unmatched request's message is appended (a JSON line), for the pytest plugin."""
DEFAULT_IGNORED_FIELDS = ("metadata", "user", "prompt_cache_key", "safety_identifier")
"""Request fields that carry per-user or per-session ids in the OpenAI and Anthropic APIs."""

_MODES: tuple[str, ...] = get_args(CassetteMode)
_TIMINGS: tuple[str, ...] = get_args(Timing)


class Cassette:
    """Records and replays HTTP exchanges in a JSONL file. See the module docstring.

    One object keeps its place: entering it again continues the replay where it stopped (a new object starts
    from the beginning of the file). The file is read on first use; mode and replay/record are decided then.
    ``secrets``: more values to keep out of the file, besides API keys in the environment and auth headers.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        mode: CassetteMode = "once",
        timing: CassetteTiming = "fast",
        ignore_body_fields: Sequence[str] = DEFAULT_IGNORED_FIELDS,
        secrets: Iterable[str] = (),
    ) -> None:
        if mode not in _MODES:
            raise ValueError(f"unknown cassette mode {mode!r} (modes: {', '.join(_MODES)})")
        if timing not in _TIMINGS:
            raise ValueError(f"unknown cassette timing {timing!r} (fast or real)")
        if isinstance(ignore_body_fields, str):
            raise TypeError("ignore_body_fields is a sequence of dotted paths, not one string")
        self.path = Path(path)
        self.mode: CassetteMode = mode
        self.timing: CassetteTiming = timing
        self.ignore_body_fields = tuple(ignore_body_fields)
        self._ignored = [field.split(".") for field in self.ignore_body_fields]
        self._secrets = tuple(secrets)
        self._lock = threading.Lock()
        self._loaded = False
        self._effective: CassetteMode = mode
        self._from_environment = False
        self._replaying = False
        self._unplayed: dict[str, deque[Exchange]] = {}
        self._known: list[Exchange] = []
        self._notes: dict[str, deque[Note]] = {}
        self._writing = False
        self.replayed = 0
        self.recorded = 0

    def __repr__(self) -> str:
        return f"Cassette({str(self.path)!r}, mode={self.mode!r}, timing={self.timing!r})"

    # -- state ------------------------------------------------------------------------------------------
    @property
    def effective_mode(self) -> CassetteMode:
        """The mode in force: ``PI_NOTEBOOK_CASSETTE_MODE`` when set, else ``mode`` (read on first use)."""
        self.load()
        return self._effective

    @property
    def offline(self) -> bool:
        """True when every request is answered from the file or refused: nothing will be recorded."""
        self.load()
        return self._effective == "none" or (self._effective == "once" and self._replaying)

    @property
    def unplayed(self) -> int:
        """Recorded exchanges not replayed yet."""
        return sum(len(queue) for queue in self._unplayed.values())

    def describe(self) -> str:
        """One line: path, mode, what it does, counts (what ``%pi cassette`` prints)."""
        self.load()
        doing = "recording"
        if self._replaying:
            doing = "replaying, recording new requests" if self._effective == "new" else "replaying"
        return (
            f"cassette {self.path}: {self._mode_text()}, {doing}, timing {self.timing}; "
            f"{self.replayed} replayed, {self.recorded} recorded, {self.unplayed} not replayed yet"
        )

    def load(self) -> Cassette:
        """Read the file and fix the mode now (done on first use anyway); raises :class:`CassetteError`."""
        with self._lock:
            if not self._loaded:
                self._load()
                self._loaded = True
        return self

    # -- activation -------------------------------------------------------------------------------------
    def __enter__(self) -> Cassette:
        self.load()
        activate(self)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        deactivate()

    async def __aenter__(self) -> Cassette:
        return self.__enter__()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.__exit__(kind, error, traceback)

    # -- the transport's side ---------------------------------------------------------------------------
    async def handle(self, request: httpx.Request, transport: httpx.AsyncBaseTransport) -> httpx.Response:
        """Replay the next recorded answer to ``request``, or record it through ``transport``, or raise
        :class:`CassetteError` when this cassette may do neither."""
        self.load()
        await request.aread()
        redactor = self._redactor()
        tape = tape_request(request, redactor.with_header_secrets(request.headers.multi_items()))
        key = self._key(tape)
        with self._lock:
            queue = self._unplayed.get(key)
            exchange = queue.popleft() if queue else None
            self.replayed += exchange is not None
        if exchange is not None:
            return await replay(exchange, request, self.timing)
        if self.offline:
            message = self._unmatched(tape, key)
            _report_miss(self.path, message)
            raise CassetteError(message)
        return await record(request, transport, redactor, self._write_exchange)

    def recall(self, kind: str, key: dict[str, Any]) -> dict[str, Any] | None:
        """The next recorded note of ``kind`` for ``key`` (each answers once, in recorded order), else ``None``."""
        self.load()
        with self._lock:
            queue = self._notes.get(_note_key(kind, key))
            return queue.popleft().value if queue else None

    def report_miss(self, message: str) -> None:
        """Report that a host found nothing recorded for something this cassette should answer (an MCP call's note),
        as an unmatched request is reported (``PI_NOTEBOOK_CASSETTE_MISSES``, read by ``pytest --pi-replay``)."""
        _report_miss(self.path, message)

    def remember(self, kind: str, key: dict[str, Any], value: dict[str, Any]) -> None:
        """Write a note (JSON objects ``key`` and ``value``) while this cassette records; nothing when it only
        replays. Notes hold what the host gives them: keep secrets out of them."""
        if not self.offline:
            self._write(Note(kind, key, value).to_line())

    # -- internals --------------------------------------------------------------------------------------
    def _load(self) -> None:
        override = os.environ.get(CASSETTE_MODE_VARIABLE, "").strip()
        if override and override not in _MODES:
            raise CassetteError(f"{CASSETTE_MODE_VARIABLE}={override!r} is not a cassette mode ({', '.join(_MODES)})")
        self._from_environment = bool(override)
        self._effective = override or self.mode  # type: ignore[assignment]  # checked just above
        if self.path.exists() and not self.path.is_file():
            raise CassetteError(f"cassette {self.path} is not a file")
        exists = self.path.is_file()
        if self._effective == "none" and not exists:
            raise CassetteError(f"cassette {self.path} does not exist ({self._mode_text()} only replays)")
        if self._effective == "all" or not exists:
            return
        try:
            with self.path.open(encoding="utf-8") as file:
                lines = list(parse_lines(file))
        except (OSError, UnicodeDecodeError, FormatError) as exc:
            raise CassetteError(f"cannot read cassette {self.path}: {exc}") from None
        self._replaying = True
        for line in lines:
            if isinstance(line, Note):
                self._notes.setdefault(_note_key(line.kind, line.key), deque()).append(line)
            else:
                self._known.append(line)
                self._unplayed.setdefault(self._key(line.request), deque()).append(line)

    def _key(self, request: TapeRequest) -> str:
        body = without_fields(request.body, self._ignored) if request.is_json else request.body
        return match_key(request.method, request.url, body)

    def _redactor(self) -> Redactor:
        return Redactor([*secret_variables().values(), *HELD_SECRETS.values(), *self._secrets])

    def _write(self, line: str) -> None:
        with self._lock:
            fresh = not self._writing and (self._effective == "all" or not self.path.is_file())
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("w" if fresh else "a", encoding="utf-8") as file:
                if fresh:
                    file.write(header_line() + "\n")
                file.write(line + "\n")
            self._writing = True

    def _write_exchange(self, exchange: Exchange) -> None:
        self._write(exchange.to_line())
        with self._lock:
            self.recorded += 1

    def _mode_text(self) -> str:
        return f"mode {self._effective}" + (f" from {CASSETTE_MODE_VARIABLE}" if self._from_environment else "")

    def _unmatched(self, tape: TapeRequest, key: str) -> str:
        return (
            f"cassette {self.path} ({self._mode_text()}) has no recorded response for {tape.method} {tape.url}: "
            f"{self._why_unmatched(tape, key)}; record it again with mode new or all"
        )

    def _why_unmatched(self, tape: TapeRequest, key: str) -> str:
        same = [e for e in self._known if self._key(e.request) == key]
        if same:
            return f"its {len(same)} recorded response(s) were all replayed already (each answers once, in order)"
        here = [
            (number, e)
            for number, e in enumerate(self._known, 1)
            if (e.request.method, e.request.url) == (tape.method, tape.url)
        ]
        if not here:
            return f"nothing was recorded for this URL ({len(self._known)} exchange(s) in the file)"
        recorded_json = [(number, e) for number, e in here if e.request.is_json]
        if not tape.is_json or not recorded_json:
            return f"the body differs from the {len(here)} recorded at this URL"
        number, difference = self._closest(tape, recorded_json)
        return (
            f"the closest recorded request (exchange {number} in the file, of {len(here)} at this URL) differs first "
            f"at {difference} (recorded != sent)"
        )

    def _closest(self, tape: TapeRequest, candidates: list[tuple[int, Exchange]]) -> tuple[int, Difference | None]:
        """Of ``candidates`` (number in the file, exchange), the one whose body agrees with ``tape``'s longest
        (as sorted JSON; those not replayed yet first, then the earliest), and where the two first differ."""
        sent = without_fields(tape.body, self._ignored)
        sent_text = _canonical(sent)
        unplayed = {id(e) for queue in self._unplayed.values() for e in queue}

        def rank(candidate: tuple[int, Exchange]) -> tuple[bool, int, int]:
            number, exchange = candidate
            body = _canonical(without_fields(exchange.request.body, self._ignored))
            return id(exchange) in unplayed, _common_prefix(body, sent_text), -number

        number, exchange = max(candidates, key=rank)
        return number, first_difference(without_fields(exchange.request.body, self._ignored), sent)


def _canonical(body: Any) -> str:
    return json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _common_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _note_key(kind: str, key: dict[str, Any]) -> str:
    return json.dumps([kind, key], sort_keys=True, ensure_ascii=False)


def _report_miss(path: Path, message: str) -> None:
    """Append ``message`` to the file named by :data:`MISSES_VARIABLE`, if any (never fails the request more)."""
    target = os.environ.get(MISSES_VARIABLE)
    if not target:
        return
    try:
        with open(target, "a", encoding="utf-8") as file:
            file.write(json.dumps({"cassette": str(path), "message": message}, ensure_ascii=False) + "\n")
    except OSError:
        pass  # a diagnostic for the test run; the run has its error message anyway
