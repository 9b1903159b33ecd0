"""Record the cassette of ``notebooks/04-record-replay.ipynb`` again, then refresh the notebook's outputs.

    python notebooks/cassettes/record_04.py

The repository's fault server stands in for OpenAI at the address the notebook uses, so recording needs no real
key. Three steps:

1. delete the cassette, start the server with the answers below, and execute the notebook with a made-up key set:
   its ``%pi cassette`` (mode ``once``) finds no file and records;
2. stop the server, unset the key, and execute the notebook again: now it replays from the cassette alone. These
   outputs are saved: they are what ``pytest --nbval`` compares, and what CI reproduces with no server and no key;
3. check that the key is nowhere in the cassette.

The answers are in the order the notebook asks.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from pi_notebook.testing import Fault, FaultServer, Reply

HERE = Path(__file__).resolve().parent
NOTEBOOK = HERE.parent / "04-record-replay.ipynb"
CASSETTE = HERE / "04-record-replay.jsonl"
PORT = 38761  # the notebook's base_url; no 429/5xx digits in it, so an error naming it reads as no HTTP status
KEY = "sk-recording-04-not-a-real-key"

SCRIPT = [
    Reply.text(
        "A cassette is a file of recorded HTTP exchanges: each request a notebook sent to its model and every "
        "byte that came back, so the notebook can run again without the model.",
        chunk_chars=6,
        delay_s=0.03,
    ),
    Fault.rate_limit(headers={"retry-after-ms": "300"}),
    Reply.text(
        "The 429 and the wait it asked for are in the cassette too, so replay sends the request again after the "
        "same wait and then gets the answer.",
        chunk_chars=6,
        delay_s=0.01,
    ),
    Reply.text("Once upon a time, " * 40, chunk_chars=8, delay_s=0.05),  # stopped after its first delta
]


def execute() -> nbformat.NotebookNode:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        notebook, timeout=120, store_widget_state=False, resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()
    return notebook


def main() -> None:
    os.environ.pop("PI_NOTEBOOK_CASSETTE_MODE", None)
    CASSETTE.unlink(missing_ok=True)
    os.environ["OPENAI_API_KEY"] = KEY
    with FaultServer(port=PORT) as server:
        server.script(SCRIPT)
        execute()
        if server.pending or len(server.requests) != len(SCRIPT):
            raise SystemExit(f"the notebook made {len(server.requests)} requests; the script has {len(SCRIPT)}")
    del os.environ["OPENAI_API_KEY"]
    nbformat.write(execute(), NOTEBOOK)
    if KEY in CASSETTE.read_text():
        raise SystemExit("the recording key is in the cassette")
    print(f"recorded {CASSETTE.name} ({len(SCRIPT)} exchanges) and refreshed {NOTEBOOK.name}")


if __name__ == "__main__":
    main()
