/**
 * The agent's cell tools, on the browser side: read and change the notebook's *live* model when the kernel asks.
 *
 * The kernel's cell tools (`pi_notebook/kernel/`) send `{"type": "cells", "request": N, "op": ...}` over the control
 * comm (the messages: ./cellProtocol.ts); {@link NotebookCells.handle} acts on the notebook panel's model and answers
 * `{"action": "cells", "request": N, "ok": true, "result": {...}}` or `{"ok": false, "error", "message"}`.
 *
 * - Every change goes through the shared model (`sharedModel.insertCell`, `deleteCell`, a cell's `updateSource`), so it
 *   shows at once, the user's unsaved edits stay, and saving writes it. Each change is one undo step: the undo
 *   manager (the notebook's for inserts and deletes, the cell's for an edit: ./cellEdit.ts) is told to stop capturing
 *   before and after, so the change neither merges with the user's typing nor with the next change.
 * - An edit replaces only the part of the source that differs, and only if the cell still holds the source the kernel
 *   read (`expect`); otherwise it is refused as `changed` and the user's text stays.
 * - A cell tagged `pi-protected` is never edited, deleted or run (`protected`); nor is a cell JupyterLab itself keeps
 *   from editing (`editable: false`) or deleting (`deletable: false`). `check` says so before the user is asked to
 *   approve such a change, changing nothing.
 * - Inserted and edited cells get the `pi-agent` tag and `metadata.pi_notebook = {run, change}`.
 * - Running: the kernel runs the cell's code itself and the page shows it (./cellRun.ts).
 * - Taking a run's changes back: ./rewind.ts.
 */
import type { ICodeCellModel } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel } from '@jupyterlab/services';
import type { ISharedCell } from '@jupyter/ydoc';

import { MarkedEdits } from './cellEdit';
import { info, newCellId, Refusal, stopCapturing, tagsOf } from './cellModel';
import type {
  CellsRequest,
  ICellsCheckRequest,
  ICellsDeleteRequest,
  ICellsEditRequest,
  ICellsInsertRequest,
  ICellsReadRequest,
  ICellsReply,
  ICellsRunBeginRequest
} from './cellProtocol';
import { CellRuns } from './cellRun';
import { AGENT_TAG, METADATA_KEY, PROTECTED_TAG } from './protocol';
import { applyRewind, beforeOf, cellState, confirm } from './rewind';

function sendReply(comm: Kernel.IComm, reply: ICellsReply | null): void {
  if (reply !== null && !comm.isDisposed) {
    try {
      comm.send(reply as unknown as Parameters<Kernel.IComm['send']>[0]);
    } catch (error) {
      console.warn('pi-notebook: could not answer the kernel', error);
    }
  }
}

export class NotebookCells {
  /** `notebook()` gives the panel that shows the notebook now (null once it closed). */
  constructor(notebook: () => NotebookPanel | null) {
    this._notebook = notebook;
  }

  /** Act on a request and send the answer on `comm` (none for a notification). */
  answer(request: CellsRequest, comm: Kernel.IComm): void {
    const answer = this.handle(request);
    if (answer instanceof Promise) {
      void answer.then(reply => sendReply(comm, reply)); // a question the user answers (./rewind.ts)
    } else {
      sendReply(comm, answer);
    }
  }

  /** The answer to a request, or null for a notification (`request` 0); a promise for a question the user answers
   * (`confirm`). Never throws. */
  handle(request: CellsRequest): ICellsReply | null | Promise<ICellsReply> {
    const number = typeof request.request === 'number' ? request.request : 0;
    if (request.op === 'confirm') {
      return confirm(request).then(
        result => ({ action: 'cells', request: number, ok: true, result }),
        error => ({ action: 'cells', request: number, ok: false, error: 'invalid', message: String(error) })
      );
    }
    try {
      const result = this._act(request);
      return number ? { action: 'cells', request: number, ok: true, result: result ?? {} } : null;
    } catch (error) {
      const refusal = error instanceof Refusal ? error : new Refusal('invalid', String(error));
      if (!(error instanceof Refusal)) {
        console.warn('pi-notebook: cells request failed', request.op, error);
      }
      return number
        ? { action: 'cells', request: number, ok: false, error: refusal.error, message: refusal.message }
        : null;
    }
  }

  private _act(request: CellsRequest): Record<string, unknown> | null {
    switch (request.op) {
      case 'read':
        return this._read(request);
      case 'get': {
        const [cell, index] = this._find(request.cell_id);
        return { cell: info(cell, index) };
      }
      case 'check':
        this._checkAction(request);
        return {};
      case 'insert':
        return this._insert(request);
      case 'edit':
        return this._edit(request);
      case 'delete':
        return this._delete(request);
      case 'run_begin':
        return this._runBegin(request);
      case 'run_output':
        this._runs.output(this._codeModel(request.cell_id), request);
        return null;
      case 'run_end':
        this._runs.end(this._codeModel(request.cell_id), request);
        return null;
      case 'state':
        return cellState(this._shared, request);
      case 'rewind':
        return applyRewind(this._shared, request);
      default:
        throw new Refusal('invalid', `unknown op ${JSON.stringify((request as { op?: unknown }).op)}`);
    }
  }

  private get _panel(): NotebookPanel {
    const panel = this._notebook();
    if (panel === null || panel.content.model === null) {
      throw new Refusal('invalid', 'the notebook is not open');
    }
    return panel;
  }

  private get _shared() {
    return this._panel.content.model!.sharedModel;
  }

  private _find(id: string): [ISharedCell, number] {
    const cells = this._shared.cells;
    const index = cells.findIndex(cell => cell.getId() === id);
    if (index < 0) {
      throw new Refusal('not_found', `no cell with id ${id}`);
    }
    return [cells[index], index];
  }

  private _check(cell: ISharedCell, what: 'editable' | 'deletable' | null): void {
    if (tagsOf(cell).includes(PROTECTED_TAG)) {
      throw new Refusal('protected', `the cell is tagged ${PROTECTED_TAG}`);
    }
    if (what !== null && cell.getMetadata(what) === false) {
      throw new Refusal('protected', `the cell's metadata says ${what}: false`);
    }
  }

  /** The refusal the change itself would get, now (nothing changes): asked before the user approves it. */
  private _checkAction(request: ICellsCheckRequest): void {
    const [cell] = this._find(request.cell_id);
    if (request.action === 'run' && cell.cell_type !== 'code') {
      throw new Refusal('not_code', `it is a ${cell.cell_type} cell; only code cells run`);
    }
    this._check(cell, request.action === 'edit' ? 'editable' : request.action === 'delete' ? 'deletable' : null);
  }

  private _codeModel(id: string): ICodeCellModel | null {
    for (const cell of this._panel.content.model!.cells) {
      if (cell.id === id) {
        return cell.type === 'code' ? (cell as ICodeCellModel) : null;
      }
    }
    return null;
  }

  private _read(request: ICellsReadRequest): Record<string, unknown> {
    const cells = this._shared.cells;
    const total = cells.length;
    const start = Math.min(Math.max(0, request.start ?? 0), total);
    const end = request.end === null || request.end === undefined ? total : Math.min(Math.max(start, request.end), total);
    const shown = cells.slice(start, end).map((cell, offset) => info(cell, start + offset));
    return { cells: shown, total, path: this._panel.context.path };
  }

  private _insert(request: ICellsInsertRequest): Record<string, unknown> {
    const shared = this._shared;
    let index = shared.cells.length;
    if (request.after === '') {
      index = 0;
    } else if (request.after !== null && request.after !== undefined) {
      index = this._find(request.after)[1] + 1;
    }
    const metadata = { tags: [AGENT_TAG], [METADATA_KEY]: { run: request.run, change: 'inserted' } };
    const id = newCellId(new Set(shared.cells.map(cell => cell.getId())));
    stopCapturing(shared);
    const cell = shared.insertCell(index, { id, cell_type: request.cell_type, source: request.source, metadata });
    stopCapturing(shared);
    return { cell_id: cell.getId(), index };
  }

  private _edit(request: ICellsEditRequest): Record<string, unknown> {
    const [cell, index] = this._find(request.cell_id);
    this._check(cell, 'editable');
    const before = cell.getSource();
    if (before !== request.expect) {
      throw new Refusal('changed', 'the cell changed since it was read');
    }
    const was = beforeOf(this._shared, cell, index); // the run's checkpoint (./rewind.ts)
    this._edits.apply(cell, before, request.source, request.run);
    return { index, before: was };
  }

  private _delete(request: ICellsDeleteRequest): Record<string, unknown> {
    const [cell, index] = this._find(request.cell_id);
    this._check(cell, 'deletable');
    const was = info(cell, index);
    const shared = this._shared;
    const before = beforeOf(shared, cell, index); // the run's checkpoint (./rewind.ts)
    stopCapturing(shared);
    shared.deleteCell(index);
    stopCapturing(shared);
    return { cell: was, before };
  }

  private _runBegin(request: ICellsRunBeginRequest): Record<string, unknown> {
    const [cell, index] = this._find(request.cell_id);
    if (cell.cell_type !== 'code') {
      throw new Refusal('not_code', `it is a ${cell.cell_type} cell; only code cells run`);
    }
    this._check(cell, null);
    const before = beforeOf(this._shared, cell, index); // the run's checkpoint (./rewind.ts), before it is cleared
    const model = this._codeModel(request.cell_id);
    if (model !== null) {
      this._runs.begin(model);
    }
    return { index, source: cell.getSource(), before };
  }

  private _notebook: () => NotebookPanel | null;
  private _edits = new MarkedEdits(() => this._shared.cells);
  private _runs = new CellRuns();
}
