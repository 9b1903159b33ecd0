/**
 * A page opened while runs go on in the kernel (the tab was reloaded or closed and opened again, a second window)
 * shows their live widgets again.
 *
 * The widget of a run is an output of the cell that started it; a page that loads the notebook from disk has that
 * output only if the notebook was saved after the run began. So when the control comm opens, the kernel lists its
 * active runs' widgets (`views`: model id, cell id, a line of text, the display's bundle and metadata), and for each
 * one this page's notebook lacks, the run's output is added to that cell: the widget, with its static copy beside
 * it as any run output has, so the notebook saved afterwards shows the run where no widget can be drawn. The ipywidgets manager draws it from the kernel's state (the
 * widget asks the kernel for everything so far: nothing is replayed from zero); while the agent's python code holds
 * the kernel's main thread, where ipywidgets answers, the output reads "Loading widget..." until the code returns
 * or is stopped. A view whose cell is not in this notebook (another notebook or a console on the same kernel) is
 * left alone.
 */
import type { ICodeCellModel } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';

import type { IRunView } from './protocol';

export const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';

/** Whether an output of a cell of `panel`'s notebook shows the widget `modelId`. */
function shown(panel: NotebookPanel, modelId: string): boolean {
  const cells = panel.content.model?.cells;
  if (!cells) {
    return false;
  }
  for (const cell of cells) {
    if (cell.type !== 'code') {
      continue;
    }
    const outputs = (cell as ICodeCellModel).outputs;
    for (let index = 0; index < outputs.length; index++) {
      const data = outputs.get(index).data[WIDGET_MIME] as { model_id?: string } | undefined;
      if (data?.model_id === modelId) {
        return true;
      }
    }
  }
  return false;
}

function cellById(panel: NotebookPanel, id: string): ICodeCellModel | null {
  const cells = panel.content.model?.cells;
  if (!cells) {
    return null;
  }
  for (const cell of cells) {
    if (cell.id === id && cell.type === 'code') {
      return cell as ICodeCellModel;
    }
  }
  return null;
}

/** Add an output showing each of `views` to its cell where `panel`'s notebook lacks it; returns how many. */
export async function showRunViews(panel: NotebookPanel, views: IRunView[]): Promise<number> {
  await panel.context.ready;
  let added = 0;
  for (const view of views) {
    const cell = view.cell_id === null ? null : cellById(panel, view.cell_id);
    if (cell === null || shown(panel, view.model_id)) {
      continue;
    }
    cell.outputs.add({
      output_type: 'display_data',
      data: {
        ...((view.data ?? {}) as Record<string, never>),
        [WIDGET_MIME]: { version_major: 2, version_minor: 0, model_id: view.model_id },
        'text/plain': view.text
      },
      metadata: (view.metadata ?? {}) as Record<string, never>
    });
    added++;
  }
  return added;
}
