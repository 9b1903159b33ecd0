// The one sanitiser configuration: every piece of HTML built from model output goes through it.
import type { DOMPurify } from "dompurify";

export type Sanitize = (html: string) => string;
/** Sanitised HTML as detached nodes, ready to be moved onto the page. */
export type SanitizeNodes = (html: string) => ChildNode[];

/** `purify.sanitize` with the body forced, so a piece that starts with a comment or a `<style>` keeps the
 * white space after it as it would in the middle of a larger text (pieces must add up to the whole). */
export function sanitizer(purify: DOMPurify): Sanitize {
  return (html) => purify.sanitize(html, { FORCE_BODY: true });
}

/** The same sanitising, giving nodes: `html` is parsed as a div's content (as `element.innerHTML = html`
 * parses it) in one inert document, made once (it has no window: nothing in it loads or runs), and sanitised
 * there in place. `purify.sanitize` on a string builds a new document per call and returns a string the page
 * parses again; this parses once, and the nodes sanitised are the nodes shown (no serialising and re-parsing
 * in between for an HTML mutation to slip through). */
export function nodeSanitizer(purify: DOMPurify, page: Document): SanitizeNodes {
  const holder = page.implementation.createHTMLDocument("").createElement("div");
  return (html) => {
    holder.innerHTML = html;
    purify.sanitize(holder, { IN_PLACE: true });
    const nodes = [...holder.childNodes];
    holder.replaceChildren();
    return nodes;
  };
}
