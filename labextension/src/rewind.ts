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

import type { ICellBefore, ICellsConfirmRequest, ICellsRewindRequest, ICellsStateRequest, IRewindStep } from './cells';

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

interface IUndoManager {
  stopCapturing(): void;
}

function stopCapturing(shared: ISharedNotebook): void {
  (shared as unknown as { undoManager?: IUndoManager | null }).undoManager?.stopCapturing();
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
  const refused = new Set<string>();
  stopCapturing(shared);
  shared.transact(() => {
    for (const step of request.steps) {
      results.push(applyStep(shared, step, refused));
    }
  });
  stopCapturing(shared);
  return { results };
}

function applyStep(shared: ISharedNotebook, step: IRewindStep, refused: Set<string>): IStepResult {
  const result = (done: boolean, why = ''): IStepResult => ({ cell_id: step.cell_id, action: step.action, done, why });
  if (refused.has(step.cell_id)) {
    return result(false); // said once, at its first step
  }
  const index = shared.cells.findIndex(cell => cell.getId() === step.cell_id);
  const cell = index < 0 ? null : shared.cells[index];
  const why = unexpected(cell, step);
  if (why !== '') {
    refused.add(step.cell_id);
    return result(false, why);
  }
  switch (step.action) {
    case 'delete':
      if (cell === null) {
        return result(false, 'it was already gone');
      }
      shared.deleteCell(index);
      return result(true);
    case 'insert':
      if (cell !== null) {
        return result(false, 'it was already back');
      }
      shared.insertCell(where(shared, step), asCell(step.cell));
      return result(true);
    case 'restore':
      if (cell === null) {
        return result(false, 'it was deleted since');
      }
      restore(shared, cell, index, step.cell ?? {});
      return result(true);
  }
  return result(false, `unknown step ${JSON.stringify(step.action)}`);
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

/** Where a deleted cell goes back: below the cell it was below, else at its old index. */
function where(shared: ISharedNotebook, step: IRewindStep): number {
  if (step.anchor === '') {
    return 0;
  }
  const anchor = step.anchor ? shared.cells.findIndex(cell => cell.getId() === step.anchor) : -1;
  return anchor >= 0 ? anchor + 1 : Math.min(Math.max(0, step.index ?? shared.cells.length), shared.cells.length);
}

function asCell(json: Record<string, unknown> | undefined): nbformat.ICell {
  return { ...(json ?? {}) } as unknown as nbformat.ICell;
}

/** The cell's content back to `json`: a cell of another type is replaced, at the same place and with the same id. */
function restore(shared: ISharedNotebook, cell: ISharedCell, index: number, json: Record<string, unknown>): void {
  if (json['cell_type'] !== cell.cell_type) {
    shared.deleteCell(index);
    shared.insertCell(index, asCell(json));
    return;
  }
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
