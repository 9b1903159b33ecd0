/**
 * Small pieces for acting on a notebook's shared model (./cells.ts, ./cellEdit.ts, ./rewind.ts): a refusal the kernel
 * is told, a cell as the kernel reads it, a minimal source change, a new cell id, and the undo manager's parts.
 */
import type * as nbformat from '@jupyterlab/nbformat';
import type { ISharedCell } from '@jupyter/ydoc';

import type { CellError, CellType, ICellInfo } from './cellProtocol';

/** A request the page refuses: the kernel is told `error` and `message`. */
export class Refusal extends Error {
  constructor(
    readonly error: CellError,
    message: string
  ) {
    super(message);
  }
}

/** A stack item of Yjs' undo manager: its `meta` travels with it between the undo and redo stacks. */
export interface IStackItem {
  meta: Map<unknown, unknown>;
}

export interface IStackEvent {
  stackItem: IStackItem;
  type: 'undo' | 'redo';
}

/** The parts of Yjs' undo manager used here (the shared models expose it; yjs is not a direct dependency). */
export interface IUndoManager {
  stopCapturing(): void;
  on(name: 'stack-item-added' | 'stack-item-popped', listener: (event: IStackEvent) => void): void;
  off(name: 'stack-item-added' | 'stack-item-popped', listener: (event: IStackEvent) => void): void;
  undoStack: IStackItem[];
  redoStack: IStackItem[];
}

export function undoManagerOf(shared: unknown): IUndoManager | null {
  return (shared as { undoManager?: IUndoManager | null }).undoManager ?? null;
}

/** The next change of `shared` (a notebook or a cell) is an undo step of its own. */
export function stopCapturing(shared: unknown): void {
  undoManagerOf(shared)?.stopCapturing();
}

export function tagsOf(cell: ISharedCell): string[] {
  const tags = cell.getMetadata('tags');
  return Array.isArray(tags) ? tags.filter((tag): tag is string => typeof tag === 'string') : [];
}

/** A cell as the kernel reads it. */
export function info(cell: ISharedCell, index: number): ICellInfo {
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
export function replaceMinimal(cell: ISharedCell, before: string, after: string): void {
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
export function newCellId(taken: Set<string>): string {
  for (;;) {
    const id = crypto.randomUUID().replace(/-/g, '').slice(0, 8);
    if (!taken.has(id)) {
      return id;
    }
  }
}
