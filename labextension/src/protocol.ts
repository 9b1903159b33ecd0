/**
 * What the kernel and this page say to each other, and the names both use: the control comm's messages, the run
 * states, the cell tags, the CSS classes the kernel gives a run widget.
 *
 * The one definition is Python's: `pi_notebook/notebook/widget/_protocol.py` (which re-exports the cell tools' part)
 * and `pi_notebook/notebook/_control_comm.py` (the comm). `tests/test_protocol.py` checks every constant and union
 * here against it, and that no other file of `src/` spells a class name or tag of its own. The cells messages are in
 * ./cellProtocol.ts.
 */

/** The kernel's comm target (`_control_comm.TARGET`). */
export const TARGET = 'pi_notebook.control';

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

/** States in which a run is active: the toolbar's Stop button shows. */
export const ACTIVE_STATES = new Set<string>([
  'starting',
  'streaming',
  'running tool',
  'awaiting approval',
  'retrying',
  'compacting'
] satisfies ActiveStatus[]);

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

/** The kernel's `error` message (and `activity`, which only the beacon sends). */
export interface IControlError {
  type: Exclude<ControlMessageType, 'state' | 'cells' | 'views'>;
  error: string;
}

// The cell tools' names (`pi_notebook/kernel/cells/_cell_protocol.py`).

/** The tag of cells the agent made or changed (./marks.ts draws their mark). */
export const AGENT_TAG = 'pi-agent';
/** The tag of cells the agent may not edit, delete or run. */
export const PROTECTED_TAG = 'pi-protected';
/** The cell metadata key of the agent's mark: `{run, change}`. */
export const METADATA_KEY = 'pi_notebook';

// The CSS classes the kernel gives a run widget (`pi_notebook/notebook/widget/_view.py`).

/** Every run widget's view. */
export const VIEW_CLASS = 'pi-run-view';
/** A run widget's Stop button: its clicks are forwarded over the control comm (./stop.ts). */
export const STOP_CLASS = 'pi-run-stop';
/** A run view's run number: `pi-run-<N>`. */
export const RUN_CLASS_PREFIX = 'pi-run-';
/** The kernel process that made a run view: `pi-proc-<process>` (./kernelGone.ts). */
export const PROCESS_CLASS_PREFIX = 'pi-proc-';
/** The buttons of the approval box (Run, Skip, Always): a click gives the focus back to the notebook (./focus.ts). */
export const APPROVE_CLASSES = ['pi-approve-run', 'pi-approve-skip', 'pi-approve-always'];
/** The run state in the widget's header, drawn by the widget's own script (`js/run-view`). */
export const STATE_CLASS = 'pi-run-state';

/** First line of a run output's static copy (`pi_notebook/notebook/widget/_display.py`). */
export const STATIC_MARKER = "<!-- pi_notebook run view: the live widget's static copy -->";

/** The number in a run view's `pi-run-<N>` class, or the process in its `pi-proc-<process>` class. */
const RUN_CLASS = new RegExp(`^${RUN_CLASS_PREFIX}(\\d+)$`);
const PROCESS_CLASS = new RegExp(`^${PROCESS_CLASS_PREFIX}([\\w-]+)$`);

function classPart(view: Element | null, pattern: RegExp): string | undefined {
  for (const name of Array.from(view?.classList ?? [])) {
    const match = pattern.exec(name);
    if (match) {
      return match[1];
    }
  }
  return undefined;
}

/** The run number a run view carries as its `pi-run-<number>` class. */
export function runNumber(view: Element | null): number | undefined {
  const number = classPart(view, RUN_CLASS);
  return number === undefined ? undefined : Number(number);
}

/** The kernel process a run view was made by, from its `pi-proc-<process>` class. */
export function runProcess(view: Element | null): string | undefined {
  return classPart(view, PROCESS_CLASS);
}
