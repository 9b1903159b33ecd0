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

/** Keeps a scrolling element at its bottom while new content arrives, unless the reader scrolled away. */
export class FollowBottom {
  private following = true;

  constructor(private readonly element: HTMLElement) {
    element.addEventListener("scroll", () => (this.following = this.atBottom()), { passive: true });
  }

  /** Call after adding content. */
  follow(): void {
    if (this.following) this.element.scrollTop = this.element.scrollHeight;
  }

  private atBottom(): boolean {
    const { scrollHeight, scrollTop, clientHeight } = this.element;
    return scrollHeight - scrollTop - clientHeight < 24;
  }
}
