// The one marked configuration used everywhere (streaming and one-shot rendering must agree).
import { Marked, type MarkedOptions } from "marked";

export const markdown = new Marked({ gfm: true, breaks: true });
export const options: MarkedOptions = markdown.defaults;
