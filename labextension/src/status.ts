/**
 * The run's state as the page shows it: the status bar text ("pi: streaming", "pi: retry in 3 s", "pi: settled
 * (aborted)", ...), the retry countdown, and the status bar item for the current notebook.
 */
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import type { ControlConnection } from './control';
import type { IRunState } from './protocol';

/** The toolbar button's and the command's label. */
export const STOP_LABEL = 'Stop agent run';

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

/**
 * Browser-clock time (ms) of the next retry attempt, 0 when not retrying. The protocol's countdown rule (see
 * pi_notebook/notebook/widget/_protocol.py, and retryAt in js/run-view/src/protocol.ts): the kernel's remaining
 * time, counted on the browser clock from when the message arrived.
 */
export function retryAtOf(state: IRunState | null): number {
  if (state !== null && state.retry_deadline > 0) {
    const remaining = state.retry_deadline - (state.now ?? Date.now());
    return Date.now() + remaining;
  }
  return 0;
}

/** The status bar item: the current notebook's run state, with a retry countdown. */
export class StatusItem extends Widget {
  constructor() {
    super({ node: document.createElement('span') });
    this.addClass('pi-StatusItem');
    this.addClass('jp-StatusBar-TextItem');
    this.node.setAttribute('data-pi-status', '');
  }

  readonly activeStateChanged = new Signal<this, void>(this);

  get connection(): ControlConnection | null {
    return this._connection;
  }

  set connection(connection: ControlConnection | null) {
    if (connection === this._connection) {
      return;
    }
    this._connection?.changed.disconnect(this._update, this);
    this._connection = connection;
    connection?.changed.connect(this._update, this);
    this._update();
  }

  /** Shown when the current notebook's kernel has loaded pi_notebook. */
  get shown(): boolean {
    return this._connection?.connected ?? false;
  }

  dispose(): void {
    this._stopTicking();
    super.dispose();
  }

  private _showText(): string {
    const text = this._connection?.text ?? '';
    this.node.textContent = text;
    this.node.setAttribute('data-pi-status', text);
    return text;
  }

  private _update(): void {
    const connection = this._connection;
    const text = this._showText();
    this.node.setAttribute('data-pi-active', String(connection?.active ?? false));
    const state = connection?.state;
    this.node.title = state
      ? `pi_notebook${state.run ? `, run ${state.run}` : ''}: ${text.replace('pi: ', '')}` +
        (connection?.active ? ` — ${STOP_LABEL}: Ctrl+. (Cmd+. on macOS)` : '')
      : '';
    if (state?.state === 'retrying') {
      this._startTicking();
    } else {
      this._stopTicking();
    }
    if (this.shown !== this._wasShown) {
      this._wasShown = this.shown;
      this.activeStateChanged.emit();
    }
  }

  private _startTicking(): void {
    if (this._timer === null) {
      this._timer = window.setInterval(() => this._showText(), 250);
    }
  }

  private _stopTicking(): void {
    if (this._timer !== null) {
      window.clearInterval(this._timer);
      this._timer = null;
    }
  }

  private _connection: ControlConnection | null = null;
  private _timer: number | null = null;
  private _wasShown = false;
}
