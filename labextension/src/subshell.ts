/**
 * The control comm on a kernel subshell of its own, reachable within a second of the page connecting even while
 * the agent's python code holds the kernel's main thread (a page reloaded mid-run, a second window).
 *
 * Two things stand in the way, and both wait for the kernel's answer to `kernel_info` on its *shell* channel, which
 * only the main thread gives:
 * - JupyterLab puts a comm on a subshell (`commsOverSubshells`) only once it knows the kernel has subshells, from
 *   that answer; until then comm messages go to the busy main shell.
 * - A kernel connection holds every message sent while it was connecting, and everything sent after them, until
 *   that answer comes or 3 s have passed (JupyterLab's `kernelInfoTimeout`).
 * The kernel's control thread answers at any time. So while the page's connection has no `kernel_info` answer, a
 * second connection to the kernel (`Link`, JupyterLab's `kernel.clone()`, which holds nothing back) carries this
 * page's messages: it asks the control channel whether the kernel has subshells (`kernel_info_request`) and creates
 * one (`create_subshell_request`), and the comm's messages go out with that subshell's id. The link is closed once
 * the page's own connection sends at once again (it has its answer, or has waited out its timeout), since it
 * receives a copy of everything the kernel publishes.
 *
 * `SubshellComm` is the comm: messages to the kernel go out with the subshell id; the kernel's messages on it reach
 * `onMsg`/`onClose` through a comm registered with the page's connection (told not to start a subshell of its own).
 * Its subshell is deleted when it is disposed or the page goes away.
 */
import { CommsOverSubshells, Kernel, KernelMessage } from '@jupyterlab/services';
import type { JSONObject, JSONValue } from '@lumino/coreutils';

/** How long a control request may wait for its reply: a reply lost on the way (seen through a kernel gateway, for a
 * page reloaded while the kernel's main thread was held) must not leave the page waiting for ever. */
const REPLY_WAIT_MS = 5000;
/** How long the page's connection may take to answer `kernel_info` before a link carries its messages. */
const INFO_GRACE_MS = 300;
/** After connecting, how long the page's connection may hold messages back (JupyterLab's default 3000 ms, with
 * room). */
const HOLD_BACK_MS = 4000;

function delay(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

function connected(kernel: Kernel.IKernelConnection): Promise<void> {
  return new Promise(resolve => {
    const check = (): void => {
      if (kernel.connectionStatus === 'connected' || kernel.isDisposed) {
        kernel.connectionStatusChanged.disconnect(check);
        resolve();
      }
    };
    kernel.connectionStatusChanged.connect(check);
    check();
  });
}

/** What carries this page's messages to one kernel: the page's own connection, or a link while that one holds
 * messages back (see the module comment). */
export class Link {
  /** A link for `kernel`, ready to send. */
  static async open(kernel: Kernel.IKernelConnection): Promise<Link> {
    await connected(kernel);
    const answered = await Promise.race([kernel.info.then(() => true), delay(INFO_GRACE_MS).then(() => false)]);
    if (answered || kernel.isDisposed) {
      return new Link(kernel, null);
    }
    const clone = kernel.clone({ handleComms: false });
    await connected(clone);
    return new Link(kernel, clone);
  }

  private constructor(kernel: Kernel.IKernelConnection, clone: Kernel.IKernelConnection | null) {
    this._kernel = kernel;
    this._clone = clone;
    if (clone !== null) {
      void Promise.race([kernel.info, delay(HOLD_BACK_MS)]).then(() => this.retire());
    }
  }

  /** The connection to send on now. */
  get sender(): Kernel.IKernelConnection {
    return this._retiring ? this._kernel : (this._clone ?? this._kernel);
  }

  /** Send on the page's own connection from now on; the link closes once the requests it carries are answered
   * (a reply comes back only on the connection that sent the request). */
  retire(): void {
    this._retiring = true;
    if (this._waiting === 0) {
      const clone = this._clone;
      this._clone = null;
      clone?.dispose();
    }
  }

  /** Ask the kernel's control thread; the reply's content. */
  async control(msgType: string, content: JSONObject): Promise<Record<string, unknown>> {
    const sender = this.sender;
    const msg = KernelMessage.createMessage<any>({
      msgType,
      channel: 'control',
      session: sender.clientId,
      username: sender.username,
      content
    });
    this._waiting++;
    const future = sender.sendControlMessage(msg, true, true);
    let timer = 0;
    const late = new Promise<never>((_, reject) => {
      timer = window.setTimeout(() => reject(new Error(`no ${msgType} reply within ${REPLY_WAIT_MS} ms`)), REPLY_WAIT_MS);
    });
    try {
      const reply = await Promise.race([future.done, late]);
      return reply.content as Record<string, unknown>;
    } catch (error) {
      future.dispose();
      throw error;
    } finally {
      window.clearTimeout(timer);
      this._waiting--;
      if (this._retiring) {
        this.retire();
      }
    }
  }

  /** A new subshell, made over the control channel; `null` when the kernel has none (ipykernel < 7, others). */
  async createSubshell(): Promise<string | null> {
    const info = await this.control('kernel_info_request', {});
    const features = info.supported_features;
    if (!Array.isArray(features) || !features.includes('kernel subshells')) {
      return null;
    }
    const reply = await this.control('create_subshell_request', {});
    return typeof reply.subshell_id === 'string' ? reply.subshell_id : null;
  }

  deleteSubshell(subshellId: string): void {
    if (this._kernel.isDisposed || this._kernel.status === 'dead') {
      return;
    }
    void this.control('delete_subshell_request', { subshell_id: subshellId }).catch(() => undefined);
  }

  private _kernel: Kernel.IKernelConnection;
  private _clone: Kernel.IKernelConnection | null;
  private _retiring = false;
  private _waiting = 0;
}

/** Comms this page opened on a subshell and has not disposed, so their subshells go when the page goes. */
const live = new Set<SubshellComm>();
let listening = false;

/** A comm whose messages to the kernel go to one subshell (see the module comment). */
export class SubshellComm implements Kernel.IComm {
  constructor(kernel: Kernel.IKernelConnection, link: Link, targetName: string, subshellId: string) {
    this._kernel = kernel;
    this._link = link;
    this._subshellId = subshellId;
    this._inner = kernel.createComm(targetName);
    // Before JupyterLab would start a subshell of its own for this comm (it does once kernel_info is answered).
    this._inner.commsOverSubshells = CommsOverSubshells.Disabled;
    live.add(this);
    if (!listening) {
      listening = true;
      window.addEventListener('pagehide', () => live.forEach(comm => comm.dispose()));
    }
  }

  get commId(): string {
    return this._inner.commId;
  }

  get targetName(): string {
    return this._inner.targetName;
  }

  get subshellId(): string {
    return this._subshellId;
  }

  get onMsg(): Kernel.IComm['onMsg'] {
    return this._inner.onMsg;
  }

  set onMsg(callback: Kernel.IComm['onMsg']) {
    this._inner.onMsg = callback;
  }

  get onClose(): Kernel.IComm['onClose'] {
    return this._inner.onClose;
  }

  set onClose(callback: Kernel.IComm['onClose']) {
    this._inner.onClose = callback;
  }

  get isDisposed(): boolean {
    return this._inner.isDisposed;
  }

  open(data?: JSONValue, metadata?: JSONObject, buffers: (ArrayBuffer | ArrayBufferView)[] = []): Kernel.IShellFuture {
    const content = { comm_id: this.commId, target_name: this.targetName, data: data ?? {} };
    return this._shell('comm_open', content, metadata, buffers);
  }

  send(
    data: JSONValue,
    metadata?: JSONObject,
    buffers: (ArrayBuffer | ArrayBufferView)[] = [],
    disposeOnDone = true
  ): Kernel.IShellFuture {
    return this._shell('comm_msg', { comm_id: this.commId, data }, metadata, buffers, disposeOnDone);
  }

  close(data?: JSONValue, metadata?: JSONObject, buffers: (ArrayBuffer | ArrayBufferView)[] = []): Kernel.IShellFuture {
    const future = this._shell('comm_close', { comm_id: this.commId, data: data ?? {} }, metadata, buffers);
    this.dispose();
    return future;
  }

  dispose(): void {
    if (!live.delete(this)) {
      return;
    }
    this._inner.dispose();
    this._link.deleteSubshell(this._subshellId);
    this._link.retire();
  }

  private _shell(
    msgType: 'comm_open' | 'comm_msg' | 'comm_close',
    content: JSONObject,
    metadata: JSONObject | undefined,
    buffers: (ArrayBuffer | ArrayBufferView)[],
    disposeOnDone = true
  ): Kernel.IShellFuture {
    const sender = this._link.sender;
    if (this.isDisposed || sender.isDisposed || this._kernel.isDisposed) {
      throw new Error('Cannot send: the comm or its kernel is gone');
    }
    const msg = KernelMessage.createMessage<any>({
      msgType,
      channel: 'shell',
      session: sender.clientId,
      username: sender.username,
      subshellId: this._subshellId,
      content,
      metadata,
      buffers
    });
    return sender.sendShellMessage(msg, false, disposeOnDone);
  }

  private _kernel: Kernel.IKernelConnection;
  private _link: Link;
  private _subshellId: string;
  private _inner: Kernel.IComm;
}
