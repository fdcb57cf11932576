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
