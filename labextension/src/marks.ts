/**
 * The visible mark on cells the agent made or changed: a cell tagged `pi-agent` gets the class `pi-AgentCell` (a
 * coloured edge, and a "pi · run N" badge at the bottom right of its input, out of the way of the cell toolbar:
 * style/base.css) and a tooltip; the mark follows the tag, so removing the tag (or undoing the agent's edit, which
 * takes the tag back off) removes it.
 */
import type { ICellModel } from '@jupyterlab/cells';
import type { NotebookPanel } from '@jupyterlab/notebook';

import { AGENT_TAG, METADATA_KEY } from './protocol';

const MARK_CLASS = 'pi-AgentCell';

function runOf(model: ICellModel): number | null {
  const meta = model.getMetadata(METADATA_KEY) as { run?: unknown } | undefined;
  return typeof meta?.run === 'number' ? meta.run : null;
}

function tagged(model: ICellModel): boolean {
  const tags = model.getMetadata('tags');
  return Array.isArray(tags) && tags.includes(AGENT_TAG);
}

/** Keep the marks of one notebook panel's cells up to date. */
export function markAgentCells(panel: NotebookPanel): void {
  const watched = new WeakSet<ICellModel>();
  const refresh = (): void => {
    for (const cell of panel.content.widgets) {
      const model = cell.model;
      if (!watched.has(model)) {
        watched.add(model);
        model.metadataChanged.connect(refresh);
      }
      const mark = tagged(model);
      cell.node.classList.toggle(MARK_CLASS, mark);
      const input = cell.inputArea?.node ?? cell.node;
      const run = mark ? runOf(model) : null;
      if (mark) {
        input.dataset.piAgent = run === null ? 'pi' : `pi · run ${run}`;
        input.title = `Made or changed by the pi agent${run === null ? '' : ` (run ${run})`}`;
      } else if (input.dataset.piAgent !== undefined) {
        delete input.dataset.piAgent;
        input.removeAttribute('title');
      }
    }
  };
  const follow = (): void => {
    panel.content.model?.cells.changed.connect(() => requestAnimationFrame(refresh));
    refresh();
  };
  panel.content.modelChanged.connect(follow);
  void panel.context.ready.then(follow);
}
