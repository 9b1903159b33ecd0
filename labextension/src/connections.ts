import { ISessionContext } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { NotebookCells } from './cells';
import { ControlConnection } from './control';

/**
 * One control connection per session context (two views of one notebook share it), which also acts on that
 * notebook's cells for the agent's cell tools (./cells.ts).
 */
export class Connections {
  constructor(tracker: INotebookTracker) {
    this._tracker = tracker;
  }

  get(sessionContext: ISessionContext): ControlConnection {
    let connection = this._map.get(sessionContext);
    if (connection === undefined) {
      const panel = (): NotebookPanel | null =>
        this._tracker.find(candidate => candidate.sessionContext === sessionContext) ?? null;
      connection = new ControlConnection(sessionContext, new NotebookCells(panel));
      this._map.set(sessionContext, connection);
      sessionContext.disposed.connect(() => {
        this._map.get(sessionContext)?.dispose();
        this._map.delete(sessionContext);
      });
    }
    return connection;
  }

  private _tracker: INotebookTracker;
  private _map = new Map<ISessionContext, ControlConnection>();
}
