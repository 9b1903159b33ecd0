"""A notebook page for kernel tests: what the pi-notebook extension's ``cells.ts`` does, on an in-memory notebook.

It opens the control comm as the extension does (on a subshell, with ``{"cells": 1, "path": ...}``) and answers the
kernel's cells requests whenever the test's :class:`~control_frontend.Frontend` reads iopub (its ``on_message``).
The browser tests check the real ``cells.ts``; this double lets the kernel side be tested fast and in detail.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from control_frontend import Frontend

PROTECTED = "pi-protected"


def code(cell_id: str, source: str, outputs: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    cell: dict[str, Any] = {"id": cell_id, "cell_type": "code", "source": source, "execution_count": None}
    cell["outputs"] = outputs or []
    return {"tags": [], "metadata": {}, **cell, **extra}


def markdown(cell_id: str, source: str, **extra: Any) -> dict[str, Any]:
    cell: dict[str, Any] = {"id": cell_id, "cell_type": "markdown", "source": source, "execution_count": None}
    cell["outputs"] = []
    return {"tags": [], "metadata": {}, **cell, **extra}


class Refused(Exception):
    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error


class FakePage:
    """``client``: the page's own client id (another page's kernel connection); by default the frontend's, whose
    cells start the runs. Pages of one test answer side by side (each passes on what is not its own)."""

    def __init__(
        self,
        frontend: Frontend,
        cells: list[dict[str, Any]],
        path: str = "work/notebook.ipynb",
        *,
        client: str | None = None,
    ) -> None:
        self.frontend = frontend.as_client(client) if client is not None else frontend
        self.cells = cells
        self.path = path
        self.requests: list[dict[str, Any]] = []
        """Every cells message the kernel sent, in order."""
        self.running: set[str] = set()
        self._ids = itertools.count(1)
        self.answering = True
        """False: the page ignores requests (a closed tab whose comm the kernel still lists)."""
        self.dialog_answer: str | None = "keep"
        """What the user answers in the rewind's Overwrite / Keep mine dialog (``confirm``); ``None``: the dialog
        stays open (no answer)."""
        self.undo_steps: list[list[dict[str, Any]]] = []
        """The cells before each rewind (one entry per ``rewind`` request): JupyterLab's undo step, taken back by
        :meth:`undo`."""
        before = frontend.on_message

        def on_message(message: dict[str, Any]) -> None:
            if before is not None:
                before(message)
            self._on_message(message)

        frontend.on_message = on_message
        self.subshell = self.frontend.create_subshell()
        self.comm = self.frontend.open(self.subshell, {"cells": 1, "path": path})
        frontend.state(self.comm)  # the kernel answered the comm_open: it lists this page

    def cell(self, cell_id: str) -> dict[str, Any]:
        return next(cell for cell in self.cells if cell["id"] == cell_id)

    def ops(self, op: str) -> list[dict[str, Any]]:
        return [request for request in self.requests if request["op"] == op]

    # -- answering ---------------------------------------------------------------------------------------------
    def answer(self, message: dict[str, Any]) -> None:
        """Answer ``message`` (a request the kernel sent this page) now: for a page that was not answering."""
        self._on_message(message)

    def _on_message(self, message: dict[str, Any]) -> None:
        if message["msg_type"] != "comm_msg" or message["content"]["comm_id"] != self.comm:
            return
        data = message["content"]["data"]
        if data.get("type") != "cells" or not self.answering:
            return
        self.requests.append(data)
        if data["op"] == "confirm" and self.dialog_answer is None:
            return
        try:
            result = getattr(self, "_" + data["op"])(data)
            reply = {"action": "cells", "request": data["request"], "ok": True, "result": result or {}}
        except Refused as refusal:
            reply = {"action": "cells", "request": data["request"], "ok": False}
            reply |= {"error": refusal.error, "message": str(refusal)}
        if data["request"]:
            self.frontend.send(self.comm, reply, self.subshell)

    def _find(self, cell_id: str) -> tuple[dict[str, Any], int]:
        for index, cell in enumerate(self.cells):
            if cell["id"] == cell_id:
                return cell, index
        raise Refused("not_found", f"no cell with id {cell_id}")

    def _info(self, cell: dict[str, Any], index: int) -> dict[str, Any]:
        keys = ("id", "cell_type", "source", "execution_count", "outputs", "tags")
        return {"index": index, **{key: cell[key] for key in keys}}

    def _before(self, cell: dict[str, Any], index: int) -> dict[str, Any]:
        """The cell as ``cells.ts`` gives it to the run's checkpoint: its nbformat JSON, index and the cell above."""
        metadata = {**cell["metadata"], "tags": list(cell["tags"])} if cell["tags"] else dict(cell["metadata"])
        json = {"id": cell["id"], "cell_type": cell["cell_type"], "source": cell["source"], "metadata": metadata}
        if cell["cell_type"] == "code":
            json |= {"outputs": list(cell["outputs"]), "execution_count": cell["execution_count"]}
        anchor = self.cells[index - 1]["id"] if index > 0 else ""
        return {"cell": copy.deepcopy(json), "index": index, "anchor": anchor}

    def _guard(self, cell: dict[str, Any]) -> None:
        if PROTECTED in cell["tags"]:
            raise Refused("protected", f"the cell is tagged {PROTECTED}")

    def _read(self, data: dict[str, Any]) -> dict[str, Any]:
        total = len(self.cells)
        start = min(data["start"], total)
        end = total if data["end"] is None else min(max(start, data["end"]), total)
        cells = [self._info(cell, index) for index, cell in enumerate(self.cells) if start <= index < end]
        return {"cells": cells, "total": total, "path": self.path}

    def _get(self, data: dict[str, Any]) -> dict[str, Any]:
        return {"cell": self._info(*self._find(data["cell_id"]))}

    def _check(self, data: dict[str, Any]) -> dict[str, Any]:
        cell = self._find(data["cell_id"])[0]
        if data["action"] == "run" and cell["cell_type"] != "code":
            raise Refused("not_code", f"it is a {cell['cell_type']} cell; only code cells run")
        self._guard(cell)
        return {}

    def _insert(self, data: dict[str, Any]) -> dict[str, Any]:
        index = len(self.cells)
        if data["after"] == "":
            index = 0
        elif data["after"] is not None:
            index = self._find(data["after"])[1] + 1
        new = code if data["cell_type"] == "code" else markdown
        cell = new(f"new-{next(self._ids)}", data["source"], tags=["pi-agent"])
        cell["metadata"] = {"pi_notebook": {"run": data["run"], "change": "inserted"}}
        self.cells.insert(index, cell)
        return {"cell_id": cell["id"], "index": index}

    def _edit(self, data: dict[str, Any]) -> dict[str, Any]:
        cell, index = self._find(data["cell_id"])
        self._guard(cell)
        if cell["source"] != data["expect"]:
            raise Refused("changed", "the cell changed since it was read")
        before = self._before(cell, index)
        cell["source"] = data["source"]
        cell["tags"] = [*cell["tags"], "pi-agent"] if "pi-agent" not in cell["tags"] else cell["tags"]
        cell["metadata"]["pi_notebook"] = {"run": data["run"], "change": "edited"}
        return {"index": index, "before": before}

    def _delete(self, data: dict[str, Any]) -> dict[str, Any]:
        cell, index = self._find(data["cell_id"])
        self._guard(cell)
        before = self._before(cell, index)
        self.cells.pop(index)
        return {"cell": self._info(cell, index), "before": before}

    def _run_begin(self, data: dict[str, Any]) -> dict[str, Any]:
        cell, index = self._find(data["cell_id"])
        if cell["cell_type"] != "code":
            raise Refused("not_code", f"it is a {cell['cell_type']} cell; only code cells run")
        self._guard(cell)
        before = self._before(cell, index)
        cell["outputs"], cell["execution_count"] = [], None
        self.running.add(cell["id"])
        return {"index": index, "source": cell["source"], "before": before}

    def _run_output(self, data: dict[str, Any]) -> None:
        cell = self._find(data["cell_id"])[0]
        if data["clear"]:
            cell["outputs"] = []
        cell["outputs"] = [*cell["outputs"], *data["outputs"]]

    def _run_end(self, data: dict[str, Any]) -> None:
        cell = self._find(data["cell_id"])[0]
        self.running.discard(cell["id"])
        if data["ran"]:
            cell["outputs"], cell["execution_count"] = data["outputs"], data["execution_count"]

    # -- a rewind (labextension/src/rewind.ts) ---------------------------------------------------------------------
    def _state(self, data: dict[str, Any]) -> dict[str, Any]:
        cells: dict[str, Any] = {}
        for cell_id in data["cell_ids"]:
            found = next(((index, cell) for index, cell in enumerate(self.cells) if cell["id"] == cell_id), None)
            if found is None:
                cells[cell_id] = None
                continue
            index, cell = found
            state = {key: cell[key] for key in ("source", "cell_type", "execution_count")}
            cells[cell_id] = {**state, "index": index}
        return {"cells": cells}

    def _confirm(self, data: dict[str, Any]) -> dict[str, Any]:
        return {"answer": self.dialog_answer}

    def _rewind(self, data: dict[str, Any]) -> dict[str, Any]:
        self.undo_steps.append(copy.deepcopy(self.cells))
        refused: set[str] = set()
        return {"results": [self._step(step, refused) for step in data["steps"]]}

    def undo(self) -> None:
        """JupyterLab's notebook undo after a rewind: the whole rewind is one step."""
        self.cells[:] = self.undo_steps.pop()

    def _step(self, step: dict[str, Any], refused: set[str]) -> dict[str, Any]:
        cell_id, action = step["cell_id"], step["action"]
        result = {"cell_id": cell_id, "action": action, "done": False, "why": ""}
        if cell_id in refused:
            return result
        found = next(((index, cell) for index, cell in enumerate(self.cells) if cell["id"] == cell_id), None)
        if "expect" in step:
            expect = step["expect"]
            same = (
                found is None
                if expect is None
                else found is not None and all(found[1][key] == value for key, value in expect.items())
            )
            if not same:
                refused.add(cell_id)
                return {**result, "why": "it changed a moment ago; left as you have it"}
        if action == "delete":
            if found is None:
                return {**result, "why": "it was already gone"}
            self.cells.pop(found[0])
        elif action == "insert":
            if found is not None:
                return {**result, "why": "it was already back"}
            anchors = [index for index, cell in enumerate(self.cells) if cell["id"] == step.get("anchor")]
            at = 0 if step.get("anchor") == "" else anchors[0] + 1 if anchors else min(step["index"], len(self.cells))
            self.cells.insert(at, self._from_json(step["cell"]))
        elif found is None:
            return {**result, "why": "it was deleted since"}
        else:
            self.cells[found[0]] = self._from_json(step["cell"])
        return {**result, "done": True}

    def _from_json(self, json: dict[str, Any]) -> dict[str, Any]:
        metadata = dict(json.get("metadata") or {})
        tags = list(metadata.pop("tags", []))
        cell = {key: json.get(key) for key in ("id", "cell_type", "source")}
        cell |= {"outputs": list(json.get("outputs") or []), "execution_count": json.get("execution_count")}
        return {**cell, "tags": tags, "metadata": metadata}
