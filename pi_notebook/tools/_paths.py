"""Paths as Pi's tools take them (``path-utils.ts``, ``utils/paths.ts``), and file-system errors in Node's words.

A path given to a tool is normalised before it is resolved against the tool's working directory:

- Unicode spaces (NBSP, U+2000–U+200A, U+202F, U+205F, U+3000) become plain spaces;
- a leading ``@`` is dropped (models copy ``@file`` mentions);
- ``~`` and ``~/...`` expand to the home directory (``$HOME``);
- ``file://`` URLs become paths.

``read`` also tries the macOS variants of a missing path: a narrow no-break space before ``AM.``/``PM.``
(screenshot names), the NFD form of the name, and a right single quote for ``'``.
"""

from __future__ import annotations

import errno as errnos
import os
import re
import unicodedata
from urllib.parse import unquote, urlsplit

from ._common import FileToolError

__all__ = ["display_name", "expand_path", "node_error", "resolve_read_path", "resolve_to_cwd"]

_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_AM_PM = re.compile(r" (AM|PM)\.", re.IGNORECASE)

# libuv's descriptions, which Node puts in its error messages ("ENOENT: no such file or directory, open '...'").
_UV_TEXT = {
    "EACCES": "permission denied",
    "EBUSY": "resource busy or locked",
    "EEXIST": "file already exists",
    "EINVAL": "invalid argument",
    "EIO": "i/o error",
    "EISDIR": "illegal operation on a directory",
    "ELOOP": "too many symbolic links encountered",
    "EMFILE": "too many open files",
    "ENAMETOOLONG": "name too long",
    "ENFILE": "file table overflow",
    "ENOENT": "no such file or directory",
    "ENOSPC": "no space left on device",
    "ENOTDIR": "not a directory",
    "ENOTEMPTY": "directory not empty",
    "EPERM": "operation not permitted",
    "EROFS": "read-only file system",
    "ETXTBSY": "text file is busy",
    "EXDEV": "cross-device link not permitted",
    "EDQUOT": "disk quota exceeded",
    "EFBIG": "file too large",
}


def node_error(exc: OSError, syscall: str, path: str | None = None) -> FileToolError:
    """``exc`` as Node words it: ``ENOENT: no such file or directory, access '/abs/path'``."""
    code = errnos.errorcode.get(exc.errno or 0, "EIO")
    text = _UV_TEXT.get(code) or (exc.strerror or code).lower()
    where = f"{syscall} '{path}'" if path is not None else syscall
    return FileToolError(f"{code}: {text}, {where}", code)


def display_name(name: str) -> str:
    """A file name for output: bytes that are not UTF-8 (held by Python as surrogate escapes, which JSON and
    session files cannot carry) become U+FFFD, as in Node, which decodes the names rg, fd and readdir give it."""
    if name.isascii() or not any("\udc80" <= ch <= "\udcff" for ch in name):
        return name
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _home() -> str:
    return os.path.expanduser("~")


def _file_url_to_path(url: str) -> str:
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise FileToolError('File URL host must be "localhost" or empty on linux', "ERR_INVALID_FILE_URL_HOST")
    if re.search("%2f", parts.path, re.IGNORECASE):
        raise FileToolError("File URL path must not include encoded / characters", "ERR_INVALID_FILE_URL_PATH")
    return unquote(parts.path)


def expand_path(path: str) -> str:
    """Pi's ``expandPath``: Unicode spaces, ``@`` prefix, ``~`` and ``file://`` (see the module docstring)."""
    text = _UNICODE_SPACES.sub(" ", path)
    if text.startswith("@"):
        text = text[1:]
    if text == "~":
        return _home()
    if text.startswith("~/"):
        return os.path.normpath(os.path.join(_home(), text[2:]))
    if text.startswith("file://"):
        return _file_url_to_path(text)
    return text


def _normalise(path: str) -> str:
    resolved = os.path.normpath(path)
    return "/" + resolved.lstrip("/") if resolved.startswith("//") else resolved  # Node keeps a single slash


def resolve_to_cwd(path: str, cwd: str) -> str:
    """An absolute, normalised path: ``path`` expanded, then resolved against ``cwd`` unless absolute."""
    expanded = expand_path(path)
    if os.path.isabs(expanded):
        return _normalise(expanded)
    base = expand_path(cwd) if cwd.startswith("~") else cwd
    return _normalise(os.path.join(os.path.abspath(base), expanded))


def resolve_read_path(path: str, cwd: str) -> str:
    """``resolve_to_cwd``, or the first macOS variant of it that exists (see the module docstring)."""
    resolved = resolve_to_cwd(path, cwd)
    if os.path.exists(resolved):
        return resolved
    am_pm = _AM_PM.sub(lambda m: f"\u202f{m.group(1)}.", resolved)
    nfd = unicodedata.normalize("NFD", resolved)
    curly = resolved.replace("'", "\u2019")
    nfd_curly = nfd.replace("'", "\u2019")
    for variant in (am_pm, nfd, curly, nfd_curly):
        if variant != resolved and os.path.exists(variant):
            return variant
    return resolved
