/**
 * Stop where users reach for it: the notebook toolbar's **Stop agent run** button, and the run widget's own Stop,
 * forwarded over the control comm.
 *
 * The widget's Stop click is an ipywidgets comm message, which the kernel handles on its main thread, and the
 * agent's python code blocks that thread while it runs; so each click is also sent over the control comm
 * (`{"action": "abort", "run": N}`), which the kernel serves on a subshell thread and which interrupts the code at
 * once. The button and the run number are found by the classes the kernel gives the widget (./protocol.ts).
 */
import { INotebookTracker } from '@jupyterlab/notebook';
import { stopIcon, ToolbarButton } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import type { Connections } from './connections';
import type { ControlConnection } from './control';
import { isGone } from './kernelGone';
import { runNumber, runProcess, STOP_CLASS, VIEW_CLASS } from './protocol';
import { STOP_LABEL } from './status';

/**
 * Forward clicks on a run widget's Stop button to the control comm of the notebook that shows it. A capture
 * listener on the document sees the click before the widget's own handler; it does not stop it (the widget
 * still sends its click, handled once the kernel's main thread is free; stopping twice is harmless). A
 * disabled button (a settled run) fires no click.
 */
export function forwardRunStopClicks(tracker: INotebookTracker, connections: Connections): void {
  document.addEventListener(
    'click',
    (event: MouseEvent) => {
      const target = event.target instanceof Element ? event.target : null;
      const button = target?.closest(`.${STOP_CLASS}`);
      if (!button) {
        return;
      }
      const panel = tracker.find(candidate => candidate.node.contains(button));
      const view = button.closest(`.${VIEW_CLASS}`);
      const process = runProcess(view);
      if (panel && !(process !== undefined && isGone(process))) {
        // (a gone kernel's run number may name a run of the kernel that replaced it)
        connections.get(panel.sessionContext).abort(runNumber(view));
      }
    },
    true
  );
}

/** The toolbar's Stop button for one notebook: shown only while a run is active in its kernel. */
export function stopButton(connection: ControlConnection): Widget {
  const button = new ToolbarButton({
    icon: stopIcon,
    label: STOP_LABEL,
    tooltip: `${STOP_LABEL} (Ctrl+. / Cmd+.): stop every active pi run in this kernel`,
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
