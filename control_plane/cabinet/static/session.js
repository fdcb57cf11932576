// Signing in and out of the cabinet's in-memory session.
import { api, all, setToken, whenSignedOut, markSignedIn } from "./api.js";
import { state, go } from "./state.js";

export async function loadSession() {
  state.me = await api("GET", "/v1/auth/me");
  state.orgs = (await api("GET", "/v1/orgs?limit=100")).items;
  if (!state.orgs.some((o) => o.id === state.orgId)) state.orgId = state.orgs[0] ? state.orgs[0].id : null;
}

/** After login or impersonate: keep the access token in memory and open the merchant's work. */
export async function begin(accessToken) {
  setToken(accessToken);
  markSignedIn(true);
  await loadSession();
  go(await landing());
}

/**
 * Where a signed-in merchant starts: the indices of the organization's first project (with the
 * first-run checklist), or the organization's page when it has no project yet (its next step).
 */
export async function landing() {
  if (!state.orgId) return "#/account";
  const projects = await all(`/v1/orgs/${state.orgId}/projects`).catch(() => []);
  return projects.length ? `#/p/${projects[0].id}` : `#/org/${state.orgId}`;
}

export function signedOut() {
  markSignedIn(false);
  setToken(null);
  state.me = null; state.orgs = []; state.orgId = null; state.createdKeys = {};
  go("#/signin");
}
whenSignedOut(signedOut);
