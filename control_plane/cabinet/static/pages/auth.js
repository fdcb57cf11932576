// Signed-out pages: sign in, sign up, forgot password, support code, and the two pages emailed
// links open (verify email, reset password).
import { api } from "../api.js";
import { h, field, form, notice, errorBox, fill } from "../ui.js";
import { state } from "../state.js";
import { begin, loadSession } from "../session.js";

const email = (attrs = {}) => h("input", { name: "email", type: "email", autocomplete: "email", required: true, ...attrs });
const password = (name, autocomplete, attrs = {}) =>
  h("input", { name, type: "password", autocomplete, required: true, minlength: 10, ...attrs });

function card(title, ...content) {
  return h("section", { class: "card narrow" }, h("h1", {}, title), ...content);
}

export function signIn(main) {
  fill(main, card("Sign in",
    form({ "aria-label": "Sign in" }, [field("Email", email()), field("Password", password("password", "current-password", { minlength: null }))],
      "Sign in", async (v) => {
        const answer = await api("POST", "/v1/auth/login", { body: { email: v.email, password: v.password } });
        await begin(answer.accessToken);
      }),
    h("p", {}, h("a", { href: "#/signup" }, "Create an account"), " · ", h("a", { href: "#/forgot" }, "Forgot your password?"),
      " · ", h("a", { href: "#/impersonate" }, "Support code"))));
}

export function signUp(main) {
  const done = h("div");
  const signup = form({ "aria-label": "Sign up" }, [
    field("Email", email()),
    field("Password", password("password", "new-password"), "At least 10 characters."),
    field("Your name", h("input", { name: "name", autocomplete: "name" })),
    field("Shop or company name", h("input", { name: "organizationName", autocomplete: "organization" }), "Names your organization; you can invite others later."),
  ], "Create account", async (v) => {
    const body = { email: v.email, password: v.password };
    if (v.name) body.name = v.name;
    if (v.organizationName) body.organizationName = v.organizationName;
    await api("POST", "/v1/auth/register", { body });
    signup.remove();
    fill(done, notice(`Account created. We sent a confirmation link to ${v.email}: open it, then sign in.`),
      h("p", { class: "hint" }, "Running shopsearch on your own machine without a mail server? " +
        "The service writes the whole mail, link included, to its log."),
      h("p", {}, h("a", { href: "#/signin" }, "Sign in")));
  });
  fill(main, card("Create your shopsearch account", done, signup,
    h("p", {}, "Already have an account? ", h("a", { href: "#/signin" }, "Sign in"))));
}

export function forgot(main) {
  const f = form({ "aria-label": "Forgot password" }, [field("Email", email())], "Email me a reset link", async (v) => {
    await api("POST", "/v1/auth/forgot-password", { body: { email: v.email } });
    return notice(`If ${v.email} has an account, a reset link is on its way. It opens a page here to choose a new password.`);
  });
  fill(main, card("Forgot your password?", f, h("p", {}, h("a", { href: "#/signin" }, "Back to sign in"))));
}

export function impersonate(main) {
  fill(main, card("Support session",
    h("p", {}, "Staff of the service: enter the one-time code the operator command printed for an organization."),
    form({ "aria-label": "Support code" }, [field("One-time code", h("input", { name: "code", required: true, autocomplete: "off" }))],
      "Start support session", async (v) => {
        const answer = await api("POST", "/v1/auth/impersonate", { body: { code: v.code.trim() } });
        await begin(answer.accessToken);
      })));
}

/** The token of an emailed link, taken off the address bar (and out of history) once read. */
function takeToken() {
  const token = new URLSearchParams(location.search).get("token") || "";
  history.replaceState(null, "", location.pathname);
  return token;
}

export async function verifyEmail(main) {
  const token = takeToken();
  const result = h("div");
  fill(main, card("Confirm your email address", result));
  if (!token) { fill(result, errorBox({ message: "This link has no token. Open the link from the email again." })); return; }
  fill(result, h("p", {}, "Confirming…"));
  try {
    await api("GET", `/v1/auth/verify-email?token=${encodeURIComponent(token)}`);
    if (state.me) await loadSession();
    fill(result, notice("Your email address is confirmed."),
      h("p", {}, h("a", { href: "/#/", class: "button" }, state.me ? "Back to the cabinet" : "Sign in")));
  } catch (e) {
    fill(result, errorBox(e), h("p", {}, "Links work once and expire; sign in and ask for a new one.", " ", h("a", { href: "/#/signin" }, "Sign in")));
  }
}

export function resetPassword(main) {
  const token = takeToken();
  const done = h("div");
  const f = form({ "aria-label": "Choose a new password" }, [
    field("New password", password("password", "new-password"), "At least 10 characters. Every signed-in session ends."),
    field("Repeat the new password", password("repeat", "new-password")),
  ], "Set new password", async (v) => {
    if (v.password !== v.repeat) throw { message: "The two passwords differ.", code: "MISMATCH" };
    await api("POST", "/v1/auth/reset-password", { body: { token, password: v.password } });
    f.remove();
    fill(done, notice("Your password is changed. Sign in with the new one."), h("p", {}, h("a", { href: "/#/signin", class: "button" }, "Sign in")));
  });
  fill(main, card("Choose a new password", done, token ? f : errorBox({ message: "This link has no token. Open the link from the email again." })));
}
