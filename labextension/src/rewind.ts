/**
 * Taking a run's cell changes back, on the browser side (`%pi rewind`, a run's **Undo run**).
 *
 * The kernel (`pi_notebook/notebook/_rewind.py`) asks, over the control comm, through {@link NotebookCells.handle}:
 *
 * - `state`: the touched cells as they are now (source, type, execution count, index), so it can tell which ones the
 *   user changed since the run;
 * - `confirm`: when the user changed some (cells, files or variables), a dialog lists them and asks **Overwrite** or
 *   **Keep mine** (closing it keeps theirs);
 * - `rewind`: the steps that undo the run's cell changes, in reverse order, applied in **one transaction of the
 *   notebook** with the undo manager told to stop capturing before and after, so the whole rewind is one step of
 *   JupyterLab's notebook undo (`z` in command mode takes it back, `Shift+Z` does it again). A step whose cell no
 *   longer holds what the kernel saw a moment ago is refused (with the cell's later steps): the user's text stays.
 *
 * Every name shown in the dialog is untrusted (cell ids, file names): it is set as text, never as HTML.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import type * as nbformat from '@jupyterlab/nbformat';
import type { ISharedCell, ISharedNotebook } from '@jupyter/ydoc';
import { Widget } from '@lumino/widgets';

import { stopCapturing } from './cellModel';
import type {
  ICellBefore,
  ICellsConfirmRequest,
  ICellsRewindRequest,
  ICellsStateRequest,
  IRewindStep
} from './cellProtocol';

/** The dialog's class, and its buttons' labels (the browser tests click them by these). */
export const CONFIRM_CLASS = 'pi-rewind-confirm';
export const OVERWRITE = 'Overwrite';
export const KEEP_MINE = 'Keep mine';

interface IStepResult {
  cell_id: string;
  action: IRewindStep['action'];
  done: boolean;
  why: string;
}

/** The cell the moment before a change: its JSON, index and the id of the cell above it. */
export function beforeOf(shared: ISharedNotebook, cell: ISharedCell, index: number): ICellBefore {
  const anchor = index > 0 ? shared.cells[index - 1].getId() : '';
  return { cell: cell.toJSON() as unknown as Record<string, unknown>, index, anchor };
}

export function cellState(shared: ISharedNotebook, request: ICellsStateRequest): Record<string, unknown> {
  const cells: Record<string, unknown> = {};
  for (const id of request.cell_ids) {
    const index = shared.cells.findIndex(cell => cell.getId() === id);
    if (index < 0) {
      cells[id] = null;
      continue;
    }
    const cell = shared.cells[index];
    const count = cell.cell_type === 'code' ? (cell as unknown as { execution_count: number | null }).execution_count : null;
    cells[id] = { source: cell.getSource(), cell_type: cell.cell_type, execution_count: count ?? null, index };
  }
  return { cells };
}

export async function confirm(request: ICellsConfirmRequest): Promise<Record<string, unknown>> {
  const body = document.createElement('div');
  body.className = CONFIRM_CLASS;
  const list = document.createElement('ul');
  for (const item of request.items) {
    const line = document.createElement('li');
    line.textContent = item;
    list.appendChild(line);
  }
  const note = document.createElement('p');
  note.textContent = `${KEEP_MINE} leaves them as they are now; everything else the run changed is taken back.`;
  body.append(list, note);
  const result = await showDialog({
    title: request.title,
    body: new Widget({ node: body }),
    buttons: [Dialog.cancelButton({ label: KEEP_MINE }), Dialog.warnButton({ label: OVERWRITE })],
    defaultButton: 0
  });
  return { answer: result.button.accept && result.button.label === OVERWRITE ? 'overwrite' : 'keep' };
}

/** Apply the steps in one transaction (one undo step); one result per step, in order. */
export function applyRewind(shared: ISharedNotebook, request: ICellsRewindRequest): Record<string, unknown> {
  const results: IStepResult[] = [];
  const cells = new Cells(shared);
  stopCapturing(shared);
  shared.transact(() => {
    for (const step of request.steps) {
      results.push(cells.apply(step));
    }
  });
  stopCapturing(shared);
  return { results };
}

/**
 * The notebook's cells while a transaction changes them. `shared.cells` is brought up to date only when the
 * transaction ends (by the shared model's observer), so the steps find cells and positions here, kept in step with
 * every insert and delete they make.
 */
class Cells {
  constructor(shared: ISharedNotebook) {
    this._shared = shared;
    this._ids = shared.cells.map(cell => cell.getId());
    this._live = new Map(shared.cells.map(cell => [cell.getId(), cell]));
  }

  apply(step: IRewindStep): IStepResult {
    const result = (done: boolean, why = ''): IStepResult => ({ cell_id: step.cell_id, action: step.action, done, why });
    if (this._refused.has(step.cell_id)) {
      return result(false); // said once, at its first step
    }
    const index = this._ids.indexOf(step.cell_id);
    const cell = index < 0 ? null : (this._live.get(step.cell_id) ?? null);
    const why = unexpected(cell, step);
    if (why !== '') {
      this._refused.add(step.cell_id);
      return result(false, why);
    }
    switch (step.action) {
      case 'delete':
        if (cell === null) {
          return result(false, 'it was already gone');
        }
        this._delete(index);
        return result(true);
      case 'insert':
        if (cell !== null) {
          return result(false, 'it was already back');
        }
        this._insert(this._where(step), step.cell ?? {});
        return result(true);
      case 'restore':
        if (cell === null) {
          return result(false, 'it was deleted since');
        }
        this._restore(cell, index, step.cell ?? {});
        return result(true);
    }
    return result(false, `unknown step ${JSON.stringify(step.action)}`);
  }

  private _delete(index: number): void {
    this._shared.deleteCell(index);
    this._live.delete(this._ids[index]);
    this._ids.splice(index, 1);
  }

  private _insert(index: number, json: Record<string, unknown>): void {
    const made = this._shared.insertCell(index, { ...json } as unknown as nbformat.ICell);
    this._ids.splice(index, 0, made.getId());
    this._live.set(made.getId(), made);
  }

  /** Where a deleted cell goes back: below the cell it was below, else at its old index. */
  private _where(step: IRewindStep): number {
    if (step.anchor === '') {
      return 0;
    }
    const anchor = step.anchor ? this._ids.indexOf(step.anchor) : -1;
    const fallback = Math.min(Math.max(0, step.index ?? this._ids.length), this._ids.length);
    return anchor >= 0 ? anchor + 1 : fallback;
  }

  /** The cell's content back to `json`; a cell of another type is replaced, at the same place, with the same id. */
  private _restore(cell: ISharedCell, index: number, json: Record<string, unknown>): void {
    if (json['cell_type'] !== cell.cell_type) {
      this._delete(index);
      this._insert(index, json);
      return;
    }
    setContent(cell, json);
  }

  private _shared: ISharedNotebook;
  private _ids: string[];
  private _live: Map<string, ISharedCell>;
  private _refused = new Set<string>();
}

/** Why the cell is not what the step expects (empty: it is). */
function unexpected(cell: ISharedCell | null, step: IRewindStep): string {
  const expect = step.expect;
  if (expect === undefined) {
    return '';
  }
  if (expect === null) {
    return cell === null ? '' : 'it came back a moment ago; left as it is';
  }
  if (cell === null) {
    return 'it was deleted a moment ago';
  }
  const same = cell.getSource() === expect['source'] && cell.cell_type === expect['cell_type'];
  return same ? '' : 'it changed a moment ago; left as you have it';
}

/** Source, metadata and (for code) outputs and count as in `json`. */
function setContent(cell: ISharedCell, json: Record<string, unknown>): void {
  const source = typeof json['source'] === 'string' ? json['source'] : '';
  if (cell.getSource() !== source) {
    cell.setSource(source);
  }
  const metadata = (json['metadata'] ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(cell.getMetadata())) {
    if (!(key in metadata)) {
      cell.deleteMetadata(key);
    }
  }
  for (const [key, value] of Object.entries(metadata)) {
    cell.setMetadata(key, value as never);
  }
  if (cell.cell_type === 'code') {
    const code = cell as unknown as { setOutputs(outputs: nbformat.IOutput[]): void; execution_count: number | null };
    code.setOutputs((json['outputs'] ?? []) as nbformat.IOutput[]);
    code.execution_count = (json['execution_count'] ?? null) as number | null;
  }
}
