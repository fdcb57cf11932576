// What the signed-in cabinet knows, in memory only (a reload asks the API again).
export const state = {
  me: null,          // GET /v1/auth/me
  orgs: [],          // GET /v1/orgs
  orgId: null,       // the organization switched to
  createdKeys: {},   // keyId → full key, for keys created in this tab (never stored)
};

const cleanups = [];
/** Run `fn` when the page is left (stops polling). */
export function onLeave(fn) { cleanups.push(fn); }
export function leave() { while (cleanups.length) cleanups.pop()(); }

export function go(hash) {
  if (location.pathname !== "/") history.replaceState(null, "", "/" + hash);
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent("hashchange"));
  else location.hash = hash;
}

export const orgOf = (id) => state.orgs.find((o) => o.id === id);

/** The caller's role in an organization (owner, admin, member); members read, admins also write. */
export const roleIn = (orgId) => (orgOf(orgId) || {}).role || "member";
export const canWrite = (orgId) => roleIn(orgId) !== "member";

/** The query of the hash route (`#/p/x/i/y/preview?q=iphone`). */
export const hashParams = () => new URLSearchParams(location.hash.split("?")[1] || "");

/** Replaces the hash route's query without reloading the page (the address stays shareable). */
export function setHashParams(values) {
  const [path] = location.hash.split("?");
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) if (v !== null && v !== undefined && v !== "") query.set(k, v);
  const text = query.toString();
  history.replaceState(null, "", location.pathname + location.search + path + (text ? "?" + text : ""));
}
