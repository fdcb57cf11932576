// Catalog files (JSON array, NDJSON, CSV) → documents, and a resumable upload in batches of 1000.
export const BATCH = 1000;

function parseCsv(text) {
  const rows = [];
  let row = [], cell = "", quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { cell += '"'; i++; } else if (c === '"') quoted = false; else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") { row.push(cell); cell = ""; } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++;
      row.push(cell); rows.push(row); row = []; cell = "";
    } else cell += c;
  }
  if (cell !== "" || row.length) { row.push(cell); rows.push(row); }
  return rows.filter((r) => r.length > 1 || r[0] !== "");
}

/** A CSV cell as the mapped type wants it (CSV has only strings); "" leaves the field out. */
function typed(value, spec) {
  if (value === "") return undefined;
  switch (spec && spec.type) {
    case "integer": case "float": { const n = Number(value); return Number.isNaN(n) ? value : n; }
    case "boolean": return ["true", "1", "yes"].includes(value.toLowerCase()) ? true : ["false", "0", "no"].includes(value.toLowerCase()) ? false : value;
    case "keyword[]": return value.split("|").map((s) => s.trim()).filter(Boolean);
    case "geopoint": {  // "lat lng", "lat;lng" or a quoted "lat,lng"
      const parts = value.trim().split(/[\s,;]+/).map(Number);
      return parts.length === 2 && parts.every(Number.isFinite) ? { lat: parts[0], lng: parts[1] } : value;
    }
    default: return value;
  }
}

/** The documents of a catalog file; throws Error with a line number on malformed input. */
export function parseCatalog(text, filename, mapping) {
  const name = filename.toLowerCase();
  if (name.endsWith(".csv")) {
    const [header, ...rows] = parseCsv(text);
    if (!header) return [];
    const fields = (mapping && mapping.fields) || {};
    return rows.map((cells) => {
      const doc = {};
      header.forEach((column, i) => { const v = typed(cells[i] ?? "", fields[column]); if (v !== undefined) doc[column] = v; });
      return doc;
    });
  }
  const trimmed = text.trimStart();
  if (trimmed.startsWith("[")) {
    const docs = JSON.parse(trimmed);
    if (!Array.isArray(docs)) throw new Error("The JSON file must hold an array of documents.");
    return docs;
  }
  return text.split(/\r?\n/).map((line, i) => {
    if (!line.trim()) return null;
    try { return JSON.parse(line); } catch (e) { throw new Error(`Line ${i + 1} is not JSON: ${e.message}`); }
  }).filter((d) => d !== null);
}

function randomId() {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

const RETRYABLE = (e) => e.status === 0 || e.status === 429 || e.status >= 500;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Sends `docs` to `url` in batches. Each batch has its own Idempotency-Key (this upload's id and
 * the batch number), so sending a batch again after a lost answer can't enqueue it twice. After a
 * network error `run()` stops; calling it again resumes at the batch that failed.
 */
export class Upload {
  constructor(api, url, docs, onProgress) {
    this.api = api; this.url = url; this.docs = docs; this.onProgress = onProgress;
    this.id = randomId();
    this.next = 0;
    this.batches = Math.ceil(docs.length / BATCH);
    this.answers = [];
  }

  get sent() { return Math.min(this.next * BATCH, this.docs.length); }

  async run() {
    while (this.next < this.batches) {
      const raw = JSON.stringify(this.docs.slice(this.next * BATCH, (this.next + 1) * BATCH));
      const headers = { "Idempotency-Key": `cabinet-${this.id}-${this.next}` };
      for (let attempt = 0; ; attempt++) {
        try {
          this.answers.push(await this.api("POST", this.url, { raw, headers }));
          break;
        } catch (e) {
          if (!RETRYABLE(e) || attempt >= 2) throw e;
          await sleep(500 * 2 ** attempt);
        }
      }
      this.next++;
      this.onProgress(this);
    }
    return this.answers;
  }
}
