// The REST API client. The access token lives only in this module's memory; the refresh token is
// the HttpOnly cookie login sets (path /v1/auth), so a reload restores the session via refresh.
// The page can't see that cookie: a marker in localStorage (no secret, just "1") says this browser
// signed in and may hold one, so a visitor who never did is not sent to /v1/auth/refresh for a 401.

let accessToken = null;
let refreshing = null;
const MARKER = "shopsearch.signedIn";

/** True when this browser signed in and has not signed out since (the refresh cookie may exist). */
export function maySignIn() {
  try { return localStorage.getItem(MARKER) === "1"; } catch (e) { return false; }
}
export function markSignedIn(on) {
  try { if (on) localStorage.setItem(MARKER, "1"); else localStorage.removeItem(MARKER); } catch (e) { /* private mode */ }
}

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `The service answered ${status}`);
    this.status = status;
    this.code = error.code || (status === 0 ? "NETWORK" : "HTTP_" + status);
    this.details = error.details || [];
  }
}

export function setToken(token) { accessToken = token; }
export function hasToken() { return accessToken !== null; }

/** One refresh at a time: a second concurrent refresh would re-use a rotated cookie (theft detection). */
export function refresh() {
  if (!refreshing) {
    refreshing = fetch("/v1/auth/refresh", { method: "POST", credentials: "same-origin" })
      .then(async (r) => {
        if (!r.ok) { accessToken = null; markSignedIn(false); return false; }
        accessToken = (await r.json()).accessToken;
        return true;
      })
      .catch(() => false)
      .finally(() => { refreshing = null; });
  }
  return refreshing;
}

/** fetch() a /v1 route; answers the parsed JSON body (null for 204), throws ApiError. */
export async function api(method, path, { body, headers = {}, raw, retry = true } = {}) {
  const init = { method, credentials: "same-origin", headers: { ...headers } };
  if (accessToken) init.headers.Authorization = "Bearer " + accessToken;
  if (raw !== undefined) {
    init.body = raw;
    init.headers["Content-Type"] = "application/json";
  } else if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, { error: { code: "NETWORK", message: "The service could not be reached. Check the connection and try again." } });
  }
  if (response.status === 401 && retry && accessToken && !path.startsWith("/v1/auth/refresh")) {
    if (await refresh()) return api(method, path, { body, headers, raw, retry: false });
    if (onSignedOut) onSignedOut();
  }
  if (response.status === 204) return null;
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

let onSignedOut = null;
export function whenSignedOut(fn) { onSignedOut = fn; }

/** Every item of a paged list (follows nextCursor). */
export async function all(path, limit = 100) {
  const items = [];
  let cursor = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const page = await api("GET", `${path}${sep}limit=${limit}` + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""));
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor && items.length < 5000);
  return items;
}
