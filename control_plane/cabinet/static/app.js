// The cabinet's shell: session restore, the header (organization switcher, account, sign out),
// the impersonation banner and a hash router (#/org/…, #/p/…). Emailed links open /verify-email
// and /reset-password, which the server answers with this same page.
import { api, refresh, setToken, maySignIn } from "./api.js";
import { loadSession, signedOut, landing } from "./session.js";
import { h, fill } from "./ui.js";
import { state, leave, go } from "./state.js";
import * as auth from "./pages/auth.js";
import * as account from "./pages/account.js";
import * as org from "./pages/org.js";
import * as keys from "./pages/keys.js";
import * as indices from "./pages/indices.js";
import * as indexPage from "./pages/index_page.js";

const main = document.getElementById("main");
const top = document.getElementById("top");
const banner = document.getElementById("banner");

// [pattern, page, needs a session]
const ROUTES = [
  [/^signin$/, auth.signIn, false],
  [/^signup$/, auth.signUp, false],
  [/^forgot$/, auth.forgot, false],
  [/^impersonate$/, auth.impersonate, false],
  [/^account$/, account.page, true],
  [/^org\/([^/]+)$/, org.page, true],
  [/^p\/([^/]+)\/keys$/, keys.page, true],
  [/^p\/([^/]+)$/, indices.list, true],
  // an index's sections: overview, preview, profiles[/id], catalog, synonyms, rules[/id], autocomplete, analytics, settings
  [/^p\/([^/]+)\/i\/([^/]+)(?:\/([a-z]+)(?:\/([^/]+))?)?$/, indexPage.page, true],
];

function renderHeader() {
  fill(top, h("a", { class: "brand", href: state.me ? `#/org/${state.orgId || ""}` : "#/signin" }, "shopsearch"));
  fill(banner);
  if (!state.me) return;
  const orgSelect = h("select", { id: "org-switch", "aria-label": "Organization", onchange: (e) => { state.orgId = e.target.value; go(`#/org/${state.orgId}`); } },
    state.orgs.map((o) => h("option", { value: o.id, selected: o.id === state.orgId }, `${o.name} (${o.role})`)));
  top.append(
    h("nav", { "aria-label": "Main" },
      h("label", { class: "inline" }, h("span", { class: "sr-only" }, "Organization"), orgSelect),
      h("a", { href: `#/org/${state.orgId}` }, "Projects & members"),
      h("a", { href: "#/account" }, "Account"),
      h("span", { class: "who" }, state.me.email),
      h("button", { type: "button", class: "secondary", onclick: signOut }, "Sign out")));
  if (state.me.impersonation) {
    banner.append(h("div", { class: "impersonation", role: "alert" },
      `Support session: you are acting as ${state.me.email} (started by ${state.me.impersonation.by}, ends ${new Date(state.me.impersonation.expiresAt).toLocaleString()}). `,
      h("button", { type: "button", onclick: exitImpersonation }, "End support session")));
  } else if (!state.me.emailVerified) {
    banner.append(h("div", { class: "unverified" }, "Confirm your email address to create API keys: open the link we emailed you. ",
      h("button", { type: "button", class: "secondary", onclick: async (e) => {
        try { await api("POST", "/v1/auth/resend-verification"); e.target.textContent = "Sent again"; } catch (err) { e.target.textContent = err.message; }
      } }, "Send the email again")));
  }
}

async function signOut() {
  try { await api("POST", "/v1/auth/logout"); } catch (e) { /* signed out locally either way */ }
  signedOut();
}

async function exitImpersonation() {
  try { await api("POST", "/v1/auth/impersonation/exit"); } catch (e) { /* ends locally either way */ }
  signedOut();
}

async function route() {
  leave();
  const path = location.pathname;
  if (path === "/verify-email" || path === "/reset-password") {
    renderHeader();
    const view = h("div");
    fill(main, view);
    return (path === "/verify-email" ? auth.verifyEmail : auth.resetPassword)(view);
  }
  const hash = location.hash.replace(/^#\/?/, "").split("?")[0];
  if (!hash) return go(state.me ? await landing() : "#/signin");
  for (const [pattern, page, needsSession] of ROUTES) {
    const match = hash.match(pattern);
    if (!match) continue;
    if (needsSession && !state.me) return go("#/signin");
    if (!needsSession && state.me && page !== auth.impersonate) return go(await landing());
    renderHeader();
    // Each visit renders into its own element: a page still loading when the user (or a signed-out
    // session) moves on writes into a detached element, never over the next page.
    const view = h("div", {}, h("p", {}, "Loading…"));
    fill(main, view);
    try {
      await page(view, ...match.slice(1).map((x) => (x === undefined ? undefined : decodeURIComponent(x))));
    } catch (e) {
      fill(view, h("h1", {}, "Something went wrong"), h("div", { class: "alert error", role: "alert" }, e.message));
    }
    if (!view.isConnected) return;
    const heading = view.querySelector("h1");
    document.title = (heading ? heading.textContent + " — " : "") + "shopsearch cabinet";
    if (heading) { heading.tabIndex = -1; heading.focus({ preventScroll: true }); }
    return;
  }
  fill(main, h("h1", {}, "Page not found"), h("p", {}, h("a", { href: "#/" }, "Back to the cabinet")));
}

export async function start() {
  // only a browser that signed in may hold the refresh cookie: others are not sent for a 401
  if (maySignIn() && await refresh()) {
    try { await loadSession(); } catch (e) { setToken(null); state.me = null; }
  }
  window.addEventListener("hashchange", route);
  await route();
}

start();
