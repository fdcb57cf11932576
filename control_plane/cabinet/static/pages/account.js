// Account: who you are, change password, signed-in sessions (with revoke).
import { api, all } from "../api.js";
import { h, field, form, notice, table, when, errorBox, show, fill } from "../ui.js";
import { state } from "../state.js";
import { signedOut } from "../session.js";

export async function page(main) {
  const me = state.me;
  const sessions = h("div");
  const pw = (name, autocomplete, hint) => field(hint || name, h("input", { name, type: "password", autocomplete, required: true }));
  fill(main, 
    h("h1", {}, "Account"),
    h("section", { class: "card" }, h("h2", {}, "You"),
      h("dl", {}, h("dt", {}, "Email"), h("dd", {}, me.email, " ", me.emailVerified ? h("span", { class: "badge ok" }, "confirmed") : h("span", { class: "badge warn" }, "not confirmed")),
        h("dt", {}, "Name"), h("dd", {}, me.name || "—"), h("dt", {}, "Member since"), h("dd", {}, when(me.createdAt)))),
    h("section", { class: "card" }, h("h2", {}, "Change password"),
      form({ "aria-label": "Change password" }, [
        pw("currentPassword", "current-password", "Current password"),
        field("New password", h("input", { name: "newPassword", type: "password", autocomplete: "new-password", required: true, minlength: 10 }), "At least 10 characters. Your other sessions end."),
      ], "Change password", async (v, el) => {
        await api("POST", "/v1/auth/change-password", { body: { currentPassword: v.currentPassword, newPassword: v.newPassword } });
        el.reset();
        await loadSessions(sessions);
        return notice("Password changed. Other sessions were signed out.");
      })),
    h("section", { class: "card" }, h("h2", {}, "Signed-in sessions"), sessions));
  await loadSessions(sessions);
}

async function loadSessions(slot) {
  const items = await all("/v1/auth/sessions");
  const message = h("div");
  const rows = items.map((s) => h("tr", {},
    h("td", {}, s.userAgent || "unknown browser", s.current ? h("span", { class: "badge ok" }, "this browser") : null),
    h("td", {}, s.ip || "—"), h("td", {}, when(s.createdAt)), h("td", {}, when(s.lastUsedAt)),
    h("td", {}, h("button", { type: "button", class: "danger", "aria-label": `Revoke session from ${s.userAgent || "unknown browser"} (${when(s.createdAt)})`,
      onclick: async () => {
        try {
          await api("DELETE", `/v1/auth/sessions/${encodeURIComponent(s.familyId)}`);
          if (s.current) return signedOut();
          await loadSessions(slot);
        } catch (e) { show(message, errorBox(e)); }
      } }, "Revoke"))));
  fill(slot, message, table(["Browser", "IP address", "Signed in", "Last used", ""], rows));
}
