"""A notebook page for kernel tests: what the pi-notebook extension's ``cells.ts`` does, on an in-memory notebook.

It opens the control comm as the extension does (on a subshell, with ``{"cells": 1, "path": ...}``) and answers the
kernel's cells requests whenever the test's :class:`~control_frontend.Frontend` reads iopub (its ``on_message``).
The browser tests check the real ``cells.ts``; this double lets the kernel side be tested fast and in detail.
"""

from __future__ import annotations

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
        cell["source"] = data["source"]
        cell["tags"] = [*cell["tags"], "pi-agent"] if "pi-agent" not in cell["tags"] else cell["tags"]
        cell["metadata"]["pi_notebook"] = {"run": data["run"], "change": "edited"}
        return {"index": index}

    def _delete(self, data: dict[str, Any]) -> dict[str, Any]:
        cell, index = self._find(data["cell_id"])
        self._guard(cell)
        self.cells.pop(index)
        return {"cell": self._info(cell, index)}

    def _run_begin(self, data: dict[str, Any]) -> dict[str, Any]:
        cell, index = self._find(data["cell_id"])
        if cell["cell_type"] != "code":
            raise Refused("not_code", f"it is a {cell['cell_type']} cell; only code cells run")
        self._guard(cell)
        cell["outputs"], cell["execution_count"] = [], None
        self.running.add(cell["id"])
        return {"index": index, "source": cell["source"]}

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
