"""Execute teaching notebooks again and save their outputs, as they are committed.

    python notebooks/execute.py                      # every notebook here
    python notebooks/execute.py 00-quickstart.ipynb  # some of them

Each notebook runs in a fresh kernel with nbclient, in this folder, with ``PI_NOTEBOOK_CASSETTE_MODE=none`` (so it
replays its cassette and never calls out), ``PI_NOTEBOOK_SESSIONS__DIR=none`` (no session files, no greeting) and
without widget state: a run's display keeps its widget view reference and its static copy (the transcript and event
log, text/html and text/markdown), but not the widget's model state, which would repeat every streamed operation in
the file. ``pytest --nbval --pi-replay notebooks/`` compares these outputs (the package's pytest plugin).
``cassettes/record_04.py`` records notebook 04's cassette again and saves its outputs the same way.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent


def execute(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook, timeout=300, store_widget_state=False, resources={"metadata": {"path": str(HERE)}}
    )
    client.execute()
    nbformat.write(notebook, path)
    print(f"executed {path.name}")


def main(names: list[str]) -> None:
    os.environ["PI_NOTEBOOK_CASSETTE_MODE"] = "none"
    os.environ["PI_NOTEBOOK_SESSIONS__DIR"] = "none"  # no saved sessions, no "last session" greeting
    os.environ["PI_PAID_EXAMPLES"] = "0"  # the quickstart's real-model cells make no paid calls
    paths = [HERE / name for name in names] if names else sorted(HERE.glob("*.ipynb"))
    for path in paths:
        execute(path)


if __name__ == "__main__":
    main(sys.argv[1:])
