/**
 * pi-notebook JupyterLab extension: stop agent runs from where users already reach for stop.
 *
 * - a "Stop agent run" button in each notebook's toolbar, shown only while a run is active in that
 *   notebook's kernel;
 * - the command `pi-notebook:stop-agent-run`, bound to Accel . (Ctrl+. / Cmd+.) wherever the focus is on a
 *   notebook's page (./focus.ts);
 * - a status bar item for the active notebook's kernel: "pi: streaming", "pi: retry in 3 s",
 *   "pi: settled (aborted)", ...
 * - the run widget's own Stop button, forwarded: its click is an ipywidgets comm message, which the kernel
 *   handles on its main thread, and the agent's python code blocks that thread while it runs; so each
 *   click is also sent over the control comm (`{"action": "abort", "run": N}`), which the kernel serves on
 *   a subshell thread and which interrupts the code at once;
 * - the agent's cell tools: the kernel asks over the same comm to read or change this notebook's cells, and the
 *   page acts on its live model (./cells.ts); cells the agent made or changed carry a mark (./marks.ts).
 * - a page opened while runs go on (reloaded, a second window) shows their live widgets again (./reattach.ts), and
 *   the widgets of runs whose kernel died or restarted say "kernel gone" (./kernelGone.ts); a saved run whose widget
 *   the kernel no longer has shows its static copy instead of ipywidgets' error (./staticCopy.ts).
 *
 * All of them talk to the kernel through the `pi_notebook.control` comm (see ./control.ts), so they work
 * when the run widget is collapsed or not rendered at all, and while a cell awaits the run.
 */
import { ILabShell, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, ISessionContext, IToolbarWidgetRegistry } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IStatusBar } from '@jupyterlab/statusbar';
import { stopIcon, ToolbarButton } from '@jupyterlab/ui-components';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { NotebookCells } from './cells';
import { ControlConnection } from './control';
import { markAgentCells } from './marks';
import { notebookInFront, returnFocusAfterApproval } from './focus';
import { isGone, watchKernelGone } from './kernelGone';
import { showRunViews } from './reattach';
import { showStaticCopies } from './staticCopy';

const PLUGIN_ID = 'pi-notebook:plugin';
const COMMAND = 'pi-notebook:stop-agent-run';
const TOOLBAR_ITEM = 'pi-stop-agent-run';
const LABEL = 'Stop agent run';

/**
 * One control connection per session context (two views of one notebook share it), which also acts on that
 * notebook's cells for the agent's cell tools (./cells.ts).
 */
class Connections {
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

/** The status bar item: the current notebook's run state, with a retry countdown. */
class RunStatus extends Widget {
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
        (connection?.active ? ` — ${LABEL}: Ctrl+. (Cmd+. on macOS)` : '')
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

/** CSS classes the kernel gives the run widget (see `pi_notebook/notebook/_view.py`). */
const RUN_STOP_CLASS = 'pi-run-stop';
const RUN_VIEW_CLASS = 'pi-run-view';
const RUN_NUMBER = /^pi-run-(\d+)$/;
const RUN_PROCESS = /^pi-proc-([\w-]+)$/;

/** The kernel process a run view was made by, from its `pi-proc-<process>` class. */
function runProcess(view: Element | null): string | undefined {
  for (const name of Array.from(view?.classList ?? [])) {
    const match = RUN_PROCESS.exec(name);
    if (match) {
      return match[1];
    }
  }
  return undefined;
}

/** The run number a run view carries as its `pi-run-<number>` class. */
function runNumber(view: Element | null): number | undefined {
  for (const name of Array.from(view?.classList ?? [])) {
    const match = RUN_NUMBER.exec(name);
    if (match) {
      return Number(match[1]);
    }
  }
  return undefined;
}

/**
 * Forward clicks on a run widget's Stop button to the control comm of the notebook that shows it. A capture
 * listener on the document sees the click before the widget's own handler; it does not stop it (the widget
 * still sends its click, handled once the kernel's main thread is free; stopping twice is harmless). A
 * disabled button (a settled run) fires no click.
 */
function forwardRunStopClicks(tracker: INotebookTracker, connections: Connections): void {
  document.addEventListener(
    'click',
    (event: MouseEvent) => {
      const target = event.target instanceof Element ? event.target : null;
      const button = target?.closest(`.${RUN_STOP_CLASS}`);
      if (!button) {
        return;
      }
      const panel = tracker.find(candidate => candidate.node.contains(button));
      const view = button.closest(`.${RUN_VIEW_CLASS}`);
      const process = runProcess(view);
      if (panel && !(process !== undefined && isGone(process))) {
        // (a gone kernel's run number may name a run of the kernel that replaced it)
        connections.get(panel.sessionContext).abort(runNumber(view));
      }
    },
    true
  );
}

function stopButton(connection: ControlConnection): Widget {
  const button = new ToolbarButton({
    icon: stopIcon,
    label: LABEL,
    tooltip: `${LABEL} (Ctrl+. / Cmd+.): stop every active pi run in this kernel`,
    onClick: () => {
      connection.abort();
    }
  });
  button.addClass('pi-StopAgentRun');
  const update = (): void => {
    button.setHidden(!connection.active);
  };
  connection.changed.connect(update);
  button.disposed.connect(() => connection.changed.disconnect(update));
  update();
  return button;
}

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
      label: LABEL,
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
      const item = new RunStatus();
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
