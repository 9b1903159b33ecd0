/**
 * The cell tools' messages on the control comm: the kernel's `{"type": "cells", "request": N, "op": ...}` requests
 * and this page's `{"action": "cells", "request": N, "ok": ...}` answers (./cells.ts acts on them).
 *
 * The one definition is Python's (`pi_notebook/kernel/cells/_cell_protocol.py`); tests/test_protocol.py checks the unions
 * and interfaces below against it. The cell tags and metadata key are in ./protocol.ts.
 */
import type * as nbformat from '@jupyterlab/nbformat';

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
