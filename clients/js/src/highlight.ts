/**
 * The server highlights as HTML: the text escaped, matched words in `<em>`. Algolia's results carry
 * the raw text with the request's `highlightPreTag`/`highlightPostTag` around matches (InstantSearch
 * asks for its own markers and escapes the rest itself).
 */

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'", "#x27": "'" };

export function unescapeHtml(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39|#x27);/g, (_, name: string) => ENTITIES[name]);
}

/** `[text, matched]` pieces of the server's highlight HTML, the text unescaped. */
export function pieces(html: string): Array<[string, boolean]> {
  const out: Array<[string, boolean]> = [];
  let inside = false;
  for (const part of html.split(/(<\/?em>)/)) {
    if (part === "<em>") inside = true;
    else if (part === "</em>") inside = false;
    else if (part) out.push([unescapeHtml(part), inside]);
  }
  return out;
}

export function tagged(parts: Array<[string, boolean]>, pre: string, post: string): string {
  return parts.map(([text, matched]) => (matched ? pre + text + post : text)).join("");
}

/** The server's highlight HTML with the request's tags, the text raw. */
export function retag(html: string, pre: string, post: string): string {
  return tagged(pieces(html), pre, post);
}

/** Characters `[start, end)` of the plain text of `parts`, matches kept. */
function slice(parts: Array<[string, boolean]>, start: number, end: number): Array<[string, boolean]> {
  const out: Array<[string, boolean]> = [];
  let at = 0;
  for (const [text, matched] of parts) {
    const from = Math.max(start, at);
    const to = Math.min(end, at + text.length);
    if (from < to) out.push([text.slice(from - at, to - at), matched]);
    at += text.length;
  }
  return out;
}

export interface HighlightResult {
  value: string;
  matchLevel: "none" | "partial" | "full";
  matchedWords: string[];
  fullyHighlighted?: boolean;
}

function result(parts: Array<[string, boolean]>, queryWords: string[], pre: string, post: string): HighlightResult {
  const matched = [...new Set(parts.filter(([, m]) => m).map(([text]) => text.toLowerCase()))];
  const text = parts.map(([t]) => t).join("");
  const level = !matched.length ? "none" : matched.length >= queryWords.length ? "full" : "partial";
  const out: HighlightResult = { value: tagged(parts, pre, post), matchLevel: level, matchedWords: matched };
  if (matched.length) out.fullyHighlighted = parts.every(([t, m]) => m || !t.trim()) && text.length > 0;
  return out;
}

/**
 * `_highlightResult` of a hit: every string field and list of strings of the document, with the
 * server's highlights where it made one (a list's highlight is of its values joined with ", ").
 */
export function highlightResult(
  document: Record<string, unknown>,
  highlights: Record<string, string> | undefined,
  query: string,
  pre: string,
  post: string,
): Record<string, HighlightResult | HighlightResult[]> {
  const queryWords = query.split(/\s+/).filter(Boolean);
  const out: Record<string, HighlightResult | HighlightResult[]> = {};
  for (const [field, value] of Object.entries(document)) {
    const html = highlights?.[field];
    if (typeof value === "string") {
      out[field] = result(html !== undefined ? pieces(html) : [[value, false]], queryWords, pre, post);
    } else if (Array.isArray(value) && value.every((v) => typeof v === "string")) {
      const items = value as string[];
      const all = html !== undefined ? pieces(html) : null;
      const joined = items.join(", ");
      const usable = all !== null && all.map(([t]) => t).join("") === joined;
      let at = 0;
      out[field] = items.map((item) => {
        const parts = usable ? slice(all, at, at + item.length) : [[item, false] as [string, boolean]];
        at += item.length + 2;
        return result(parts, queryWords, pre, post);
      });
    }
  }
  return out;
}
