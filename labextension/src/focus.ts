/**
 * Where the keyboard goes around a run widget's approval box, so Accel+. keeps working.
 *
 * Clicking Run, Skip or Always in the approval box (`pi_notebook/notebook/widget/_view.py`) hides the box a kernel
 * round trip later; the focused button disappears and the focus falls to `<body>`, outside every notebook panel.
 * That is the moment a user most needs Stop (the approved code may loop). Two things keep the shortcut alive:
 *
 * - its selector is `body` (schema/plugin.json), and the command acts only when the notebook is the main area's
 *   current widget (`notebookInFront`), so it works wherever the focus is on the notebook's page, `<body>`
 *   included, and does not reach into a notebook behind a console or a terminal;
 * - after a click on an approval button the focus goes back to the notebook that shows the box (in command mode,
 *   on the cell that holds the run), before the box disappears under it.
 */
import { ILabShell } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { APPROVE_CLASSES } from './protocol';

/** The approval box's buttons, by the classes the kernel gives them. */
const APPROVAL_BUTTONS = APPROVE_CLASSES.map(name => `.${name}`).join(', ');

/** The current notebook, if it is what the main area shows (always, without a JupyterLab shell). */
export function notebookInFront(tracker: INotebookTracker, labShell: ILabShell | null): NotebookPanel | null {
  const panel = tracker.currentWidget;
  if (panel === null || (labShell !== null && labShell.currentWidget !== panel)) {
    return null;
  }
  return panel;
}

/** After a click on an approval button, give the focus back to the notebook that shows it. */
export function returnFocusAfterApproval(tracker: INotebookTracker): void {
  document.addEventListener('click', (event: MouseEvent) => {
    const target = event.target instanceof Element ? event.target : null;
    const button = target?.closest(APPROVAL_BUTTONS);
    if (!button) {
      return;
    }
    const panel = tracker.find(candidate => candidate.node.contains(button));
    if (!panel) {
      return;
    }
    // After the widget's own handler: the click is sent, the button may go.
    window.setTimeout(() => {
      const focused = document.activeElement;
      if (focused === null || focused === document.body || button.contains(focused)) {
        panel.content.mode = 'command';
        panel.content.node.focus();
      }
    }, 0);
  });
}
