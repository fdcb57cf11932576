// An organization: its projects (list, create), members (add by email, role, remove) and plan.
import { api, all } from "../api.js";
import { h, field, form, table, when, select, errorBox, show, notice, fill } from "../ui.js";
import { state, orgOf } from "../state.js";

const ROLES = ["member", "admin", "owner"];
const PLANS = ["free", "starter", "pro", "enterprise"];

export async function page(main, orgId) {
  state.orgId = orgId;
  const org = await api("GET", `/v1/orgs/${encodeURIComponent(orgId)}`);
  const projects = h("div");
  const members = h("div");
  const isAdmin = org.role !== "member";
  fill(main, 
    h("h1", {}, org.name),
    h("p", { class: "muted" }, `Your role: ${org.role} · plan: ${org.plan}`),
    h("section", { class: "card" }, h("h2", {}, "Projects"), projects,
      isAdmin ? form({ "aria-label": "New project", class: "inline-form" },
        [field("New project name", h("input", { name: "name", required: true, maxlength: 200, id: "new-project-name" }))], "Create project", async (v) => {
          const project = await api("POST", `/v1/orgs/${orgId}/projects`, { body: { name: v.name } });
          location.hash = `#/p/${project.id}`;  // its indices, with the first-run checklist
        }) : null),
    h("section", { class: "card" }, h("h2", {}, "Members"), members,
      isAdmin ? form({ "aria-label": "Add member", class: "inline-form" }, [
        field("Email of a registered user", h("input", { name: "email", type: "email", required: true })),
        field("Role", select("role", org.role === "owner" ? ROLES : ROLES.slice(0, 2), "member")),
      ], "Add member", async (v, el) => {
        await api("POST", `/v1/orgs/${orgId}/members`, { body: { email: v.email, role: v.role } });
        el.reset();
        await loadMembers(members, org);
      }) : null),
    org.role === "owner" ? h("section", { class: "card" }, h("h2", {}, "Plan"),
      h("p", {}, "Plans set how many indices a project may have, documents per index and searches per second."),
      form({ "aria-label": "Change the plan", class: "inline-form" }, [field("Plan", select("plan", PLANS, org.plan))], "Change plan", async (v) => {
        const changed = await api("PUT", `/v1/orgs/${orgId}/plan`, { body: { plan: v.plan } });
        const known = orgOf(orgId);
        if (known) known.plan = changed.plan;
        return notice(`The plan is now ${changed.plan}.`);
      })) : null);
  await Promise.all([loadProjects(projects, orgId, isAdmin), loadMembers(members, org)]);
}

async function loadProjects(slot, orgId, isAdmin) {
  const items = await all(`/v1/orgs/${orgId}/projects`);
  if (!items.length) {  // a new organization: say what comes next
    fill(slot, h("div", { class: "empty-state" },
      h("p", {}, h("strong", {}, "No project yet."), " A project holds your search indices and the API keys your shop uses."),
      isAdmin ? h("p", {}, "Name your first project below (your shop's name will do); its page then guides you through index → upload → profile → key → storefront snippet.")
        : h("p", {}, "Ask an admin or the owner of this organization to create one.")));
    return;
  }
  fill(slot, table(["Project", "Created", ""], items.map((p) => h("tr", {},
    h("td", {}, h("a", { href: `#/p/${p.id}` }, p.name)), h("td", {}, when(p.createdAt)),
    h("td", { class: "actions" }, h("a", { href: `#/p/${p.id}` }, "Indices"), h("a", { href: `#/p/${p.id}/keys` }, "API keys"))))));
}

async function loadMembers(slot, org) {
  const items = await all(`/v1/orgs/${org.id}/members`);
  const message = h("div");
  const canEdit = org.role !== "member";
  const rows = items.map((m) => {
    const who = m.name ? `${m.name} <${m.email}>` : m.email;
    const roles = org.role === "owner" || m.role === "owner" ? ROLES : ROLES.slice(0, 2);
    const role = canEdit
      ? select("role", roles, m.role, { "aria-label": `Role of ${m.email}`, onchange: async (e) => {
        try {
          await api("PUT", `/v1/orgs/${org.id}/members/${m.userId}`, { body: { role: e.target.value } });
          show(message, notice(`${m.email} is now ${e.target.value}.`));
        } catch (err) { e.target.value = m.role; show(message, errorBox(err)); return; }
        m.role = e.target.value;
      } })
      : m.role;
    return h("tr", {}, h("td", {}, who), h("td", {}, role), h("td", {}, when(m.createdAt)),
      h("td", {}, canEdit ? h("button", { type: "button", class: "danger", "aria-label": `Remove ${m.email}`, onclick: async () => {
        if (!confirm(`Remove ${m.email} from ${org.name}?`)) return;
        try { await api("DELETE", `/v1/orgs/${org.id}/members/${m.userId}`); await loadMembers(slot, org); } catch (err) { show(message, errorBox(err)); }
      } }, "Remove") : null));
  });
  fill(slot, message, table(["Member", "Role", "Since", ""], rows));
}
