/**
 * One notebook session's link to the kernel-side `pi_notebook.control` comm target: the comm, the run state the
 * kernel reports on it, and the actions sent over it.
 *
 * ./discovery.ts finds the target and opens the comm (on a subshell of its own, ./subshell.ts, so `{"action":
 * "status"}` and `{"action": "abort"}` reach the kernel while its main shell is busy). Over the comm the kernel sends
 * its state (when the comm opens, when a run changes state, as the reply to each action), requests about the
 * notebook's cells (answered by ./cells.ts), and, right after the first state, the active runs' live widgets
 * (`views`), which the page shows again where its copy of the notebook lacks them (./reattach.ts). The messages are
 * in ./protocol.ts.
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { Kernel } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import type { NotebookCells } from './cells';
import type { CellsRequest } from './cellProtocol';
import { Discovery } from './discovery';
import { ACTIVE_STATES, ControlAction, IControlError, IRunState, IRunView, IViews } from './protocol';
import { retryAtOf, statusText } from './status';

export class ControlConnection implements IDisposable {
  /** `cells` acts on the notebook's cells for the agent's cell tools (a connection without it offers none). */
  constructor(sessionContext: ISessionContext, cells: NotebookCells | null = null) {
    this._sessionContext = sessionContext;
    this._cells = cells;
    this._discovery = new Discovery(sessionContext, {
      hasComm: () => this._comm !== null,
      forget: close => this._forget(close),
      attach: comm => this._attach(comm),
      refresh: () => this.refresh()
    });
  }

  /** Emitted when the connection or the run state changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Emitted with the kernel's `views` (the active runs' live widgets) each time the comm opens. */
  get views(): ISignal<this, IRunView[]> {
    return this._views;
  }

  /** The kernel process this page is connected to (from its `views`), null while not connected. */
  get process(): string | null {
    return this._process;
  }

  /** A comm to the kernel's control target is open and has reported a state. */
  get connected(): boolean {
    return this._comm !== null && this._state !== null;
  }

  /** The last state the kernel reported (null while not connected). */
  get state(): IRunState | null {
    return this._state;
  }

  /** A run is active in this kernel. */
  get active(): boolean {
    return this._state !== null && ACTIVE_STATES.has(this._state.state);
  }

  /** Browser-clock time (ms) of the next retry attempt, from the kernel's `retry_deadline`. */
  get retryAt(): number {
    return this._retryAt;
  }

  get text(): string {
    return statusText(this._state, this._retryAt);
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /**
   * Send `{"action": "abort"}`: the kernel stops every active run as the run widget's Stop does (with `run`,
   * only that run). The kernel also interrupts the agent's python code on the comm's thread at once.
   */
  abort(run?: number): boolean {
    return this._send(run === undefined ? { action: 'abort' } : { action: 'abort', run });
  }

  /** Ask the kernel for its state (the reply arrives as a state message); not connected: look for the target. */
  refresh(): void {
    if (this._comm !== null) {
      this._send({ action: 'status' });
    } else {
      void this._discovery.probe();
    }
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._discovery.dispose();
    Signal.clearData(this);
  }

  private _send(data: { action: ControlAction; run?: number }): boolean {
    const comm = this._comm;
    if (comm === null || comm.isDisposed) {
      return false;
    }
    try {
      comm.send(data);
      return true;
    } catch (error) {
      console.warn('pi-notebook: could not send to the kernel', error);
      return false;
    }
  }

  /** The comm discovery made: route its messages, and open it (the kernel answers with the current state). */
  private _attach(comm: Kernel.IComm): void {
    comm.onMsg = msg => {
      if (this._comm !== comm) {
        return;
      }
      const data = msg.content.data as unknown as IRunState | CellsRequest | IViews | IControlError;
      if (data.type === 'state') {
        this._setState(data);
      } else if (data.type === 'cells') {
        this._cells?.answer(data, comm);
      } else if (data.type === 'views') {
        this._process = data.process;
        this._views.emit(data.views);
      } else {
        console.warn('pi-notebook:', data.error);
      }
    };
    comm.onClose = () => {
      if (this._comm === comm) {
        this._comm = null;
        this._setState(null);
      }
    };
    // `cells` and `path`: this page can act on this notebook's cells.
    comm.open(this._cells === null ? {} : { cells: 1, path: this._sessionContext.path });
    this._comm = comm;
  }

  /** The kernel changed, is restarting or died: its comm is gone (`close`: tell the kernel), and so is the state. */
  private _forget(close: boolean): void {
    const comm = this._comm;
    this._comm = null;
    this._process = null;
    if (comm !== null && !comm.isDisposed) {
      try {
        if (close) {
          comm.close();
        } else {
          comm.dispose();
        }
      } catch {
        comm.dispose();
      }
    }
    this._setState(null);
  }

  private _setState(state: IRunState | null): void {
    this._retryAt = retryAtOf(state);
    this._state = state;
    this._changed.emit();
  }

  private _sessionContext: ISessionContext;
  private _cells: NotebookCells | null;
  private _discovery: Discovery;
  private _comm: Kernel.IComm | null = null;
  private _state: IRunState | null = null;
  private _retryAt = 0;
  private _isDisposed = false;
  private _changed = new Signal<this, void>(this);
  private _views = new Signal<this, IRunView[]>(this);
  private _process: string | null = null;
}
