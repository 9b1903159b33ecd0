// The one sanitiser configuration: every piece of HTML built from model output goes through it.
import type { DOMPurify } from "dompurify";

export type Sanitize = (html: string) => string;

/** `purify.sanitize` with the body forced, so a piece that starts with a comment or a `<style>` keeps the
 * white space after it as it would in the middle of a larger text (pieces must add up to the whole). */
export function sanitizer(purify: DOMPurify): Sanitize {
  return (html) => purify.sanitize(html, { FORCE_BODY: true });
}
