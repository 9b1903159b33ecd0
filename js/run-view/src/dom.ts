export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className?: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Keeps a scrolling element at its bottom while new content arrives, until the reader scrolls away from it;
 * scrolling back to the bottom follows again. Only scrolls that follow the reader's input count: the page also
 * scrolls by itself (content added before the scroll event of a paint, placeholders of off-screen blocks
 * taking their real height), and that must not stop the following.
 *
 * The scroll happens when the browser has laid the new content out (a ResizeObserver on the content reports
 * after layout, before the frame is painted): setting `scrollTop` right after adding content would make the
 * browser lay the page out at once, in the widget's own time, and again for the frame. */
export class FollowBottom {
  private following = true;
  /** until when scroll events are taken as the reader's (ms, performance.now()) */
  private readerUntil = 0;
  private readonly resized = typeof ResizeObserver === "function" ? new ResizeObserver(() => this.follow()) : null;

  constructor(private readonly element: HTMLElement) {
    const reader = (): void => void (this.readerUntil = performance.now() + 1000);
    for (const type of ["wheel", "touchmove", "keydown", "pointerdown"]) {
      element.addEventListener(type, reader, { passive: true });
    }
    element.addEventListener("pointermove", (event) => event.buttons && reader(), { passive: true });
    element.addEventListener("scroll", () => this.scrolled(), { passive: true });
  }

  /** Follow `content`, a block inside the scrolling element, as it grows (each child that grows, or one
   * wrapper around them all). */
  watch(content: Element): void {
    this.resized?.observe(content);
  }

  /** Stop watching every block (they were removed). */
  unwatchAll(): void {
    this.resized?.disconnect();
  }

  /** Call after adding content: where the browser cannot report the content's growth, follows at once. */
  added(): void {
    if (this.resized === null) this.follow();
  }

  follow(): void {
    if (this.following) this.element.scrollTop = this.element.scrollHeight;
  }

  private scrolled(): void {
    if (performance.now() > this.readerUntil) return;
    const { scrollHeight, scrollTop, clientHeight } = this.element;
    this.following = scrollHeight - scrollTop - clientHeight < 24;
  }
}
