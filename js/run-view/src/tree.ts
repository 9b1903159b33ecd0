// The session tree panel: the prompts of the session (with the summaries between them), folded where the
// conversation parts. The panel is closed until the reader opens it; then it asks for the tree (it can be long, so
// Python sends it only to views that asked), which comes as the `tree` trait (parents before children), whole, and
// again whenever it changes. A click on a prompt asks the kernel to fork before it. Every text is put in the page
// as text, never as markup.
import { el } from "./dom";
import type { TreeItem } from "./protocol";

/** Where a click on a prompt goes: the kernel forks before that entry. */
export type OnFork = (entry: string) => void;

export class TreePanel {
  /** The panel: a fold of its own, closed until the reader opens it. */
  readonly element = el("details", "pi-run-tree");
  private readonly title = el("summary", "pi-tree-title");
  private readonly body = el("div", "pi-tree-body");
  private loaded = false;
  private asked = false;

  /** `onOpen`: the reader opened the panel before the tree came (ask the kernel for it). */
  constructor(
    private readonly onFork: OnFork,
    private readonly onOpen: () => void = () => {},
  ) {
    this.element.append(this.title, this.body);
    this.element.addEventListener("toggle", () => {
      if (this.element.open && !this.loaded && !this.asked) {
        this.asked = true;
        this.onOpen();
      }
    });
    this.count(0);
  }

  /** The session holds `prompts` prompts (the title until the tree itself comes; no panel without any). */
  count(prompts: number): void {
    this.element.style.display = prompts ? "" : "none";
    if (this.loaded) return;
    this.title.textContent = `Session tree: ${prompts} prompt${prompts === 1 ? "" : "s"} (open it to see them and fork)`;
  }

  /** Draw `items` (the whole tree) in place of what was drawn. */
  show(items: TreeItem[]): void {
    if (!items.length) return; // not sent yet (the panel was not opened)
    this.loaded = true;
    this.element.style.display = "";
    const prompts = items.filter((item) => item.kind === "user").length;
    const children = new Map<string, TreeItem[]>();
    for (const item of items) {
      const siblings = children.get(item.parent);
      if (siblings) siblings.push(item);
      else children.set(item.parent, [item]);
    }
    const branches = items.filter((item) => !children.has(item.id)).length;
    this.title.textContent =
      `Session tree: ${prompts} prompt${prompts === 1 ? "" : "s"}, ${branches} branch${branches === 1 ? "" : "es"}` +
      " (click a prompt to continue from before it)";
    this.body.replaceChildren();
    this.chain(children.get("") ?? [], this.body, children);
  }

  /** Draw the items starting at `first` into `into`: a line of prompts while each has one child, then, where the
   * conversation parts, one fold per branch (open on the current branch). Not recursive along a line, so a long
   * linear session costs no stack. */
  private chain(first: TreeItem[], into: HTMLElement, children: Map<string, TreeItem[]>): void {
    const pending: [TreeItem[], HTMLElement][] = [[first, into]];
    while (pending.length) {
      const [items, container] = pending.pop()!;
      if (items.length === 1) {
        const item = items[0];
        container.append(this.row(item));
        pending.push([children.get(item.id) ?? [], container]);
        continue;
      }
      for (const item of items) {
        const branch = el("details", "pi-tree-branch");
        branch.open = true;
        const head = el("summary", "pi-tree-branch-head");
        head.append(this.row(item));
        branch.append(head);
        container.append(branch); // each branch draws into its own fold, so the order they are drawn in is free
        pending.push([children.get(item.id) ?? [], branch]);
      }
    }
  }

  private row(item: TreeItem): HTMLElement {
    const row = el("div", `pi-tree-row pi-tree-kind-${item.kind}${item.on_branch ? " pi-tree-current" : ""}`);
    row.dataset.entry = item.id;
    row.append(el("span", "pi-tree-mark", item.on_branch ? "●" : "○"));
    if (item.kind === "user") row.append(el("span", "pi-tree-number", `#${item.number}`));
    row.append(el("code", "pi-tree-id", item.id));
    if (item.kind === "user") {
      const button = el("button", "pi-tree-fork", item.text || "(empty prompt)");
      button.type = "button";
      button.title = "Continue from before this prompt (the branch left behind is summarised)";
      button.addEventListener("click", (event) => {
        event.preventDefault(); // inside a fold's summary: a click forks, it does not fold
        event.stopPropagation();
        this.onFork(item.id);
      });
      row.append(button);
    } else {
      const name = item.kind === "summary" ? "branch summary" : "compaction";
      row.append(el("span", "pi-tree-summary", `[${name}] ${item.text}`));
    }
    if (item.replies) row.append(el("span", "pi-tree-replies", `${item.replies} repl${item.replies === 1 ? "y" : "ies"}`));
    if (item.here) row.append(el("span", "pi-tree-here", "◀ here"));
    return row;
  }
}
