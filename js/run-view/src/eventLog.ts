// The event log: the last rows shown, the earlier ones a click away, so 10k events stay readable and cheap.
import { el } from "./dom";
import type { EventOp } from "./protocol";

/** Rows shown before the reader asks for more, and how many more each click shows. */
export const SHOWN = 200;
export const PAGE = 1000;

function seconds(ms: number): string {
  return (ms / 1000).toFixed(3);
}

export class EventLog {
  readonly element = el("div", "pi-run-log-box");
  private readonly more = el("div", "pi-log-more");
  private readonly table = el("table", "pi-run-log");
  private readonly body = el("tbody");
  private rows: EventOp[] = [];
  /** index of the first row on the page; rows before it are hidden */
  private first = 0;
  /** rows drawn so far (the ones after are drawn at the next paint) */
  private drawn = 0;
  private limit = SHOWN;

  constructor() {
    this.table.append(this.body);
    this.element.append(this.more, this.table);
  }

  add(op: EventOp): void {
    this.rows.push(op);
  }

  reset(): void {
    this.rows = [];
    this.first = this.drawn = 0;
    this.limit = SHOWN;
    this.body.replaceChildren();
    this.more.replaceChildren();
  }

  /** Draw rows added since the last paint; keep at most `limit` of them on the page. */
  paint(): void {
    if (this.drawn === this.rows.length) return;
    const first = Math.max(this.first, this.rows.length - this.limit);
    if (first >= this.drawn) {
      this.body.replaceChildren(...this.rows.slice(first).map(row));
    } else {
      this.body.append(...this.rows.slice(this.drawn).map(row));
      for (let index = this.first; index < first; index++) this.body.firstChild?.remove();
    }
    this.first = first;
    this.drawn = this.rows.length;
    this.showMore();
  }

  private showMore(): void {
    const hidden = this.first;
    if (hidden === 0) {
      this.more.replaceChildren();
      return;
    }
    const page = Math.min(PAGE, hidden);
    const some = el("button", "pi-log-show", `Show ${page.toLocaleString()} earlier`);
    some.addEventListener("click", () => this.reveal(page));
    const all = el("button", "pi-log-show", "Show all");
    all.addEventListener("click", () => this.reveal(hidden, true));
    this.more.replaceChildren(el("span", "pi-log-hidden", `${hidden.toLocaleString()} earlier events hidden `), some);
    if (page < hidden) this.more.append(" ", all);
  }

  /** Show `count` more earlier rows; with `all`, keep every row from now on. */
  private reveal(count: number, all = false): void {
    const first = this.first - count;
    this.body.prepend(...this.rows.slice(first, this.first).map(row));
    this.limit = all ? Infinity : this.limit + count;
    this.first = first;
    this.showMore();
  }
}

function row(op: EventOp): HTMLTableRowElement {
  const tr = el("tr", `pi-log-row pi-log-${op.label}`);
  tr.append(el("td", "pi-log-t", seconds(op.t)), el("td", "pi-log-label", op.label), el("td", "pi-log-detail", op.detail));
  return tr;
}
