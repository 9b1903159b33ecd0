/**
 * The agent's cell tools, on the browser side: read and change the notebook's *live* model when the kernel asks.
 *
 * The kernel's cell tools (`pi_notebook/kernel/`) send `{"type": "cells", "request": N, "op": ...}` over the control
 * comm; {@link NotebookCells.handle} acts on the notebook panel's model and answers
 * `{"action": "cells", "request": N, "ok": true, "result": {...}}` or `{"ok": false, "error", "message"}`.
 *
 * - Every change goes through the shared model (`sharedModel.insertCell`, `deleteCell`, a cell's `updateSource`), so it
 *   shows at once, the user's unsaved edits stay, and saving writes it. Each change is one undo step: the undo
 *   manager (the notebook's for inserts and deletes, the cell's for an edit) is told to stop capturing before and
 *   after, so the change neither merges with the user's typing nor with the next change.
 * - An edit replaces only the part of the source that differs, and only if the cell still holds the source the kernel
 *   read (`expect`); otherwise it is refused as `changed` and the user's text stays.
 * - A cell tagged `pi-protected` is never edited, deleted or run (`protected`); nor is a cell JupyterLab itself keeps
 *   from editing (`editable: false`) or deleting (`deletable: false`). `check` says so before the user is asked to
 *   approve such a change, changing nothing.
 * - Inserted and edited cells get the `pi-agent` tag and `metadata.pi_notebook = {run, change}`.
 * - Running: the kernel runs the cell's code itself (see `pi_notebook/kernel/cells/_cell_run.py` for why); the page shows
 *   it: `run_begin` clears the cell and marks it running (as JupyterLab's own execute does), `run_output` adds what
 *   the code wrote, `run_end` sets the cell's final outputs and execution count.
 *
 * The protocol's one definition is Python's (`pi_notebook/kernel/cells/_cell_protocol.py`); tests/test_protocol.py checks
 * the unions and interfaces below against it.
 */
import type { ICodeCellModel } from '@jupyterlab/cells';
import type * as nbformat from '@jupyterlab/nbformat';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { ISharedCell } from '@jupyter/ydoc';

import { applyRewind, beforeOf, cellState, confirm } from './rewind';

export const AGENT_TAG = 'pi-agent';
export const PROTECTED_TAG = 'pi-protected';
export const METADATA_KEY = 'pi_notebook';

/** What the kernel asks. */
export type CellOp =
  | 'read'
  | 'get'
  | 'check'
  | 'insert'
  | 'edit'
  | 'delete'
  | 'run_begin'
  | 'run_output'
  | 'run_end'
  | 'state'
  | 'confirm'
  | 'rewind';
/** Why the page refused. */
export type CellError = 'not_found' | 'protected' | 'changed' | 'not_code' | 'invalid';
export type CellType = 'code' | 'markdown' | 'raw';
/** What a `check` asks about. */
export type CellAction = 'edit' | 'delete' | 'run';

export interface ICellInfo {
  id: string;
  index: number;
  cell_type: CellType;
  source: string;
  execution_count: number | null;
  outputs: nbformat.IOutput[];
  tags: string[];
}

export interface ICellsReadRequest {
  type: 'cells';
  request: number;
  op: 'read';
  start: number;
  end: number | null;
}

export interface ICellsGetRequest {
  type: 'cells';
  request: number;
  op: 'get';
  cell_id: string;
}

export interface ICellsCheckRequest {
  type: 'cells';
  request: number;
  op: 'check';
  cell_id: string;
  action: CellAction;
}

export interface ICellsInsertRequest {
  type: 'cells';
  request: number;
  op: 'insert';
  source: string;
  cell_type: CellType;
  after: string | null;
  run: number;
}

export interface ICellsEditRequest {
  type: 'cells';
  request: number;
  op: 'edit';
  cell_id: string;
  source: string;
  expect: string;
  run: number;
}

export interface ICellsDeleteRequest {
  type: 'cells';
  request: number;
  op: 'delete';
  cell_id: string;
  run: number;
}

export interface ICellsRunBeginRequest {
  type: 'cells';
  request: number;
  op: 'run_begin';
  cell_id: string;
  run: number;
}

export interface ICellsRunOutputRequest {
  type: 'cells';
  request: number;
  op: 'run_output';
  cell_id: string;
  clear: boolean;
  outputs: nbformat.IOutput[];
}

export interface ICellsRunEndRequest {
  type: 'cells';
  request: number;
  op: 'run_end';
  cell_id: string;
  ran: boolean;
  execution_count: number | null;
  outputs: nbformat.IOutput[];
}

/** A cell the moment before a change (the run's checkpoint keeps it; see ./rewind.ts). */
export interface ICellBefore {
  cell: Record<string, unknown>;
  index: number;
  anchor: string;
}

export interface ICellsStateRequest {
  type: 'cells';
  request: number;
  op: 'state';
  cell_ids: string[];
}

export interface ICellsConfirmRequest {
  type: 'cells';
  request: number;
  op: 'confirm';
  title: string;
  items: string[];
}

export interface IRewindStep {
  action: 'delete' | 'insert' | 'restore';
  cell_id: string;
  cell?: Record<string, unknown>;
  index?: number;
  anchor?: string | null;
  expect?: Record<string, unknown> | null;
}

export interface ICellsRewindRequest {
  type: 'cells';
  request: number;
  op: 'rewind';
  run: number;
  steps: IRewindStep[];
}

export interface ICellsReply {
  action: 'cells';
  request: number;
  ok: boolean;
  result?: Record<string, unknown>;
  error?: CellError;
  message?: string;
}

export type CellsRequest =
  | ICellsReadRequest
  | ICellsGetRequest
  | ICellsCheckRequest
  | ICellsInsertRequest
  | ICellsEditRequest
  | ICellsDeleteRequest
  | ICellsRunBeginRequest
  | ICellsRunOutputRequest
  | ICellsRunEndRequest
  | ICellsStateRequest
  | ICellsConfirmRequest
  | ICellsRewindRequest;

class Refusal extends Error {
  constructor(
    readonly error: CellError,
    message: string
  ) {
    super(message);
  }
}

/** A stack item of Yjs' undo manager: its `meta` travels with it between the undo and redo stacks. */
interface IStackItem {
  meta: Map<unknown, unknown>;
}

interface IStackEvent {
  stackItem: IStackItem;
  type: 'undo' | 'redo';
}

/** The parts of Yjs' undo manager used here (the shared models expose it; yjs is not a direct dependency). */
interface IUndoManager {
  stopCapturing(): void;
  on(name: 'stack-item-added' | 'stack-item-popped', listener: (event: IStackEvent) => void): void;
  off(name: 'stack-item-added' | 'stack-item-popped', listener: (event: IStackEvent) => void): void;
  undoStack: IStackItem[];
  redoStack: IStackItem[];
}

function undoManagerOf(shared: unknown): IUndoManager | null {
  return (shared as { undoManager?: IUndoManager | null }).undoManager ?? null;
}

function stopCapturing(shared: unknown): void {
  undoManagerOf(shared)?.stopCapturing();
}

/** A cell's mark: its tags and `metadata.pi_notebook` (`undefined`: the key is absent). */
interface IMark {
  tags: unknown;
  run: unknown;
}

/** The marks before and after one agent edit, kept on its undo stack item (see `_edit`). */
interface IEditMarks {
  cellId: string;
  before: IMark;
  after: IMark;
}

const EDIT_META = 'pi-notebook:edit';

function markOf(cell: ISharedCell): IMark {
  return { tags: cell.getMetadata('tags'), run: cell.getMetadata(METADATA_KEY) };
}

function setMark(cell: ISharedCell, mark: IMark): void {
  for (const [key, value] of [['tags', mark.tags], [METADATA_KEY, mark.run]] as const) {
    if (value === undefined) {
      cell.deleteMetadata(key);
    } else {
      cell.setMetadata(key, value as never);
    }
  }
}

function tagsOf(cell: ISharedCell): string[] {
  const tags = cell.getMetadata('tags');
  return Array.isArray(tags) ? tags.filter((tag): tag is string => typeof tag === 'string') : [];
}

function info(cell: ISharedCell, index: number): ICellInfo {
  const code = cell.cell_type === 'code';
  const count = code ? (cell as unknown as { execution_count: number | null }).execution_count : null;
  return {
    id: cell.getId(),
    index,
    cell_type: cell.cell_type as CellType,
    source: cell.getSource(),
    execution_count: count ?? null,
    outputs: code ? (cell as unknown as { getOutputs(): nbformat.IOutput[] }).getOutputs() : [],
    tags: tagsOf(cell)
  };
}

/** The change that makes `before` into `after`: the common start and end stay, so cursors elsewhere do not move. */
function replaceMinimal(cell: ISharedCell, before: string, after: string): void {
  let start = 0;
  while (start < before.length && start < after.length && before[start] === after[start]) {
    start++;
  }
  let end = 0;
  while (
    end < before.length - start &&
    end < after.length - start &&
    before[before.length - 1 - end] === after[after.length - 1 - end]
  ) {
    end++;
  }
  (cell as unknown as { updateSource(start: number, end: number, value: string): void }).updateSource(
    start,
    before.length - end,
    after.slice(start, after.length - end)
  );
}

/** A new cell's id as nbformat makes them (8 hex characters), not used in the notebook: short for the model. */
function newCellId(taken: Set<string>): string {
  for (;;) {
    const id = crypto.randomUUID().replace(/-/g, '').slice(0, 8);
    if (!taken.has(id)) {
      return id;
    }
  }
}

function sameOutput(a: nbformat.IOutput, b: nbformat.IOutput): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** What a running cell held before `run_begin` cleared it, to put back if the run stops before the code starts. */
interface IRestore {
  outputs: nbformat.IOutput[];
  count: number | null;
}

export class NotebookCells {
  /** `notebook()` gives the panel that shows the notebook now (null once it closed). */
  constructor(notebook: () => NotebookPanel | null) {
    this._notebook = notebook;
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
        this._runOutput(request);
        return null;
      case 'run_end':
        this._runEnd(request);
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
    const tags = tagsOf(cell);
    const marks: IEditMarks = {
      cellId: request.cell_id,
      before: markOf(cell),
      after: { tags: tags.includes(AGENT_TAG) ? tags : [...tags, AGENT_TAG], run: { run: request.run, change: 'edited' } }
    };
    // The source change is one undo step of the cell. The mark is metadata, which JupyterLab changes outside undo
    // (running a cell rewrites it), so it is set outside undo too and follows the step: the step carries it in its
    // meta, and undoing or redoing the step sets the mark back or again (`_followUndo`).
    const undo = undoManagerOf(cell);
    this._followUndo(undo);
    const remember = (event: IStackEvent): void => {
      if (event.type === 'undo') {
        event.stackItem.meta.set(EDIT_META, marks);
      }
    };
    undo?.stopCapturing();
    undo?.on('stack-item-added', remember);
    try {
      cell.transact(() => replaceMinimal(cell, before, request.source));
    } finally {
      undo?.off('stack-item-added', remember);
      undo?.stopCapturing();
    }
    setMark(cell, marks.after);
    return { index, before: was };
  }

  /** Undoing an agent edit takes its mark off, redoing it puts the mark back (once per undo manager). */
  private _followUndo(undo: IUndoManager | null): void {
    if (undo === null || this._followed.has(undo)) {
      return;
    }
    this._followed.add(undo);
    undo.on('stack-item-popped', ({ stackItem, type }) => {
      const marks = stackItem.meta.get(EDIT_META) as IEditMarks | undefined;
      if (marks === undefined) {
        return;
      }
      const other = type === 'undo' ? undo.redoStack : undo.undoStack;
      other[other.length - 1]?.meta.set(EDIT_META, marks); // the step that does it again carries it on
      const cell = this._shared.cells.find(candidate => candidate.getId() === marks.cellId);
      if (cell !== undefined) {
        setMark(cell, type === 'undo' ? marks.before : marks.after);
      }
    });
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
      this._restore.set(request.cell_id, { outputs: model.outputs.toJSON(), count: model.executionCount });
      this._begin(model);
    }
    return { index, source: cell.getSource(), before };
  }

  /** What JupyterLab's own execute does before it sends the code: clear the cell, show it running. */
  private _begin(model: ICodeCellModel): void {
    model.sharedModel.transact(() => model.clearExecution(), false, 'silent-change');
    model.executionState = 'running';
    model.trusted = true;
    this._running.add(model.id);
  }

  private _runOutput(request: ICellsRunOutputRequest): void {
    const model = this._codeModel(request.cell_id);
    if (model === null) {
      return;
    }
    if (!this._running.has(model.id)) {
      this._begin(model); // a page that connected while the cell ran (a reload): it shows the rest
    }
    if (request.clear) {
      model.outputs.clear();
    }
    for (const output of request.outputs) {
      model.outputs.add(output);
    }
  }

  private _runEnd(request: ICellsRunEndRequest): void {
    const model = this._codeModel(request.cell_id);
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

  private _notebook: () => NotebookPanel | null;
  private _followed = new WeakSet<IUndoManager>();
  private _running = new Set<string>();
  private _restore = new Map<string, IRestore>();
}
