"""The pytest plugin that checks executed ``%pi`` notebooks with nbval (registered by the package as ``pi_notebook``
through the ``pytest11`` entry point: installing ``pi_notebook`` is all it takes).

    pytest --nbval --pi-replay notebooks/            # cassettes replay only: no key, nothing calls out
    pytest --nbval --pi-record-missing notebooks/    # replay what the cassettes hold, record what they lack

**Whenever nbval runs** (``--nbval`` or ``--nbval-lax``) it compares what ``pi_notebook`` shows as it can be compared
(the kernel side is ``pi_notebook/notebook/_volatile.py``):

- an output whose metadata holds ``{"pi_notebook": {"compare": [MIMETYPES]}}`` is compared on those mimetypes only,
  and left out when none is listed: the ``%load_ext`` greeting and the ``%pi cassette`` line (recording when the
  notebook was executed, replaying when it is checked), and a run's display, whose static copy nbval would see as
  first shown (it applies no ``update_display``) while the saved notebook holds the settled one;
- in a run's event log (an ``await run`` report, ``%pi events``, or its rows printed) each event's time reads
  ``T``: a row starts with the time, then the event's name as code (``| 0.029 | `agent_start` |``; the same rows in
  the report's HTML and plain-text copies); a measured duration in a budget's message (``301 ms used``) reads
  ``N ms used``, and a run receipt's token counts ``(in N tok, out N tok)``;
- a run's report folded under one line (``<details class="pi-report-folded">``: JupyterLab drew the run's widget
  above it, so the transcript is shown once) is compared as the whole report it holds, which a check with no page
  shows;
- a cell ending in ``;`` (``await run;``) has its result (``execute_result``) left out on both sides: Jupyter, which
  stores each cell in the history, shows none for it, while nbval executes with ``store_history=False`` and IPython 8
  then reads the ``;`` of the last stored cell instead (ipython/ipython#14162), so the result shows and the cell
  would fail against its saved outputs. What such a cell prints or displays is compared.
The rest is compared as nbval does (with ``--nbval-sanitize-with`` patterns, if given).

**``--pi-replay``**: each notebook's kernel (not pytest's own process) starts with ``PI_NOTEBOOK_CASSETTE_MODE=none``
(every cassette replays only; a provider with no key sends a placeholder) and ``PI_NOTEBOOK_SESSIONS__DIR=none``
(unless set: a check saves no session files). A run's request that its cassette has no recorded response for fails
the cell during which it was made, showing where it first differs from the closest recorded request
(``messages[3].content: "What is 2+2?" != "What is 3+3?" (recorded != sent)``), unless that cell's saved outputs
show such a miss too (a notebook that demonstrates one). **``--pi-record-missing``**: the kernels start with
``PI_NOTEBOOK_CASSETTE_MODE=new`` (replay what is recorded, record the rest; needs the key).

It reads nbval's cell items (class ``IPyNbCell``: ``compare_outputs``, ``cell``, ``raise_cell_error``, ``parent``),
as nbval 0.11 has them; ``tests/test_pytest_plugin.py`` pins them. Importing this module costs nothing
beyond pytest: the package's own modules are not imported.
"""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
import tokenize
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

__all__ = ["METADATA_KEY", "comparable", "ends_in_semicolon"]

METADATA_KEY = "pi_notebook"
"""The output metadata key (``notebook._volatile.METADATA_KEY``: the same string)."""
MODE_VARIABLE = "PI_NOTEBOOK_CASSETTE_MODE"
MISSES_VARIABLE = "PI_NOTEBOOK_CASSETTE_MISSES"
SESSIONS_VARIABLE = "PI_NOTEBOOK_SESSIONS__DIR"
MISS_TEXT = "has no recorded response for"
"""In every cassette miss's message; a cell whose saved outputs hold it shows a miss on purpose."""
_EVENT_TIME = re.compile(r"(?m)^\| \d+\.\d{3} (?=\| `)")
"""The time of an event log row (``describe.render_markdown``): ``| 0.029 | `agent_start` | |``."""
_EVENT_TIME_HTML = re.compile(r'<td style="text-align:right">\d+\.\d{3}</td>')
"""The same in the report's HTML copy (``describe.render_html``)."""
_EVENT_TIME_TEXT = re.compile(r"(?m)^ *\d+\.\d{3}(?=  [a-z_]+)")
"""The same in its plain text (``describe.render_text``): ``   0.029  agent_start``."""
_MEASURED = re.compile(r"\b\d+(?:\.\d+)? ms used\b")
_RECEIPT_TOKENS = re.compile(r"\(in \d+ tok, out \d+ tok\)")
"""A run receipt's token counts: an estimate includes the system prompt, which names the working directory (it is
left out under a cassette, but a faux run's depends on where the notebook runs)."""
_FOLDED = re.compile(r'\A<details class="pi-report-folded"><summary>[^<]*</summary>\n(.*)\n</details>\Z', re.S)
"""A run's report folded under one line (``describe.folded_report``): the cell that showed the live widget, when a page
drew it (a notebook executed in JupyterLab), saves it folded; a check, with no page, shows it whole."""
_ENTRY_ID = re.compile(r"\b[0-9a-f]{8}\b")
"""A session entry id (``session/_tree.py``; Pi's are the same), in an output marked as holding them."""
_CELL = "IPyNbCell"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pi_notebook", "pi_notebook's checks of executed notebooks (with --nbval)")
    group.addoption(
        "--pi-replay",
        action="store_true",
        help="notebook kernels replay their cassettes only (no key needed, nothing calls out); a request with no "
        "recorded response fails its cell, showing where it differs from the closest recorded one",
    )
    group.addoption(
        "--pi-record-missing",
        action="store_true",
        help="notebook kernels replay what their cassettes hold and record the requests they lack (needs the key)",
    )


def pytest_configure(config: pytest.Config) -> None:
    replay, record = config.getoption("pi_replay"), config.getoption("pi_record_missing")
    if not (replay or record):
        return
    if replay and record:
        raise pytest.UsageError("--pi-replay and --pi-record-missing exclude each other")
    if not (config.getoption("nbval", default=False) or config.getoption("nbval_lax", default=False)):
        flag = "--pi-replay" if replay else "--pi-record-missing"
        raise pytest.UsageError(f"{flag} acts on notebooks checked by nbval: add --nbval (pip install nbval)")
    config.pluginmanager.register(_Kernels(replay=replay), "pi_notebook_kernels")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each nbval cell compares its outputs as :func:`comparable` gives them."""
    for item in items:
        if type(item).__name__ == _CELL:
            original: Callable[..., bool] = item.compare_outputs  # type: ignore[attr-defined]
            quiet = ends_in_semicolon(item.cell.source)  # type: ignore[attr-defined]

            def compare(
                test: list[Any],
                ref: list[Any],
                *args: Any,
                _original: Callable[..., bool] = original,
                _quiet: bool = quiet,
            ) -> bool:
                return _original(comparable(test, quiet=_quiet), comparable(ref, quiet=_quiet), *args)

            item.compare_outputs = compare  # type: ignore[attr-defined]


def ends_in_semicolon(source: str) -> bool:
    """Whether IPython shows no result for the cell ``source``: its last token, as IPython transforms the cell (magics
    become calls), is ``;`` (IPython's ``DisplayHook.semicolon_at_end_of_expression``, read from the stored cell)."""
    from IPython.core.inputtransformer2 import TransformerManager  # nbval's kernel brings IPython

    try:
        python = TransformerManager().transform_cell(source)  # type: ignore[no-untyped-call]
        tokens = list(tokenize.generate_tokens(io.StringIO(python).readline))
    except (SyntaxError, tokenize.TokenError, ValueError):
        return False
    ignored = (tokenize.ENDMARKER, tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)
    last = next((token for token in reversed(tokens) if token.type not in ignored), None)
    return last is not None and last.type == tokenize.OP and last.string == ";"


def comparable(outputs: list[Any], *, quiet: bool = False) -> list[Any]:
    """``outputs`` (nbformat output nodes) as they are compared: see the module docstring. ``quiet``: the cell ends in
    ``;``, so its result is left out."""
    from nbformat import from_dict  # nbval's own dependency; imported only when notebooks are checked

    kept = []
    for output in outputs:
        if quiet and output.get("output_type") == "execute_result":
            continue
        output = dict(output)
        data = output.get("data")
        marks = (output.get("metadata") or {}).get(METADATA_KEY)
        compared = marks.get("compare") if isinstance(marks, Mapping) else None
        ids = isinstance(marks, Mapping) and marks.get("entry_ids") is True
        if isinstance(data, Mapping):
            if isinstance(compared, list):
                data = {mimetype: value for mimetype, value in data.items() if mimetype in compared}
                if not data:
                    continue
            output["data"] = {mimetype: _normalized(value, ids) for mimetype, value in data.items()}
        if "text" in output:
            output["text"] = _normalized(output["text"])
        kept.append(from_dict(output))
    return kept


def _normalized(value: Any, entry_ids: bool = False) -> Any:
    if not isinstance(value, str):
        return value
    if entry_ids:
        value = _ENTRY_ID.sub("ID", value)
    value = _FOLDED.sub(r"\1", value)
    value = _EVENT_TIME.sub("| T ", value)
    value = _EVENT_TIME_HTML.sub('<td style="text-align:right">T</td>', value)
    value = _EVENT_TIME_TEXT.sub("T", value)
    value = _RECEIPT_TOKENS.sub("(in N tok, out N tok)", value)
    return _MEASURED.sub("N ms used", value)


class _Kernels:
    """``--pi-replay`` / ``--pi-record-missing``: the environment each notebook's kernel starts with, and (replay)
    the requests its cassettes missed, read after each cell."""

    def __init__(self, *, replay: bool) -> None:
        self.replay = replay
        self._folder = Path(tempfile.mkdtemp(prefix="pi-replay-"))
        self._misses: dict[str, Path] = {}
        self._read: dict[str, int] = {}

    def _environment(self, notebook: str) -> dict[str, str]:
        if not self.replay:
            return {MODE_VARIABLE: "new"}
        misses = self._misses.setdefault(notebook, self._folder / f"misses-{len(self._misses)}.jsonl")
        return {
            MODE_VARIABLE: "none",
            MISSES_VARIABLE: str(misses),
            SESSIONS_VARIABLE: os.environ.get(SESSIONS_VARIABLE, "none"),
        }

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        """The first cell's setup starts the notebook's kernel (nbval's file-level setup), which inherits the
        environment; pytest's own is restored afterwards."""
        if type(item).__name__ != _CELL:
            return (yield)
        with _environ(self._environment(str(item.path))):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        if not self.replay or type(item).__name__ != _CELL:
            return (yield)
        failure: Exception | None = None
        try:
            yield
        except Exception as exc:
            failure = exc
        misses = self._new_misses(str(item.path))
        if misses and not _shows_a_miss(item.cell.outputs):  # type: ignore[attr-defined]
            _fail_for_misses(item, misses, failure)
        if failure is not None:
            raise failure
        return None

    def _new_misses(self, notebook: str) -> list[dict[str, Any]]:
        path = self._misses.get(notebook)
        if path is None or not path.exists():
            return []
        with path.open(encoding="utf-8") as file:
            file.seek(self._read.get(notebook, 0))
            text = file.read()
            self._read[notebook] = file.tell()
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def pytest_unconfigure(self) -> None:
        for path in self._folder.iterdir():
            path.unlink()
        self._folder.rmdir()


def _shows_a_miss(outputs: list[Any]) -> bool:
    return MISS_TEXT in json.dumps(outputs, ensure_ascii=False)


def _fail_for_misses(item: pytest.Item, misses: list[dict[str, Any]], failure: Exception | None) -> None:
    """Fail the cell with nbval's own error (so it reads like nbval's other failures): each miss, what to do, and the
    output comparison if that failed too."""
    lines = [f"- {miss.get('message', miss)}" for miss in misses]
    lines += [
        "",
        "Record what the cassette lacks: pytest --nbval --pi-record-missing (needs the key), or execute the notebook "
        "again with the cassette in mode all (PI_NOTEBOOK_CASSETTE_MODE=all) and commit both.",
    ]
    previous = getattr(failure, "inner_traceback", None)
    if previous:
        lines += ["", "The cell's outputs differ too:", previous]
    count = f"{len(misses)} request(s)" if len(misses) > 1 else "a request"
    message = f"{count} made during this cell had no recorded response in the cassette (--pi-replay)"
    item.raise_cell_error(message, "\n".join(lines))  # type: ignore[attr-defined]


@contextmanager
def _environ(values: Mapping[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
