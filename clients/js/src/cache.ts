/** A small LRU of answers with a time to live; a Map keeps insertion order, so its first key is the oldest. */
export class AnswerCache<T> {
  private readonly entries = new Map<string, { value: T; until: number }>();

  constructor(private readonly size: number, private readonly ttl: number) {}

  get(key: string): T | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (entry.until <= Date.now()) return undefined;
    this.entries.set(key, entry); // now the most recent
    return entry.value;
  }

  set(key: string, value: T): void {
    if (this.size <= 0) return;
    this.entries.delete(key);
    this.entries.set(key, { value, until: Date.now() + this.ttl });
    while (this.entries.size > this.size) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  clear(): void {
    this.entries.clear();
  }
}

/** JSON with object keys sorted: one string per value, whatever the order its keys were written in. */
export function stableKey(value: unknown): string {
  return JSON.stringify(value, (_key, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.keys(v as object).sort().reduce<Record<string, unknown>>((out, k) => {
          out[k] = (v as Record<string, unknown>)[k];
          return out;
        }, {})
      : v,
  );
}
