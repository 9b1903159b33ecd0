"""Session files: JSONL in Pi's format, one line per entry, written and flushed as it happens.

Line 1 is the header ``{"type": "session", "version": 3, "id", "timestamp", "cwd"}`` (Pi's format version 3,
so Pi can open our files), plus the fields given as ``header=`` (the notebook writes ``notebook`` and ``name``;
Pi keeps fields it does not know). ``SessionStore.new(folder)`` names the file as Pi does; with ``lazy=True``
the file is created with its first entry, as Pi creates its own. Then one entry per line, each with ``id``,
``parentId`` (the leaf: the previous entry, until the session goes elsewhere in its tree) and an ISO ``timestamp``:

* ``{"type": "message", "message": {...}}`` for every user, assistant and tool-result message that reached
  ``message_end``, whatever its stop reason (aborted and error replies included);
* ``{"type": "compaction", "summary", "firstKeptEntryId", "tokensBefore", "details": {"readFiles",
  "modifiedFiles"}}`` after a compaction;
* ``{"type": "model_change", "provider", "modelId", ...}`` before the first message made with another model than
  the last recorded (Pi's entry; the rest of the record, base URL, context window and key variable, is ours: see
  ``ai/_model_record.py``), so a resumed session knows its model;
* ``{"type": "notebook_message", "message": {...}}`` for app-defined transcript entries (Pi skips them);
* ``{"type": "branch_summary", "fromId", "summary", "details", "usage", "fromHook"}`` when the session goes to
  another point of its tree with a summary of the branch it leaves (``_branch_summary``; its parent is the new
  leaf, so it is not a linear chain any more), and a ``custom`` leaf-move entry when it goes there without one
  (``_tree``).

The file is created ``0600`` and the folders the store creates for it ``0700`` (the user's only).

Each entry is one ``write`` of a whole line, so a process killed with SIGKILL leaves every entry written
before it; a torn last line (a kill in the middle of a write) is skipped on load, and a store that continues
the file ends that line first, so the next entry starts on a line of its own. Text is UTF-8; a lone
surrogate (half of a UTF-16 pair, e.g. from a provider's ``\\ud83d`` escape) is written as its JSON escape,
as JavaScript's ``JSON.stringify`` does, and reads back as the same string.

A write that fails (disk full, ``EFBIG`` from a file-size limit, an I/O error) never tears the file: the
part of the line already written is truncated away, and the entry stays in memory and is written, in order,
with the next one (or at ``close``). Each failure is reported to the store's subscribers as a
:class:`~pi_notebook.session.SessionWriteFailedEvent` (an :class:`AgentSession` emits it as a session event)
or, with no subscriber, logged as a warning; the run goes on.

One store writes a file at a time: it holds an advisory lock on the file while it has it open, and a store of
another process (a second kernel resuming the same session) is refused with ``SessionInUseError`` (``_lock``).

A file whose header has a newer format version than ours, or no header, is read by :func:`load_session` but
not continued: ``SessionStore(path)`` raises :class:`SessionFileError` (Pi 0.83 has no such check; it reads
and appends to any version). Reading, and what it tolerates, is described in ``_store_load.py``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ._events import SessionWriteFailedEvent
from ._journal import Journal, encode_entry, now_iso
from ._lock import lock_for_writing, release
from ._store_load import FORMAT_VERSION, LoadedSession, SessionFileError, load_session

__all__ = ["SessionStore"]

_log = logging.getLogger(__name__)
WriteFailureListener = Callable[[SessionWriteFailedEvent], object]


class SessionStore(Journal):
    """Appends session entries to a JSONL file. Open with ``SessionStore(path)`` (created if missing;
    an existing file is continued) or ``SessionStore.new(directory)`` for a fresh Pi-style file name.

    Raises :class:`SessionFileError` for an existing file it must not continue (not a session file, no
    header, a newer format version), ``OSError`` if the file cannot be opened or a new file's header cannot
    be written. Later write failures do not raise (see the module docstring): ``unwritten`` and
    ``write_error`` tell the state, ``subscribe`` reports each failure.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        fsync: bool = False,
        header: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        lazy: bool = False,
    ) -> None:
        self.path = Path(path)
        self._fsync = fsync
        self._pending: list[bytes] = []
        self._unterminated = False
        self._listeners: tuple[WriteFailureListener, ...] = ()
        self._fd = -1
        self._closed = False
        self._header: bytes | None = None  # a new file's header, until the file is created
        self.write_error: str | None = None
        """The last write failure's text; ``None`` once a write succeeds."""
        if self.path.exists() and self.path.stat().st_size > 0:
            self._open()  # the writer's lock first: a file another kernel appends to is refused before it is read
        try:
            loaded = _continuable(self.path)
        except BaseException:
            self._release()
            raise
        self.loaded: LoadedSession | None = loaded
        super().__init__(loaded.index if loaded is not None else None, loaded.model if loaded is not None else None)
        if loaded is not None:
            self.session_id = str(loaded.header.get("id", ""))
            self._unterminated = not _ends_with_newline(self.path)
        else:
            self.session_id = session_id or secrets.token_hex(8)
            fields = {"type": "session", "version": FORMAT_VERSION, "id": self.session_id, "timestamp": now_iso()}
            fields["cwd"] = os.getcwd()
            fields.update({key: value for key, value in (header or {}).items() if key not in fields})
            self._header = encode_entry(fields)
            if not lazy:
                try:
                    self._create()
                except OSError as error:
                    reason = f"cannot write to session file {self.path}: {_describe(error)}"
                    raise OSError(error.errno, reason) from None

    @classmethod
    def new(cls, directory: str | Path, **options: Any) -> SessionStore:
        """A store for a new file in ``directory``, named as Pi names its own: ``<ISO time>_<session id>.jsonl``
        (``2026-12-01T02-37-36-123Z_9f1c….jsonl``). ``lazy=True`` creates the file with its first entry (as
        Pi does), so a session that never records anything leaves no file."""
        session_id = options.pop("session_id", None) or secrets.token_hex(8)
        stamp = now_iso().replace(":", "-").replace(".", "-")
        return cls(Path(directory) / f"{stamp}_{session_id}.jsonl", session_id=session_id, **options)

    @property
    def created(self) -> bool:
        """The file exists (a ``lazy`` store creates it with its first entry)."""
        return self._header is None

    def _open(self) -> None:
        """Open the file to append (once), holding the writer's lock (``_lock``)."""
        if self._fd >= 0:
            return
        _private_folders(self.path.parent)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            lock_for_writing(fd, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _release(self) -> None:
        if self._fd >= 0:
            release(self._fd)  # and the lock with it
            self._fd = -1

    def _create(self) -> None:
        """Create the file and write its header. Raises ``OSError``, leaving it uncreated (a lazy store retries
        with its next entry)."""
        assert self._header is not None
        try:
            self._open()
            self._write_bytes(self._header)
        except OSError:
            self._release()
            raise
        self._header = None

    @property
    def unwritten(self) -> int:
        """Entries recorded in memory but not yet in the file (after a failed write)."""
        return len(self._pending)

    def subscribe(self, listener: WriteFailureListener) -> Callable[[], None]:
        """Call ``listener(event)`` on every failed write; returns an unsubscribe function."""
        self._listeners = (*self._listeners, listener)

        def unsubscribe() -> None:
            self._listeners = tuple(item for item in self._listeners if item is not listener)

        return unsubscribe

    def read_bytes(self) -> bytes:
        """The file's lines and those a failed write left in memory (the header first, also before a lazy file
        is created)."""
        data = self.path.read_bytes() if self.created else (self._header or b"")
        if self._pending and data and not data.endswith(b"\n"):
            data += b"\n"
        return data + b"".join(self._pending)

    def close(self) -> None:
        """Write what a failed write left in memory (a last try), then close. Entries that still cannot
        be written are reported (``final=True``) and logged: they are not in the file."""
        if self._closed:
            return
        if self._pending:
            self._flush(final=True)
        self._closed = True
        self._release()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _write(self, entry: dict[str, Any]) -> None:
        if self._closed:
            raise ValueError(f"session store {self.path} is closed")
        self._pending.append(encode_entry(entry))
        self._flush()

    def _flush(self, *, final: bool = False) -> None:
        """Write every pending entry in one ``write``; on failure keep them all pending and report."""
        try:
            if self._header is not None:
                self._create()
            self._write_bytes(b"".join(self._pending))
        except OSError as error:
            self._failed(_describe(error), final=final)
            return
        self._pending.clear()
        self.write_error = None
        if self._fsync:
            try:
                os.fsync(self._fd)
            except OSError as error:
                self._failed(f"fsync: {_describe(error)}", final=final)

    def _write_bytes(self, data: bytes) -> None:
        """Append ``data`` (whole lines); on failure remove what was written of it, then raise."""
        if self._unterminated:  # a torn or unterminated last line: end it so ``data`` starts a line
            data = b"\n" + data
        view, written = memoryview(data), 0
        try:
            while written < len(data):  # O_APPEND: one write per call, no buffering in this process
                written += os.write(self._fd, view[written:])
        except OSError:
            if written:
                self._unwrite(written)
            raise
        self._unterminated = False

    def _unwrite(self, count: int) -> None:
        try:
            os.ftruncate(self._fd, os.fstat(self._fd).st_size - count)
        except OSError:  # the partial line stays: the next write ends it first, and loading skips it
            self._unterminated = True

    def _failed(self, error: str, *, final: bool) -> None:
        self.write_error = error
        event = SessionWriteFailedEvent(str(self.path), error, len(self._pending), final=final)
        if final or not self._listeners:
            _log.warning("%s", event.reason)
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:  # a listener must not turn a reported failure into a failed run
                _log.exception("session store listener %r raised", listener)


MAX_CONTINUE_BYTES = 256 << 20
"""The largest file a store continues (``AgentSession.resume``, ``%pi resume``): a transcript is read whole, and
one this large is far past any model's context window. ``load_session`` still reads larger ones."""


def _continuable(path: Path) -> LoadedSession | None:
    """The existing session to continue (``None``: start a new file), or SessionFileError. A file too large, or
    whose first line is not a session header, is refused before it is read whole."""
    if not path.exists():
        return None
    size = path.stat().st_size
    if size == 0:
        return None
    if size > MAX_CONTINUE_BYTES:
        raise SessionFileError(
            f"{path} is {size / 1e6:.0f} MB, larger than a session is continued from ({MAX_CONTINUE_BYTES >> 20} MB):"
            " not continued; read it with load_session() or start a new file"
        )
    if not _starts_with_header(path, size):
        raise SessionFileError(
            f"{path} has no session header: not continued (Pi cannot open it either); read it with load_session()"
        )
    loaded = load_session(path)
    if not loaded.header and not loaded.all_ids and not loaded.problems:
        return None  # only blank lines
    if not loaded.header:
        raise SessionFileError(
            f"{path} has no session header: not continued (Pi cannot open it either); read it with load_session()"
        )
    if loaded.newer_version is not None:
        raise SessionFileError(
            f"{path} has session format version {loaded.newer_version!r}, newer than this pi_notebook's "
            f"({FORMAT_VERSION}): not continued; read it with load_session() or start a new file"
        )
    return loaded


def _starts_with_header(path: Path, size: int) -> bool:
    """Whether the first JSON line in the file's first MB is a session header. A small file that holds no
    complete JSON line there is left to ``load_session`` (blank lines, a torn first write)."""
    with open(path, "rb") as file:
        head = file.read(1 << 20)
    for line in head.split(b"\n")[: None if size <= len(head) else -1]:
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        return isinstance(entry, dict) and entry.get("type") == "session"
    return size <= len(head)


def _private_folders(folder: Path) -> None:
    """``mkdir -p folder``, each folder it creates readable by the user only (0700, like the files in it: a
    session holds prompts, replies and tool output). Folders that exist are left as they are."""
    missing: list[Path] = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile (another kernel)
            path.mkdir(mode=0o700)


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as file:
        file.seek(-1, os.SEEK_END)
        return file.read(1) == b"\n"


def _describe(error: OSError) -> str:
    name = errno.errorcode.get(error.errno or 0)
    text = error.strerror or str(error)
    return f"{text} ({name})" if name else text
