"""Check the notebooks under nbval twice at once, from two copies of this checkout, and that no cell writes into the
notebooks folder.

    flock /tmp/pi-heavy.lock python notebooks/nbval_twice.py                   # every notebook, two copies
    flock /tmp/pi-heavy.lock python notebooks/nbval_twice.py 03-cancel-and-errors.ipynb
    flock /tmp/pi-heavy.lock python notebooks/nbval_twice.py --one-checkout    # both runs in this checkout

Each copy holds the files git knows of (tracked, and new ones not ignored) as they are in the working tree, so
uncommitted edits are checked too; each run imports ``pi_notebook`` from its own copy (``PYTHONPATH``). The two
``python -m pytest --nbval --pi-replay`` runs (the project's default options) start together, so whatever the
notebooks share outside their folder (ports, temporary files, caches) is shared by two runs at once, as on a CI
machine running two jobs. While they run, the notebooks folder of each copy is watched (inotify, Linux): a file
created, written or moved there fails the check even if a later cell removes it. ``--one-checkout`` runs both in
this checkout instead, one folder for both: what two nbval runs of one checkout at once do. Exit status 0 when both
runs pass and nothing was written into a notebooks folder; the output says which run failed and what was written.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# inotify event bits: a file written and closed, moved in, created, changed, opened for writing
WRITTEN = 0x8 | 0x80 | 0x100 | 0x2
IGNORED_NAMES = ("__pycache__",)


class FolderWatch:
    """The names of files created, written or moved into ``folders`` while the watch is open (Linux inotify).
    Elsewhere it compares the folders' files (name, size, mtime) before and after, which misses a file a later cell
    removed."""

    def __init__(self, folders: list[Path]) -> None:
        self.folders = folders
        self._libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True) if sys.platform == "linux" else None
        self._fd = -1
        self._watches: dict[int, Path] = {}
        self._before = self._snapshot()
        if self._libc is not None:
            self._fd = self._libc.inotify_init1(os.O_NONBLOCK)
            for folder in folders:
                wd = self._libc.inotify_add_watch(self._fd, str(folder).encode(), WRITTEN)
                if wd < 0:
                    raise OSError(ctypes.get_errno(), f"cannot watch {folder}")
                self._watches[wd] = folder

    def _snapshot(self) -> dict[Path, tuple[int, int]]:
        return {
            path: (path.stat().st_size, path.stat().st_mtime_ns)
            for folder in self.folders
            for path in folder.iterdir()
            if path.is_file()
        }

    def written(self) -> list[str]:
        """What was written since the watch began (paths relative to the checkout), in order, each once."""
        found: list[Path] = []
        if self._fd >= 0:
            found += self._read_events()
        else:
            after = self._snapshot()
            found += [path for path, stamp in after.items() if self._before.get(path) != stamp]
        names = [str(path) for path in found if not any(part in IGNORED_NAMES for part in path.parts)]
        return list(dict.fromkeys(names))

    def _read_events(self) -> list[Path]:
        found: list[Path] = []
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return found
            offset = 0
            while offset < len(data):
                wd, _, _, length = struct.unpack_from("iIII", data, offset)
                name = data[offset + 16 : offset + 16 + length].rstrip(b"\0").decode()
                offset += 16 + length
                folder = self._watches.get(wd)
                if folder is not None and name:
                    found.append(folder / name)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def copy_checkout(target: Path) -> None:
    """The files git knows of (tracked, and untracked ones not ignored), as they are in the working tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def start(checkout: Path, notebooks: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    command = [sys.executable, "-m", "pytest", *notebooks, "-p", "no:cacheprovider", "-q"]
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=checkout, env=env, stdout=out, stderr=subprocess.STDOUT)


def main(argv: list[str]) -> int:
    one_checkout = "--one-checkout" in argv
    names = [name for name in argv if name != "--one-checkout"]
    notebooks = [f"notebooks/{name}" for name in names] or ["notebooks"]
    with tempfile.TemporaryDirectory(prefix="nbval-twice-") as scratch:
        base = Path(scratch)
        checkouts = [ROOT, ROOT] if one_checkout else [base / "a", base / "b"]
        if not one_checkout:
            for checkout in checkouts:
                copy_checkout(checkout)
        watch = FolderWatch(sorted({path for c in checkouts for path in (c / "notebooks", c / "notebooks/cassettes")}))
        started = time.monotonic()
        logs = [base / "run-1.log", base / "run-2.log"]
        runs = [start(checkout, notebooks, log) for checkout, log in zip(checkouts, logs, strict=True)]
        codes = [run.wait() for run in runs]
        took = time.monotonic() - started
        written = watch.written()
        watch.close()
        where = "one checkout" if one_checkout else "two copies of the checkout"
        print(f"nbval twice at once, from {where}, {' '.join(notebooks)}: {took:.0f} s")
        for number, (code, log) in enumerate(zip(codes, logs, strict=True), 1):
            lines = log.read_text(errors="replace").splitlines()
            print(f"run {number}: {'passed' if code == 0 else f'FAILED (exit {code})'}: {lines[-1] if lines else ''}")
            if code != 0:
                print("\n".join(f"  | {line}" for line in lines[-40:]))
        for name in written:
            shown = name if one_checkout else Path(name).relative_to(base)
            print(f"written into a notebooks folder while they ran: {shown}")
        return 0 if not any(codes) and not written else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
