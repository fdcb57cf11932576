import { ShopsearchError } from "./errors";
import type { ClientOptions, FetchLike } from "./types";

export type Post = <T>(path: string, body: unknown, init?: { keepalive?: boolean }) => Promise<T>;

const DEFAULT_TIMEOUT_MS = 15_000;

/** `https://` when no scheme is given; no trailing slash. */
export function baseUrl(host: string): string {
  const trimmed = String(host || "").trim().replace(/\/+$/, "");
  if (!trimmed) throw new TypeError("shopsearch: `host` is required, e.g. https://search.example.com");
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed) ? trimmed : `https://${trimmed}`;
}

/** Seconds from a `Retry-After` header (seconds or an HTTP date); null without one. */
export function retryAfterSeconds(header: string | null): number | null {
  if (!header) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(header);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/** POSTs JSON with the key; answers the parsed body, or throws one {@link ShopsearchError}. */
export function createTransport(options: ClientOptions): Post {
  const base = baseUrl(options.host);
  if (!options.apiKey) throw new TypeError("shopsearch: `apiKey` is required");
  const timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
  const headers: Record<string, string> = {
    ...(options.headers ?? {}),
    Authorization: `Bearer ${options.apiKey}`,
    "Content-Type": "application/json",
  };

  return async function post<T>(path: string, body: unknown, init?: { keepalive?: boolean }): Promise<T> {
    const doFetch: FetchLike | undefined = options.fetch ?? (globalThis.fetch && globalThis.fetch.bind(globalThis));
    if (!doFetch) throw new TypeError("shopsearch: no fetch in this environment; pass `fetch` in the options");
    const abort = typeof AbortController === "function" ? new AbortController() : null;
    const timer = abort && timeout > 0 ? setTimeout(() => abort.abort(), timeout) : null;
    let response: Response;
    try {
      response = await doFetch(base + path, {
        method: "POST",
        headers,
        body: JSON.stringify(body),
        signal: abort?.signal,
        keepalive: init?.keepalive,
      });
    } catch (cause) {
      if (timer) clearTimeout(timer);
      const timedOut = abort?.signal.aborted === true;
      throw new ShopsearchError({
        status: 0,
        code: timedOut ? "TIMEOUT" : "NETWORK_ERROR",
        message: timedOut ? `No answer from ${base} within ${timeout} ms` : `No answer from ${base}: ${String(cause)}`,
        cause,
      });
    }
    let text: string;
    try {
      text = await response.text();
    } catch (cause) {
      throw new ShopsearchError({ status: response.status, code: "NETWORK_ERROR", message: `The answer from ${base} was cut off`, cause });
    } finally {
      if (timer) clearTimeout(timer);
    }
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch (cause) {
      parsed = undefined;
      if (response.ok) {
        throw new ShopsearchError({ status: response.status, code: "BAD_ANSWER", message: "The answer is not JSON", cause });
      }
    }
    if (response.ok) return parsed as T;
    const error = (parsed as { error?: { code?: string; message?: string; details?: unknown } } | undefined)?.error;
    throw new ShopsearchError({
      status: response.status,
      code: typeof error?.code === "string" ? error.code : `HTTP_${response.status}`,
      message: typeof error?.message === "string" ? error.message : `${response.status} ${response.statusText}`.trim(),
      details: Array.isArray(error?.details) ? (error.details as never) : [],
      retryAfter: retryAfterSeconds(response.headers.get("retry-after")),
    });
  };
}
