/**
 * A run's output whose widget cannot be drawn shows the run's static copy instead of an error.
 *
 * A run shows as one output: its widget view and, beside it, its static copy (the transcript and event log as
 * HTML, made inert by the kernel; what GitHub and nbconvert show). After the kernel restarted, or in a notebook
 * opened on a new kernel, the widget's model is gone with the old kernel and ipywidgets draws "Error displaying
 * widget: model not found" where the run was (it draws the richest type, the widget's, and never falls back). So
 * when a run's output turns into that error, its static copy is drawn there by the notebook's own HTML renderer
 * (sanitized unless the notebook is trusted, as any HTML output), under a line saying the live widget is gone.
 *
 * One mutation observer per notebook; each record costs a class check, so a streaming run widget costs nothing.
 */
import type { CodeCell } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import { STATIC_MARKER } from './protocol';

/** What ipywidgets writes in an output whose widget it cannot draw. */
const WIDGET_ERROR = 'Error displaying widget';
export const STATIC_NOTE =
  'The live widget of this run is gone with the kernel that ran it; this is its saved copy.';

/** The run output's static copy, if `data` is a run's output. */
function staticCopy(data: ReadonlyPartialJSONObject): string | null {
  const html = data['text/html'];
  const text = Array.isArray(html) ? html.join('') : html;
  return typeof text === 'string' && text.startsWith(STATIC_MARKER) ? text : null;
}

/** Draw the static copy into `node`, the output ipywidgets gave up on (index `index` of `cell`'s outputs). */
async function replace(panel: NotebookPanel, cell: CodeCell, index: number, node: HTMLElement): Promise<void> {
  const output = cell.outputArea.model.get(index);
  const html = output ? staticCopy(output.data) : null;
  if (output === undefined || html === null) {
    return;
  }
  node.dataset.piStaticCopy = 'drawing';
  const renderer = panel.content.rendermime.createRenderer('text/html');
  const model: IRenderMime.IMimeModel = {
    trusted: output.trusted,
    data: { 'text/html': html },
    metadata: {},
    setData: () => undefined
  };
  await renderer.renderModel(model);
  if (!node.textContent?.startsWith(WIDGET_ERROR)) {
    renderer.dispose(); // ipywidgets drew the widget after all (its manager came back)
    delete node.dataset.piStaticCopy;
    return;
  }
  const note = document.createElement('div');
  note.className = 'pi-static-copy-note';
  note.textContent = STATIC_NOTE;
  node.replaceChildren(note, renderer.node);
  node.classList.add('pi-static-copy');
  node.dataset.piStaticCopy = 'shown';
}

/** The cell and output index of an output node of `panel`, or null. */
function locate(panel: NotebookPanel, node: Element): [CodeCell, number] | null {
  for (const cell of panel.content.widgets) {
    if (cell.model.type !== 'code' || !cell.node.contains(node)) {
      continue;
    }
    const area = (cell as CodeCell).outputArea;
    const index = area.widgets.findIndex(child => child.node.contains(node));
    return index < 0 ? null : [cell as CodeCell, index];
  }
  return null;
}

/** Show the static copy of every run output of `panel` whose widget ipywidgets cannot draw. */
export function showStaticCopies(panel: NotebookPanel): void {
  const check = (target: Node): void => {
    const node = target instanceof HTMLElement ? target : null;
    if (node?.dataset.piStaticCopy === 'shown' && node.querySelector('.pi-static-copy-note') === null) {
      delete node.dataset.piStaticCopy; // ipywidgets tried again (its manager was restored): it may fail again
    }
    if (
      node === null ||
      !node.classList.contains('jupyter-widgets') ||
      !node.classList.contains('jp-OutputArea-output') ||
      node.dataset.piStaticCopy !== undefined ||
      !node.textContent?.startsWith(WIDGET_ERROR)
    ) {
      return;
    }
    const found = locate(panel, node);
    if (found !== null) {
      void replace(panel, found[0], found[1], node);
    }
  };
  const observer = new MutationObserver(records => records.forEach(record => check(record.target)));
  observer.observe(panel.content.node, { childList: true, subtree: true, attributes: true, attributeFilter: ['class'] });
  panel.disposed.connect(() => observer.disconnect());
}
