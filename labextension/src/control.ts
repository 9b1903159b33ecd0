/**
 * One notebook session's link to the kernel-side `pi_notebook.control` comm target.
 *
 * Discovery: `%load_ext pi_notebook` registers the target and lists a beacon comm for it in the kernel's
 * comm manager. This class asks `comm_info` for the target over the *control* channel (answered by the
 * kernel's control thread, even while a cell runs) and opens a comm only when the answer is non-empty, so a
 * kernel that never loaded the extension sees no failing `comm_open`. It asks when a kernel is attached,
 * after a restart, after each executed cell and on each displayed output, until connected.
 *
 * The comm is opened once its subshell exists (JupyterLab >= 4.4 sends comm messages over a kernel subshell
 * per comm target), so opening and `{"action": "abort"}` reach the kernel while the main shell is busy,
 * e.g. while a cell `await`s the run.
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import type { CellsRequest, NotebookCells } from './cells';

export const TARGET = 'pi_notebook.control';

// The protocol's one definition is Python's (pi_notebook/notebook/_protocol.py); tests/test_protocol.py checks
// that these unions match it.

/** A run's state; `idle`: no run yet. */
export type RunStatus =
  | 'idle'
  | 'starting'
  | 'streaming'
  | 'running tool'
  | 'awaiting approval'
  | 'retrying'
  | 'compacting'
  | 'settled'
  | 'aborted'
  | 'error';
/** States in which a run can be stopped. */
export type ActiveStatus = 'starting' | 'streaming' | 'running tool' | 'awaiting approval' | 'retrying' | 'compacting';
/** What the frontend asks of the kernel (`cells`: the answer to a cells request, see ./cells.ts). */
export type ControlAction = 'abort' | 'status' | 'cells';
/** What the kernel sends (`cells`: a request about the notebook's cells). */
export type ControlMessageType = 'state' | 'error' | 'cells';

/** What the kernel sends: see `pi_notebook/notebook/_control_comm.py`. */
export interface IRunState {
  type: 'state';
  state: RunStatus;
  run: number | null;
  aborted: boolean;
  /** Epoch ms of the next retry attempt (kernel clock), 0 when not retrying. */
  retry_deadline: number;
  /** Whole seconds the run has waited for data from the model (0: not silent long enough to say). */
  silent_s?: number;
  /** "waiting for the code to return to Python" while the agent's code ignores a Stop; "" otherwise. */
  note?: string;
  /** Kernel clock (epoch ms) when the message was made. */
  now?: number;
  /** Set on replies: the action answered. */
  reply?: ControlAction;
}

/** States in which a run is active: the toolbar's Stop button shows. */
export const ACTIVE_STATES = new Set<string>([
  'starting',
  'streaming',
  'running tool',
  'awaiting approval',
  'retrying',
  'compacting'
] satisfies ActiveStatus[]);

/** The status bar text for a state; `retryAt` is the browser-clock time of the next retry. */
export function statusText(state: IRunState | null, retryAt: number, now: number = Date.now()): string {
  if (state === null) {
    return '';
  }
  switch (state.state) {
    case 'retrying': {
      const seconds = Math.max(0, Math.ceil((retryAt - now) / 1000));
      return `pi: retry in ${seconds} s`;
    }
    case 'settled':
      return state.aborted ? 'pi: settled (aborted)' : 'pi: settled';
    case 'aborted':
      return 'pi: settled (aborted)';
    case 'error':
      return 'pi: settled (error)';
    default:
      if (state.note) {
        return `pi: ${state.state}, ${state.note}`;
      }
      return state.silent_s ? `pi: ${state.state}, no data for ${state.silent_s} s` : `pi: ${state.state}`;
  }
}

const SUBSHELL_WAIT_MS = 5000;
const INFO_WAIT_MS = 1000;
const REFRESH_INTERVAL_MS = 250;

function delay(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

export class ControlConnection implements IDisposable {
  /** `cells` acts on the notebook's cells for the agent's cell tools (a connection without it offers none). */
  constructor(sessionContext: ISessionContext, cells: NotebookCells | null = null) {
    this._sessionContext = sessionContext;
    this._cells = cells;
    sessionContext.kernelChanged.connect(this._onKernelChanged, this);
    this._setKernel(sessionContext.session?.kernel ?? null);
  }

  /** Emitted when the connection or the run state changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
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

  /** Ask the kernel for its state (the reply arrives as a state message). */
  refresh(): void {
    if (this._comm !== null) {
      this._send({ action: 'status' });
    } else {
      void this._probe();
    }
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this._sessionContext.kernelChanged.disconnect(this._onKernelChanged, this);
    this._setKernel(null);
    if (this._refreshTimer !== null) {
      window.clearTimeout(this._refreshTimer);
    }
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

  private _onKernelChanged(
    _: ISessionContext,
    change: { newValue: Kernel.IKernelConnection | null }
  ): void {
    this._setKernel(change.newValue);
  }

  private _setKernel(kernel: Kernel.IKernelConnection | null): void {
    const old = this._kernel;
    if (old !== null) {
      old.statusChanged.disconnect(this._onStatus, this);
      old.iopubMessage.disconnect(this._onIopub, this);
      this._dropComm(!old.isDisposed && old.status !== 'dead');
    }
    this._kernel = kernel;
    this._setState(null);
    if (kernel !== null) {
      kernel.statusChanged.connect(this._onStatus, this);
      kernel.iopubMessage.connect(this._onIopub, this);
      void this._probe();
    }
  }

  private _onStatus(kernel: Kernel.IKernelConnection, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      // The kernel's comms are gone with it; probe again once it is back.
      this._dropComm(false);
      this._setState(null);
      this._afterRestart = true;
    } else if (status === 'idle' && this._afterRestart) {
      this._afterRestart = false;
      void this._probe();
    }
  }

  private _onIopub(kernel: Kernel.IKernelConnection, msg: KernelMessage.IIOPubMessage): void {
    const type = msg.header.msg_type;
    const parent = (msg.parent_header as Partial<KernelMessage.IHeader>)?.msg_type;
    const cellDone =
      type === 'status' &&
      (msg.content as KernelMessage.IStatusMsg['content']).execution_state === 'idle' &&
      parent === 'execute_request';
    // A cell finished (it may have run `%load_ext pi_notebook` or started a run), or showed an output (a
    // run's widget appears while the cell may still be busy awaiting it): look again.
    if (cellDone || type === 'display_data' || type === 'execute_result') {
      this._refreshSoon();
    }
  }

  /** `refresh()` at most once per REFRESH_INTERVAL_MS: a cell may display many outputs. */
  private _refreshSoon(): void {
    if (this._refreshTimer !== null) {
      return;
    }
    const wait = Math.max(0, this._lastRefresh + REFRESH_INTERVAL_MS - Date.now());
    this._refreshTimer = window.setTimeout(() => {
      this._refreshTimer = null;
      this._lastRefresh = Date.now();
      this.refresh();
    }, wait);
  }

  private async _probe(): Promise<void> {
    if (this._probing) {
      this._probeAgain = true;
      return;
    }
    this._probing = true;
    try {
      do {
        this._probeAgain = false;
        const kernel = this._kernel;
        if (kernel === null || this._comm !== null || this._isDisposed) {
          return;
        }
        if (await this._targetRegistered(kernel)) {
          await this._open(kernel);
        }
      } while (this._probeAgain);
    } catch (error) {
      // A kernel that is restarting or gone; the next status change probes again.
      console.debug('pi-notebook: control probe failed', error);
    } finally {
      this._probing = false;
    }
  }

  /** `comm_info` for our target over the control channel (served even while a cell runs). */
  private async _targetRegistered(kernel: Kernel.IKernelConnection): Promise<boolean> {
    // The kernel_info reply tells whether the kernel has subshells; but a page that connects while a cell
    // runs gets it only when the cell ends (it goes to the busy main shell), so do not wait long for it.
    await Promise.race([kernel.info, delay(INFO_WAIT_MS)]);
    if (kernel !== this._kernel || kernel.isDisposed) {
      return false;
    }
    const msg = KernelMessage.createMessage<any>({
      msgType: 'comm_info_request',
      channel: 'control',
      session: kernel.clientId,
      username: kernel.username,
      content: { target_name: TARGET }
    });
    const reply = await kernel.sendControlMessage(msg, true, true).done;
    const comms = (reply.content as { comms?: Record<string, unknown> }).comms ?? {};
    return Object.keys(comms).length > 0;
  }

  private async _open(kernel: Kernel.IKernelConnection): Promise<void> {
    const generation = this._generation;
    const comm = kernel.createComm(TARGET);
    comm.onMsg = msg => {
      if (this._comm !== comm) {
        return;
      }
      const data = msg.content.data as unknown as
        | IRunState
        | CellsRequest
        | { type: Exclude<ControlMessageType, 'state' | 'cells'>; error: string };
      if (data.type === 'state') {
        this._setState(data);
      } else if (data.type === 'cells') {
        this._answerCells(comm, data);
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
    // Open on the comm target's subshell when the kernel has subshells, so the kernel serves this comm
    // while its main shell is busy (a cell awaiting a run). Before the kernel_info reply JupyterLab sends
    // comm messages to the main shell, which ipykernel >= 7.4 also serves while a cell awaits.
    const started = (comm as { subshellStarted?: Promise<void> }).subshellStarted;
    if (kernel.supportsSubshells && comm.commsOverSubshells !== 'disabled' && started !== undefined) {
      await Promise.race([started, delay(SUBSHELL_WAIT_MS)]);
    }
    if (generation !== this._generation || comm.isDisposed || kernel.isDisposed) {
      comm.dispose(); // the kernel restarted or changed meanwhile
      return;
    }
    // The kernel answers with the current state. `cells` and `path`: this page can act on this notebook's cells.
    comm.open(this._cells === null ? {} : { cells: 1, path: this._sessionContext.path });
    this._comm = comm;
  }

  /** Act on a cells request and send the answer (none for a notification). */
  private _answerCells(comm: Kernel.IComm, request: CellsRequest): void {
    const reply = this._cells?.handle(request) ?? null;
    if (reply !== null && !comm.isDisposed) {
      try {
        comm.send(reply as unknown as Parameters<Kernel.IComm['send']>[0]);
      } catch (error) {
        console.warn('pi-notebook: could not answer the kernel', error);
      }
    }
  }

  private _dropComm(close: boolean): void {
    this._generation++;
    const comm = this._comm;
    this._comm = null;
    if (comm === null || comm.isDisposed) {
      return;
    }
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

  private _setState(state: IRunState | null): void {
    if (state !== null && state.retry_deadline > 0) {
      // The protocol's countdown rule (see _protocol.py, and retryAt in js/run-view/src/protocol.ts): the
      // kernel's remaining time, counted on the browser clock from when the message arrived.
      const remaining = state.retry_deadline - (state.now ?? Date.now());
      this._retryAt = Date.now() + remaining;
    } else {
      this._retryAt = 0;
    }
    this._state = state;
    this._changed.emit();
  }

  private _sessionContext: ISessionContext;
  private _cells: NotebookCells | null;
  private _kernel: Kernel.IKernelConnection | null = null;
  private _comm: Kernel.IComm | null = null;
  private _state: IRunState | null = null;
  private _retryAt = 0;
  private _probing = false;
  private _probeAgain = false;
  private _afterRestart = false;
  private _generation = 0;
  private _lastRefresh = 0;
  private _refreshTimer: number | null = null;
  private _isDisposed = false;
  private _changed = new Signal<this, void>(this);
}
