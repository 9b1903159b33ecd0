/**
 * pi-notebook JupyterLab extension: stop agent runs from where users already reach for stop.
 *
 * - a "Stop agent run" button in each notebook's toolbar, shown only while a run is active in that
 *   notebook's kernel;
 * - the command `pi-notebook:stop-agent-run`, bound to Accel . (Ctrl+. / Cmd+.) wherever the focus is on a
 *   notebook's page (./focus.ts);
 * - a status bar item for the active notebook's kernel: "pi: streaming", "pi: retry in 3 s",
 *   "pi: settled (aborted)", ... (./status.ts)
 * - the run widget's own Stop button, forwarded: its click is an ipywidgets comm message, which the kernel
 *   handles on its main thread, and the agent's python code blocks that thread while it runs; so each
 *   click is also sent over the control comm (`{"action": "abort", "run": N}`), which the kernel serves on
 *   a subshell thread and which interrupts the code at once (./stop.ts, with the toolbar button);
 * - the agent's cell tools: the kernel asks over the same comm to read or change this notebook's cells, and the
 *   page acts on its live model (./cells.ts); cells the agent made or changed carry a mark (./marks.ts).
 * - a page opened while runs go on (reloaded, a second window) shows their live widgets again (./reattach.ts), and
 *   the widgets of runs whose kernel died or restarted say "kernel gone" (./kernelGone.ts); a saved run whose widget
 *   the kernel no longer has shows its static copy instead of ipywidgets' error (./staticCopy.ts).
 *
 * All of them talk to the kernel through the `pi_notebook.control` comm (./control.ts: one connection per notebook
 * session, ./connections.ts; found by ./discovery.ts; its messages and the names shared with the kernel in
 * ./protocol.ts), so they work when the run widget is collapsed or not rendered at all, and while a cell awaits the
 * run.
 */
import { ILabShell, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, IToolbarWidgetRegistry } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IStatusBar } from '@jupyterlab/statusbar';
import { stopIcon } from '@jupyterlab/ui-components';

import { Connections } from './connections';
import type { ControlConnection } from './control';
import { notebookInFront, returnFocusAfterApproval } from './focus';
import { watchKernelGone } from './kernelGone';
import { markAgentCells } from './marks';
import { showRunViews } from './reattach';
import { showStaticCopies } from './staticCopy';
import { StatusItem, STOP_LABEL } from './status';
import { forwardRunStopClicks, stopButton } from './stop';

const PLUGIN_ID = 'pi-notebook:plugin';
const COMMAND = 'pi-notebook:stop-agent-run';
const TOOLBAR_ITEM = 'pi-stop-agent-run';

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Stop pi agent runs from the notebook toolbar or a shortcut, and show their state in the status bar.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [IToolbarWidgetRegistry, IStatusBar, ICommandPalette, ILabShell],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    toolbarRegistry: IToolbarWidgetRegistry | null,
    statusBar: IStatusBar | null,
    palette: ICommandPalette | null,
    labShell: ILabShell | null
  ): void => {
    const connections = new Connections(tracker);
    const current = (): ControlConnection | null => {
      const panel = tracker.currentWidget;
      return panel ? connections.get(panel.sessionContext) : null;
    };

    // The shortcut's selector is `body` (see ./focus.ts): it acts on the notebook the main area shows.
    const inFront = (): ControlConnection | null => {
      const panel = notebookInFront(tracker, labShell);
      return panel ? connections.get(panel.sessionContext) : null;
    };
    app.commands.addCommand(COMMAND, {
      label: STOP_LABEL,
      caption: 'Stop every active pi agent run in this notebook’s kernel (queued messages go back to the input box)',
      icon: stopIcon,
      isEnabled: () => inFront()?.connected ?? false,
      execute: () => {
        inFront()?.abort();
      }
    });
    palette?.addItem({ command: COMMAND, category: 'Notebook Operations' });

    // Every notebook gets its connection as soon as it opens, so the state is known before the first click.
    const watch = (panel: NotebookPanel): void => {
      const connection = connections.get(panel.sessionContext);
      connection.changed.connect(() => app.commands.notifyCommandChanged(COMMAND));
      connection.views.connect((_, views) => void showRunViews(panel, views));
      watchKernelGone(panel.sessionContext, connection);
      markAgentCells(panel);
      showStaticCopies(panel);
    };
    tracker.widgetAdded.connect((_, panel: NotebookPanel) => watch(panel));
    tracker.forEach(watch);
    forwardRunStopClicks(tracker, connections);
    returnFocusAfterApproval(tracker);

    if (toolbarRegistry) {
      toolbarRegistry.addFactory<NotebookPanel>('Notebook', TOOLBAR_ITEM, panel =>
        stopButton(connections.get(panel.sessionContext))
      );
    }

    if (statusBar) {
      const item = new StatusItem();
      const follow = (): void => {
        item.connection = current();
      };
      tracker.currentChanged.connect(follow);
      labShell?.currentChanged.connect(() => item.activeStateChanged.emit());
      follow();
      statusBar.registerStatusItem(PLUGIN_ID, {
        item,
        align: 'left',
        rank: 4,
        isActive: () =>
          item.shown && (labShell === null || labShell.currentWidget === tracker.currentWidget),
        activeStateChanged: item.activeStateChanged
      });
    }
  }
};

export default plugin;
