/**
 * The agent's edit of a cell, as one undo step that carries the cell's mark.
 *
 * The source change is one undo step of the cell: its undo manager is told to stop capturing before and after, so
 * it neither merges with the user's typing nor with the next change. The mark (the `pi-agent` tag and
 * `metadata.pi_notebook`) is metadata, which JupyterLab changes outside undo (running a cell rewrites it), so it is
 * set outside undo too and follows the step: the step carries the marks before and after in its meta, and undoing
 * or redoing it sets the mark back or again.
 */
import type { ISharedCell } from '@jupyter/ydoc';

import { IStackEvent, IUndoManager, replaceMinimal, tagsOf, undoManagerOf } from './cellModel';
import { AGENT_TAG, METADATA_KEY } from './protocol';

/** A cell's mark: its tags and `metadata.pi_notebook` (`undefined`: the key is absent). */
interface IMark {
  tags: unknown;
  run: unknown;
}

/** The marks before and after one agent edit, kept on its undo stack item. */
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

/** The agent's edits of one notebook's cells; `cells()` gives the notebook's cells now. */
export class MarkedEdits {
  constructor(cells: () => ISharedCell[]) {
    this._cells = cells;
  }

  /** Replace `cell`'s source (now `before`) by `source`, as run `run`'s edit: one undo step, marked. */
  apply(cell: ISharedCell, before: string, source: string, run: number): void {
    const tags = tagsOf(cell);
    const marks: IEditMarks = {
      cellId: cell.getId(),
      before: markOf(cell),
      after: { tags: tags.includes(AGENT_TAG) ? tags : [...tags, AGENT_TAG], run: { run, change: 'edited' } }
    };
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
      cell.transact(() => replaceMinimal(cell, before, source));
    } finally {
      undo?.off('stack-item-added', remember);
      undo?.stopCapturing();
    }
    setMark(cell, marks.after);
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
      const cell = this._cells().find(candidate => candidate.getId() === marks.cellId);
      if (cell !== undefined) {
        setMark(cell, type === 'undo' ? marks.before : marks.after);
      }
    });
  }

  private _cells: () => ISharedCell[];
  private _followed = new WeakSet<IUndoManager>();
}
