/**
 * A cell the kernel runs, shown in the page.
 *
 * The kernel runs the cell's code itself (`pi_notebook/kernel/cells/_cell_run.py` says why); the page only shows it:
 * `run_begin` clears the cell and marks it running (as JupyterLab's own execute does), `run_output` adds what the
 * code wrote, `run_end` sets the cell's final outputs and execution count. A page that connects while a cell runs (a
 * reload) shows the rest, and `run_end` makes the cell exact; a run that stops before the code starts puts back
 * what the cell held.
 */
import type { ICodeCellModel } from '@jupyterlab/cells';
import type * as nbformat from '@jupyterlab/nbformat';

import type { ICellsRunEndRequest, ICellsRunOutputRequest } from './cellProtocol';

/** What a running cell held before `run_begin` cleared it, to put back if the run stops before the code starts. */
interface IRestore {
  outputs: nbformat.IOutput[];
  count: number | null;
}

function sameOutput(a: nbformat.IOutput, b: nbformat.IOutput): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The cells of one notebook the kernel is running. */
export class CellRuns {
  /** `run_begin`: remember what the cell holds, then clear it and show it running. */
  begin(model: ICodeCellModel): void {
    this._restore.set(model.id, { outputs: model.outputs.toJSON(), count: model.executionCount });
    this._start(model);
  }

  /** `run_output`: add what the code wrote (`model` null: the cell is not in the notebook). */
  output(model: ICodeCellModel | null, request: ICellsRunOutputRequest): void {
    if (model === null) {
      return;
    }
    if (!this._running.has(model.id)) {
      this._start(model); // a page that connected while the cell ran (a reload): it shows the rest
    }
    if (request.clear) {
      model.outputs.clear();
    }
    for (const output of request.outputs) {
      model.outputs.add(output);
    }
  }

  /** `run_end`: the cell's final outputs and count, or what it held before if the code never ran. */
  end(model: ICodeCellModel | null, request: ICellsRunEndRequest): void {
    const restore = this._restore.get(request.cell_id);
    this._restore.delete(request.cell_id);
    this._running.delete(request.cell_id);
    if (model === null) {
      return;
    }
    if (!request.ran) {
      if (restore !== undefined) {
        model.outputs.fromJSON(restore.outputs);
        model.executionCount = restore.count;
      }
      model.executionState = 'idle';
      return;
    }
    const shown = model.outputs.toJSON();
    const keep = shown.length <= request.outputs.length && shown.every((output, i) => sameOutput(output, request.outputs[i]));
    if (keep) {
      request.outputs.slice(shown.length).forEach(output => model.outputs.add(output));
    } else {
      model.outputs.fromJSON(request.outputs);
    }
    model.executionCount = request.execution_count;
    model.executionState = 'idle';
  }

  /** What JupyterLab's own execute does before it sends the code: clear the cell, show it running. */
  private _start(model: ICodeCellModel): void {
    model.sharedModel.transact(() => model.clearExecution(), false, 'silent-change');
    model.executionState = 'running';
    model.trusted = true;
    this._running.add(model.id);
  }

  private _running = new Set<string>();
  private _restore = new Map<string, IRestore>();
}
