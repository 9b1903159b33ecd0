/**
 * Finding the kernel-side `pi_notebook.control` comm target of one notebook session, and opening a comm to it.
 *
 * `%load_ext pi_notebook` registers the target and lists a beacon comm for it in the kernel's comm manager.
 * {@link Discovery} asks `comm_info` for the target over the *control* channel (answered by the kernel's control
 * thread, even while a cell runs) and opens a comm only when the answer is non-empty, so a kernel that never loaded
 * the extension sees no failing `comm_open`. It asks when a kernel is attached, after a restart, after each executed
 * cell and on each displayed output, until connected.
 *
 * The comm lives on a kernel subshell this page creates over the control channel (./subshell.ts), so opening it and
 * the messages on it reach the kernel while the main shell is busy: while a cell `await`s the run, and while the
 * agent's python code holds the main thread (a page reloaded mid-run connects within a second).
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { IDisposable } from '@lumino/disposable';

import { TARGET } from './protocol';
import { Link, SubshellComm } from './subshell';

/** What discovery tells the connection it serves (./control.ts). */
export interface IDiscoveryHost {
  /** Whether a comm to the target is open: nothing to look for meanwhile. */
  hasComm(): boolean;
  /** The kernel changed, is restarting or died: forget its comm (`close`: the kernel is alive to be told). */
  forget(close: boolean): void;
  /** A comm to the target, not opened yet: the host sets its handlers and opens it. */
  attach(comm: Kernel.IComm): void;
  /** A cell ended or showed an output (it may have loaded pi_notebook or started a run): ask again. */
  refresh(): void;
}

const REFRESH_INTERVAL_MS = 250;
/** A failed probe (a request lost when a connection closed) is tried again this often, this many times. */
const PROBE_RETRY_MS = 1000;
const PROBE_RETRIES = 10;

export class Discovery implements IDisposable {
  constructor(sessionContext: ISessionContext, host: IDiscoveryHost) {
    this._sessionContext = sessionContext;
    this._host = host;
    sessionContext.kernelChanged.connect(this._onKernelChanged, this);
    this._setKernel(sessionContext.session?.kernel ?? null);
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** Look for the target now (unless a comm is open, or a look is under way: then once more after it). */
  async probe(): Promise<void> {
    if (this._probing) {
      this._probeAgain = true;
      return;
    }
    this._probing = true;
    try {
      do {
        this._probeAgain = false;
        const kernel = this._kernel;
        if (kernel === null || this._host.hasComm() || this._isDisposed) {
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
  }

  private _onKernelChanged(_: ISessionContext, change: { newValue: Kernel.IKernelConnection | null }): void {
    this._setKernel(change.newValue);
  }

  private _setKernel(kernel: Kernel.IKernelConnection | null): void {
    const old = this._kernel;
    if (old !== null) {
      old.statusChanged.disconnect(this._onStatus, this);
      old.iopubMessage.disconnect(this._onIopub, this);
    }
    this._forget(old !== null && !old.isDisposed && old.status !== 'dead');
    this._kernel = kernel;
    this._probeRetries = 0;
    if (kernel !== null) {
      kernel.statusChanged.connect(this._onStatus, this);
      kernel.iopubMessage.connect(this._onIopub, this);
      void this.probe();
    }
  }

  /** The kernel's comm and link are gone with it (or are the old kernel's). */
  private _forget(close: boolean): void {
    this._generation++;
    this._host.forget(close);
    this._link?.retire();
    this._link = null;
  }

  private _onStatus(kernel: Kernel.IKernelConnection, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      // The kernel's comms are gone with it; probe again once it is back.
      this._forget(false);
      this._afterRestart = true;
    } else if (status === 'idle' && this._afterRestart) {
      this._afterRestart = false;
      void this.probe();
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

  /** The host's `refresh()` at most once per REFRESH_INTERVAL_MS: a cell may display many outputs. */
  private _refreshSoon(): void {
    if (this._refreshTimer !== null) {
      return;
    }
    const wait = Math.max(0, this._lastRefresh + REFRESH_INTERVAL_MS - Date.now());
    this._refreshTimer = window.setTimeout(() => {
      this._refreshTimer = null;
      this._lastRefresh = Date.now();
      this._host.refresh();
    }, wait);
  }

  private _retryProbe(): void {
    if (this._probeRetries >= PROBE_RETRIES || this._isDisposed) {
      return;
    }
    this._probeRetries++;
    const kernel = this._kernel;
    window.setTimeout(() => {
      if (kernel === this._kernel && !this._host.hasComm()) {
        void this.probe();
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
    const comm = subshell === null ? kernel.createComm(TARGET) : new SubshellComm(kernel, link, TARGET, subshell);
    if (generation !== this._generation || comm.isDisposed || kernel.isDisposed) {
      comm.dispose(); // the kernel restarted or changed meanwhile
      return;
    }
    this._host.attach(comm);
    this._probeRetries = 0;
  }

  private _sessionContext: ISessionContext;
  private _host: IDiscoveryHost;
  private _kernel: Kernel.IKernelConnection | null = null;
  private _link: Link | null = null;
  private _probing = false;
  private _probeRetries = 0;
  private _probeAgain = false;
  private _afterRestart = false;
  private _generation = 0;
  private _lastRefresh = 0;
  private _refreshTimer: number | null = null;
  private _isDisposed = false;
}
