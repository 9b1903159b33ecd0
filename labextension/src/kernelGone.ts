/**
 * A run widget whose kernel is gone says so, instead of showing a live-looking Stop.
 *
 * When a notebook's kernel dies, restarts or is shut down, the runs it held are gone with it, but their widgets
 * stay on the page as they were last drawn ("streaming", an enabled Stop). Each run widget carries the class
 * `pi-proc-<process>` naming the kernel process that made it (the kernel tells the page its process in the control
 * comm's `views`). When the kernel goes, one style rule is added for that process: its widgets whose Stop is still
 * enabled (the run had not settled) show a "kernel gone" banner, their state reads "kernel gone" and their Stop
 * cannot be clicked. A rule rather than a walk over the page, so widgets drawn later (cells scrolled into view)
 * look the same; widgets of the new kernel carry another process and are untouched.
 */
import type { ISessionContext } from '@jupyterlab/apputils';
import type { Kernel } from '@jupyterlab/services';

import type { ControlConnection } from './control';
import { PROCESS_CLASS_PREFIX, STATE_CLASS, STOP_CLASS } from './protocol';

export const GONE_TEXT =
  'Kernel gone: the kernel stopped during this run (restarted, shut down or died), so the run ended with it. ' +
  'Every message that had ended is in its session file: %load_ext pi_notebook, then %pi resume, continues it.';

const gone = new Set<string>();

/** The rule for one dead kernel process (exported for tests of the text). */
export function goneRule(process: string): string {
  const live = `.${PROCESS_CLASS_PREFIX}${process}:has(.${STOP_CLASS}:not(:disabled))`;
  const text = JSON.stringify(GONE_TEXT);
  return [
    `${live} .${STOP_CLASS} { pointer-events: none; opacity: 0.35; }`,
    `${live}::before { content: ${text}; display: block; padding: 4px 8px; margin-bottom: 4px; ` +
      'border-left: 3px solid var(--jp-warn-color1, #f57c00); background: var(--jp-warn-color3, #fff3e0); ' +
      'color: var(--jp-ui-font-color1); font-family: var(--jp-ui-font-family); ' +
      'font-size: var(--jp-ui-font-size1); font-weight: normal; }',
    `${live} .${STATE_CLASS} { font-size: 0; }`,
    `${live} .${STATE_CLASS}::after { content: "kernel gone"; font-size: var(--jp-ui-font-size1); }`
  ].join('\n');
}

/** Mark the widgets of kernel process `process` as gone (once per process). */
export function markGone(process: string): void {
  if (gone.has(process) || !/^[\w-]+$/.test(process)) {
    return;
  }
  gone.add(process);
  const style = document.createElement('style');
  style.dataset.piGone = process;
  style.textContent = goneRule(process);
  document.head.appendChild(style);
}

/** Whether the widgets of `process` were marked gone. */
export function isGone(process: string): boolean {
  return gone.has(process);
}

/** Watch a notebook's kernel: when it dies, restarts, is shut down or replaced, its run widgets are gone. */
export function watchKernelGone(sessionContext: ISessionContext, connection: ControlConnection): void {
  let process: string | null = connection.process;
  connection.views.connect(() => {
    process = connection.process ?? process;
  });
  const lost = (): void => {
    if (process !== null) {
      markGone(process);
      process = null;
    }
  };
  sessionContext.statusChanged.connect((_, status: Kernel.Status) => {
    if (status === 'dead' || status === 'restarting' || status === 'autorestarting') {
      lost();
    }
  });
  sessionContext.kernelChanged.connect(lost);
}
