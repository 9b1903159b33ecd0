/**
 * One notebook session's link to the kernel-side `pi_notebook.control` comm target.
 *
 * Discovery: `%load_ext pi_notebook` registers the target and lists a beacon comm for it in the kernel's
 * comm manager. This class asks `comm_info` for the target over the *control* channel (answered by the
 * kernel's control thread, even while a cell runs) and opens a comm only when the answer is non-empty, so a
 * kernel that never loaded the extension sees no failing `comm_open`. It asks when a kernel is attached,
 * after a restart, after each executed cell and on each displayed output, until connected.
 *
 * The comm lives on a kernel subshell this page creates over the control channel (./subshell.ts), so opening it,
 * `{"action": "status"}` and `{"action": "abort"}` reach the kernel while the main shell is busy: while a cell
 * `await`s the run, and while the agent's python code holds the main thread (a page reloaded mid-run connects
 * within a second). Right after the first state the kernel lists the active runs' live widgets (`views`), which
 * the page shows again where its copy of the notebook lacks them (./reattach.ts).
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import type { CellsRequest, ICellsReply, NotebookCells } from './cells';
import { Link, SubshellComm } from './subshell';

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
/** What the kernel sends (`cells`: a request about the notebook's cells; `views` once the comm opens; `activity`
 * only on the beacon, which no page opens). */
export type ControlMessageType = 'state' | 'error' | 'cells' | 'views' | 'activity';

/** An active run's live widget, as the kernel lists it in its `views` message. */
export interface IRunView {
  run: number;
  /** The ipywidgets model id of the run's widget. */
  model_id: string;
  /** The notebook cell that displayed it (null: the frontend that ran the cell did not say). */
  cell_id: string | null;
  /** The run's one-line text (`Run 3: ...`). */
  text: string;
  /** The display's bundle as of now (the widget view, its static copy, the line), when the kernel could make it. */
  data?: Record<string, unknown>;
  /** The display's metadata. */
  metadata?: Record<string, unknown>;
}

/** The kernel's `views` message. */
export interface IViews {
  type: 'views';
  /** Names the kernel process; its run widgets carry the class `pi-proc-<process>`. */
  process: string;
  views: IRunView[];
}

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

const REFRESH_INTERVAL_MS = 250;
/** A failed probe (a request lost when a connection closed) is tried again this often, this many times. */
const PROBE_RETRY_MS = 1000;
const PROBE_RETRIES = 10;

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
    this._link?.retire();
    this._link = null;
    this._probeRetries = 0;
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
      this._link?.retire();
      this._link = null;
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
        // What carries this page's messages while its connection holds them back (./subshell.ts): one per kernel.
        if (this._link === null) {
          const opened = await Link.open(kernel);
          if (kernel !== this._kernel) {
            opened.retire(); // the kernel changed meanwhile: this link is the old kernel's
            continue; // probes again if the change asked to
          }
          this._link = opened;
        }
        const link = this._link;
        if (await this._targetRegistered(kernel, link)) {
          await this._open(kernel, link);
        }
      } while (this._probeAgain);
    } catch (error) {
      // A kernel that is restarting or gone (the next status change probes again), or a request lost on the way:
      // try again shortly, a few times, since nothing else may prompt a probe while the kernel's main thread is
      // held (no cell ends, nothing is displayed).
      console.debug('pi-notebook: control probe failed', error);
      this._retryProbe();
    } finally {
      this._probing = false;
    }
  }

  private _retryProbe(): void {
    if (this._probeRetries >= PROBE_RETRIES || this._isDisposed) {
      return;
    }
    this._probeRetries++;
    const kernel = this._kernel;
    window.setTimeout(() => {
      if (kernel === this._kernel && this._comm === null) {
        void this._probe();
      }
    }, PROBE_RETRY_MS);
  }

  /** `comm_info` for our target over the control channel (served even while a cell runs). */
  private async _targetRegistered(kernel: Kernel.IKernelConnection, link: Link): Promise<boolean> {
    if (kernel !== this._kernel || kernel.isDisposed) {
      return false;
    }
    const reply = await link.control('comm_info_request', { target_name: TARGET });
    const comms = (reply.comms ?? {}) as Record<string, unknown>;
    return Object.keys(comms).length > 0;
  }

  private async _open(kernel: Kernel.IKernelConnection, link: Link): Promise<void> {
    const generation = this._generation;
    // A subshell of this page's own, made over the control channel: the kernel serves the comm on its thread
    // whatever its main thread does. Without subshells (another kernel), the main shell.
    const subshell = await link.createSubshell();
    let comm: Kernel.IComm;
    if (subshell === null) {
      comm = kernel.createComm(TARGET);
    } else {
      comm = new SubshellComm(kernel, link, TARGET, subshell);
    }
    comm.onMsg = msg => {
      if (this._comm !== comm) {
        return;
      }
      const data = msg.content.data as unknown as
        | IRunState
        | CellsRequest
        | IViews
        | { type: Exclude<ControlMessageType, 'state' | 'cells' | 'views'>; error: string };
      if (data.type === 'state') {
        this._setState(data);
      } else if (data.type === 'cells') {
        this._answerCells(comm, data);
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
    if (generation !== this._generation || comm.isDisposed || kernel.isDisposed) {
      comm.dispose(); // the kernel restarted or changed meanwhile
      return;
    }
    // The kernel answers with the current state. `cells` and `path`: this page can act on this notebook's cells.
    comm.open(this._cells === null ? {} : { cells: 1, path: this._sessionContext.path });
    this._comm = comm;
    this._probeRetries = 0;
  }

  /** Act on a cells request and send the answer (none for a notification). */
  private _answerCells(comm: Kernel.IComm, request: CellsRequest): void {
    const answer = this._cells?.handle(request) ?? null;
    if (answer instanceof Promise) {
      void answer.then(reply => this._reply(comm, reply)); // a question the user answers (./rewind.ts)
    } else {
      this._reply(comm, answer);
    }
  }

  private _reply(comm: Kernel.IComm, reply: ICellsReply | null): void {
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
    this._process = null;
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
  private _link: Link | null = null;
  private _comm: Kernel.IComm | null = null;
  private _state: IRunState | null = null;
  private _retryAt = 0;
  private _probing = false;
  private _probeRetries = 0;
  private _probeAgain = false;
  private _afterRestart = false;
  private _generation = 0;
  private _lastRefresh = 0;
  private _refreshTimer: number | null = null;
  private _isDisposed = false;
  private _changed = new Signal<this, void>(this);
  private _views = new Signal<this, IRunView[]>(this);
  private _process: string | null = null;
}
