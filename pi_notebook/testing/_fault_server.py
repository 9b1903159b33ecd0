"""A real HTTP server on 127.0.0.1 that streams scripted replies and injects scripted faults.

Providers are tested against it over loopback, and so are the teaching notebooks. It speaks four wire formats,
chosen by request path (written by ``formats/``, one module per format):

* OpenAI-compatible chat completions, ``POST …/chat/completions``: ``data: {chat.completion.chunk}`` lines, a
  usage chunk when ``stream_options.include_usage`` is set, then ``data: [DONE]``; errors
  ``{"error": {"message", "type", "param", "code"}}``.
* Anthropic Messages, ``POST …/messages``: ``event: <type>`` + ``data: <json>`` pairs from ``message_start`` to
  ``message_stop`` with a ``ping``; errors ``{"type": "error", "error": {"type", "message"}}``.
* OpenAI Responses, ``POST …/responses``: ``response.created`` … ``response.output_item.done`` per item (reasoning
  summaries, messages, function calls) … ``response.completed`` (``response.incomplete`` for a length stop);
  errors as chat completions'.
* Google Generative AI, ``POST …/models/<model>:streamGenerateContent`` (``google_base_url``): ``data:`` chunks of
  candidates' parts, the last with ``finishReason`` and ``usageMetadata``; errors ``{"error": {"code",
  "message", "status"}}`` with Google's status names.

Script it like the faux provider: ``server.script([...])`` queues entries, each request takes the next one (FIFO),
an exhausted script answers 500 "fault server: no scripted reply". An entry is a :class:`Reply` (a stream, maybe
with a :class:`StreamFault` part-way), a :class:`StatusFault` (an HTTP error with a body in the request's format),
a :class:`RawResponse` (any status and body as given: a JSON completion with 200, an HTML page, a redirect, an
empty stream), or a :class:`StreamFault` on its own (``reset`` and ``stall`` then act before any response
header). ``serve_models(listing)`` answers ``GET …/models``::

    with FaultServer() as server:
        server.script([Fault.rate_limit(headers={"retry-after-ms": "50"}), Reply.text("hello world")])
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="sk-test", max_retries=0)
        ...
        server.wait_for_requests(2)

Design: stdlib only. ``http.server.BaseHTTPRequestHandler`` (``HTTP/1.1``, keep-alive) parses requests, so this
module holds no HTTP parser; each connection gets its own thread, so a scripted reply is plain sequential code
(write an event, pause, write the next). We run our own accept loop rather than ``ThreadingHTTPServer`` so that
:meth:`FaultServer.close` is immediate (no ``serve_forever`` poll interval) and knows every socket: it shuts down
each open connection, which wakes any thread blocked reading, writing, pausing or stalled, then joins every thread
it started and raises if one is still alive or a handler failed. Streams use chunked transfer encoding, one chunk
per event written straight to the socket (no buffering, Nagle off), so clients see each event as it is sent.
Pauses (``delay_s``, stalls) watch the socket, so a client that leaves ends them at once. (asyncio streams in a
thread would also do, but need a hand-written HTTP parser and a second event loop to reason about; a test server
handles a few connections at a time, so a thread each costs nothing.)

``server.requests`` records every request (API keys apart, in ``api_key``; see :class:`RecordedRequest`);
``wait_for_requests`` / ``wait_until`` and their ``_async`` twins wait on that state, never on time.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import selectors
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, NoReturn, cast

__all__ = ["FaultServer", "RecordedRequest"]

from ._fault_script import Api, RawResponse, Reply, ScriptEntry, StatusFault, StreamFault
from .formats import ErrorSpec, WireFormat, route

_JOIN_TIMEOUT_S = 5.0
_AUTH_HEADERS = ("authorization", "x-api-key", "api-key", "x-goog-api-key")
_REDACTED = "[redacted]"


# ------------------------------------------------------------------------------------------- recorded requests


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it.

    ``headers`` have lower-cased names, and the values of ``authorization``, ``x-api-key`` and ``api-key`` are
    replaced by ``[redacted]``: the key itself is only in ``api_key`` (kept out of the repr). ``leaks(secret)``
    tells where else a secret appears. ``answer`` is the script entry that answered (None: unscripted or no route).
    """

    method: str
    path: str
    query: str
    headers: Mapping[str, str]
    body: bytes = field(repr=False)
    json: Any = field(repr=False)
    received_at: float  # time.monotonic()
    api: Api | None
    answer: ScriptEntry | None
    api_key: str | None = field(repr=False)

    def leaks(self, secret: str | None = None) -> list[str]:
        """Where ``secret`` (default: this request's ``api_key``) appears outside its auth header, e.g. ``["body"]``."""
        secret = secret or self.api_key
        if not secret:
            return []
        places = [name for name, text in (("path", self.path), ("query", self.query)) if secret in text]
        places += [f"header {name}" for name, value in self.headers.items() if secret in value]
        if secret.encode() in self.body:
            places.append("body")
        return places


def _split_auth(headers: Iterable[tuple[str, str]]) -> tuple[dict[str, str], str | None]:
    clean: dict[str, str] = {}
    api_key = None
    for name, value in headers:
        name = name.lower()
        if name in _AUTH_HEADERS:
            scheme, _, token = value.partition(" ")
            bearer = name == "authorization" and scheme.lower() == "bearer"
            api_key = api_key or (token if bearer else value)
            value = f"{scheme} {_REDACTED}" if bearer else _REDACTED
        clean[name] = value
    return clean, api_key


# ------------------------------------------------------------------------------------------------- the server


class _Dropped(Exception):
    """The connection is to be closed now: a fault said so, the client left, or the server is closing."""


class FaultServer:
    """The server; it listens from construction until :meth:`close` (or the end of a ``with``/``async with``).

    Thread-safe: the script, the recorded requests and the connection count are guarded by one lock. ``port`` 0
    (the default) picks a free port; a fixed one gives recordings a stable URL (cassettes match on the URL).
    """

    def __init__(self, port: int = 0) -> None:
        self._lock = threading.RLock()  # re-entrant: wait_until runs conditions that read locked properties
        self._changed = threading.Condition(self._lock)
        self._script: deque[ScriptEntry] = deque()
        self._requests: list[RecordedRequest] = []
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._async_waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._errors: list[BaseException] = []
        self._replies = 0
        self._models: Any = None
        self._accepted = 0
        self._closed = False
        self._closing = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", port))
        self._listener.setblocking(False)
        self._wake_reader, self._wake_writer = socket.socketpair()
        self.port: int = self._listener.getsockname()[1]
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name=f"fault-server-{self.port}-accept", daemon=True
        )
        self._accept_thread.start()

    # --- addresses

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.base_url

    @property
    def google_base_url(self) -> str:
        """Gemini's API root, as in ``https://generativelanguage.googleapis.com/v1beta``."""
        return f"{self.base_url}/v1beta"

    @staticmethod
    def refused_url() -> str:
        """A base URL on 127.0.0.1 whose port refuses connections (just released; nothing listens there)."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        return f"http://127.0.0.1:{port}"

    # --- script and state

    def script(self, entries: Iterable[ScriptEntry]) -> None:
        """Queue entries (after any still pending); each routed request takes the next one."""
        entries = list(entries)
        for entry in entries:
            if not isinstance(entry, Reply | StatusFault | StreamFault | RawResponse):
                raise TypeError(f"a script entry is a Reply, StatusFault, StreamFault or RawResponse, not {entry!r}")
            if isinstance(entry, StreamFault) and entry.kind in ("reset", "stall") and entry.after_events:
                raise ValueError(f"Fault.{entry.kind}() on its own acts before the headers: put it in a Reply")
        with self._lock:
            self._script.extend(entries)

    def serve_models(self, listing: Mapping[str, Any] | None) -> None:
        """Answer ``GET …/models`` with ``listing`` as JSON (``None``: 404, the default), as OpenAI-compatible
        servers list their models: ``{"object": "list", "data": [{"id": …, …}]}``."""
        with self._lock:
            self._models = None if listing is None else dict(listing)

    @property
    def pending(self) -> int:
        """Script entries not yet taken."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of the requests received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def open_connections(self) -> int:
        """Client connections the server still holds open (a pooled keep-alive connection counts)."""
        with self._lock:
            return len(self._connections)

    @property
    def connections_accepted(self) -> int:
        with self._lock:
            return self._accepted

    # --- waiting (on state, never on time)

    def wait_until(self, condition: Callable[[FaultServer], bool], *, timeout: float = 5.0) -> None:
        """Block until ``condition(server)`` holds, e.g. ``lambda s: s.open_connections == 0``.

        Raises TimeoutError after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition(self):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"fault server: condition not met within {timeout}s ({self._describe()})")
                self._changed.wait(remaining)

    async def wait_until_async(
        self,
        condition: Callable[[FaultServer], bool],
        *,
        timeout: float = 5.0,  # noqa: ASYNC109 - a test helper must not hang when its caller forgets a deadline
    ) -> None:
        """:meth:`wait_until` for the event loop: never blocks it; cancellable."""
        waiter = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._async_waiters.add(waiter)
        try:
            async with asyncio.timeout(timeout):
                while not condition(self):
                    await waiter[1].wait()
                    waiter[1].clear()
        except TimeoutError:
            raise TimeoutError(f"fault server: condition not met within {timeout}s ({self._describe()})") from None
        finally:
            with self._lock:
                self._async_waiters.discard(waiter)

    def wait_for_requests(self, count: int, *, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until ``count`` requests have arrived; return them all."""
        self.wait_until(lambda server: len(server.requests) >= count, timeout=timeout)
        return self.requests

    async def wait_for_requests_async(
        self,
        count: int,
        *,
        timeout: float = 5.0,  # noqa: ASYNC109 - as above
    ) -> list[RecordedRequest]:
        await self.wait_until_async(lambda server: len(server.requests) >= count, timeout=timeout)
        return self.requests

    def _describe(self) -> str:
        return f"{len(self._requests)} requests, {len(self._connections)} open connections"

    def _notify(self) -> None:
        """Wake every waiter; call with the lock held."""
        self._changed.notify_all()
        for loop, event in self._async_waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed; its waiter is gone
                loop.call_soon_threadsafe(event.set)

    # --- lifecycle

    def close(self) -> None:
        """Stop: refuse new connections, end every open one, join every thread. Idempotent; quick.

        Raises RuntimeError if a thread did not stop or a request handler failed (a bug here, not a fault).
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._closing.set()
            for conn in self._connections:
                _shutdown(conn)
        self._wake_writer.send(b"x")
        self._accept_thread.join(_JOIN_TIMEOUT_S)
        with self._lock:
            threads = list(self._connections.values())
        for thread in threads:
            thread.join(_JOIN_TIMEOUT_S)
        for sock in (self._listener, self._wake_reader, self._wake_writer):
            sock.close()
        alive = [t.name for t in (self._accept_thread, *threads) if t.is_alive()]
        if alive:
            raise RuntimeError(f"fault server: threads did not stop: {alive}")
        if self._errors:
            raise RuntimeError("fault server: a request handler failed") from self._errors[0]

    def __enter__(self) -> FaultServer:
        if self._closed:
            raise RuntimeError("fault server: already closed")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> FaultServer:
        return self.__enter__()

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()  # joins threads that are already woken: milliseconds, so the loop is not held up

    def __repr__(self) -> str:
        with self._lock:
            state = "closed" if self._closed else self._describe() + f", {len(self._script)} pending"
        return f"<FaultServer {self.base_url} {state}>"

    # --- connections (server threads)

    def _accept_loop(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            selector.register(self._wake_reader, selectors.EVENT_READ)
            while not self._closing.is_set():
                for key, _ in selector.select():
                    if key.fileobj is self._listener:
                        self._accept()

    def _accept(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except (BlockingIOError, ConnectionAbortedError):
            return  # the client gave up before we accepted
        except OSError as error:  # e.g. out of file descriptors: reported by close()
            self._errors.append(error)
            return
        conn.setblocking(True)
        with self._lock:
            if self._closed:
                conn.close()
                return
            self._accepted += 1
            thread = threading.Thread(
                target=self._serve, args=(conn,), name=f"fault-server-{self.port}-conn-{self._accepted}", daemon=True
            )
            self._connections[conn] = thread
            self._notify()
        thread.start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            _Handler(conn, self)
        except (_Dropped, OSError):
            pass  # a fault, a client that left, or close(): the connection just ends
        except Exception as error:
            self._errors.append(error)
        finally:
            with self._lock:
                del self._connections[conn]
                conn.close()
                self._notify()

    def _take(self, request: RecordedRequest) -> tuple[ScriptEntry | None, int]:
        """Record ``request`` and take its script entry (unrouted requests take none), atomically.

        Also returns the number of this reply (1, 2, …), used in message and tool-call ids.
        """
        with self._lock:
            routed = request.api is not None and request.method == "POST"
            entry = self._script.popleft() if routed and self._script else None
            self._replies += isinstance(entry, Reply)
            self._requests.append(dataclasses.replace(request, answer=entry))
            self._notify()
            return entry, self._replies

    def _pause(self, conn: socket.socket, seconds: float | None) -> None:
        """Wait ``seconds`` (None: until the end). Raise _Dropped at once if the client leaves or we close."""
        deadline = None if seconds is None else time.monotonic() + seconds
        with selectors.DefaultSelector() as selector:
            selector.register(conn, selectors.EVENT_READ)
            remaining = seconds
            while remaining is None or remaining > 0:
                if selector.select(remaining):
                    try:
                        gone = not conn.recv(1, socket.MSG_PEEK)
                    except OSError:
                        gone = True
                    if gone or self._closing.is_set():
                        raise _Dropped
                    # The client sent bytes early; stop watching the socket and wait on close() only.
                    if self._closing.wait(None if deadline is None else max(0.0, deadline - time.monotonic())):
                        raise _Dropped
                    return
                remaining = None if deadline is None else deadline - time.monotonic()


def _route_name(path: str) -> Api | None:
    wire = route(path)
    return wire.name if wire is not None else None


def _path_model(path: str) -> str | None:
    """Gemini names the model in the path: ``…/models/<model>:streamGenerateContent``."""
    if "/models/" not in path:
        return None
    return path.rsplit("/models/", 1)[1].partition(":")[0] or None


def _shutdown(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by its own thread
        conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    """One connection: parses requests (stdlib) and answers each from the script."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def __init__(self, conn: socket.socket, server: FaultServer) -> None:
        self.fault_server = server
        super().__init__(conn, ("127.0.0.1", 0), cast(Any, server))  # handles requests until the connection ends

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: tests and notebooks read recorded requests instead

    def _answer(self) -> None:
        """Answer one request: record it, take its script entry, act it out."""
        request = self._read_request()
        entry, number = self.fault_server._take(request)
        wire = route(request.path)
        with self.fault_server._lock:
            models = self.fault_server._models
        if request.method == "GET" and request.path.endswith("/models") and models is not None:
            self._send_json(200, models)
        elif wire is None or request.method != "POST":
            where = f"{request.method} {request.path}"
            message = (
                f"fault server: no route for {where} (POST …/chat/completions, …/v1/messages, …/responses or "
                "…/models/<model>:streamGenerateContent)"
            )
            self._send_json(404, {"error": {"message": message, "type": "not_found_error"}})
        elif entry is None:
            self._send_json(500, wire.error_body(ErrorSpec(500, "api_error", "fault server: no scripted reply")))
        elif isinstance(entry, StatusFault):
            self._send_status_fault(wire, entry)
        elif isinstance(entry, RawResponse):
            self._send_raw(entry)
        elif isinstance(entry, StreamFault):
            if entry.kind in ("reset", "stall"):
                self._fire(wire, entry)
            self._stream(wire, [], entry, 0.0)
        elif not wire.asks_for_stream(request.path, request.json):
            message = (
                'fault server: a scripted Reply needs a JSON body with "stream": true (Gemini: …:streamGenerateContent)'
            )
            self._send_json(400, wire.error_body(ErrorSpec(400, "invalid_request_error", message)))
        else:
            body = request.json
            model = str(body.get("model") or _path_model(request.path) or "fault-model")
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            events = entry.wire_events(wire.name, model=model, include_usage=include_usage, number=number)
            self._stream(wire, events, entry.fault, entry.delay_s)

    do_POST = _answer
    do_GET = do_PUT = do_PATCH = do_DELETE = _answer  # recorded, answered 404

    def _read_request(self) -> RecordedRequest:
        received_at = time.monotonic()
        length = self.headers.get("content-length") or "0"
        if "chunked" in self.headers.get("transfer-encoding", "").lower() or not length.isdigit():
            self._send_json(411, {"error": {"message": "fault server: send a valid content-length (no chunked body)"}})
            self._drop()
        body = self.rfile.read(int(length))
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        headers, api_key = _split_auth(self.headers.items())
        path, _, query = self.path.partition("?")
        return RecordedRequest(
            self.command, path, query, headers, body, parsed, received_at, _route_name(path), None, api_key
        )

    def _send_head(self, status: int, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def _send_json(self, status: int, payload: Any, extra: Mapping[str, str] | None = None) -> None:
        self._send_body(status, json.dumps(payload).encode(), "application/json", extra or {})

    def _send_body(self, status: int, body: bytes, content_type: str, extra: Mapping[str, str]) -> None:
        headers = {"content-type": content_type, "content-length": str(len(body))}
        self._send_head(status, headers | {k.lower(): v for k, v in extra.items()})
        self.wfile.write(body)

    def _send_status_fault(self, wire: WireFormat, fault: StatusFault) -> None:
        spec = fault.spec_for(wire.name)
        if fault.body is None:
            self._send_json(spec.status, wire.error_body(spec), fault.headers)
        elif isinstance(fault.body, Mapping):
            self._send_json(spec.status, dict(fault.body), fault.headers)
        else:
            raw = fault.body.encode() if isinstance(fault.body, str) else fault.body
            self._send_body(spec.status, raw, "text/plain; charset=utf-8", fault.headers)

    def _send_raw(self, raw: RawResponse) -> None:
        body = raw.body_bytes
        if not raw.chunked:
            self._send_body(raw.status, body, raw.content_type, raw.headers)
            return
        headers = {"content-type": raw.content_type, "transfer-encoding": "chunked"}
        self._send_head(raw.status, headers | {k.lower(): v for k, v in raw.headers.items()})
        if body:
            self._write_chunk(body)
        self._write_chunk(b"")

    def _stream(self, wire: WireFormat, events: list[bytes], fault: StreamFault | None, delay_s: float) -> None:
        stream_headers = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}
        self._send_head(200, stream_headers | {"transfer-encoding": "chunked"})
        for index, event in enumerate(events):
            if fault is not None and index == fault.after_events:
                break
            if delay_s:
                self.fault_server._pause(self.connection, delay_s)
            self._write_chunk(event)
        if fault is not None:
            self._fire(wire, fault)
        self._write_chunk(b"")  # the last chunk: the body ends cleanly

    def _fire(self, wire: WireFormat, fault: StreamFault) -> None:
        """Act out a stream fault; returns only when the body should then end cleanly."""
        if fault.kind == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self._drop()
        if fault.kind == "disconnect":
            self._drop()
        if fault.kind == "stall":
            self.fault_server._pause(self.connection, None)
            self._drop()
        while fault.kind == "drip":  # ends when the client leaves (_pause raises _Dropped)
            self.fault_server._pause(self.connection, fault.interval_s)
            self._write_chunk(b":\n")
        if fault.kind == "malformed":
            self._write_chunk(fault.payload or wire.malformed)
        elif fault.kind == "sse_error":
            self._write_chunk(wire.sse_error(fault.error_type, fault.message))

    def _drop(self) -> NoReturn:
        self.close_connection = True
        raise _Dropped

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
