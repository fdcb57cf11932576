// Signing in and out of the cabinet's in-memory session.
import { api, setToken, whenSignedOut } from "./api.js";
import { state, go } from "./state.js";

export async function loadSession() {
  state.me = await api("GET", "/v1/auth/me");
  state.orgs = (await api("GET", "/v1/orgs?limit=100")).items;
  if (!state.orgs.some((o) => o.id === state.orgId)) state.orgId = state.orgs[0] ? state.orgs[0].id : null;
}

/** After login or impersonate: keep the access token in memory and open the organization. */
export async function begin(accessToken) {
  setToken(accessToken);
  await loadSession();
  go(`#/org/${state.orgId}`);
}

export function signedOut() {
  setToken(null);
  state.me = null; state.orgs = []; state.orgId = null; state.createdKeys = {};
  go("#/signin");
}
whenSignedOut(signedOut);
