// API keys of a project: create secret (read/full, optional index scope) or public (origins) keys,
// see the key once with a copy button, revoke.
import { api, all } from "../api.js";
import { h, field, form, table, when, select, errorBox, show, copyButton, nextId, fill, readOnly } from "../ui.js";
import { state, canWrite } from "../state.js";
import { projectHeader } from "../project.js";

export async function page(main, projectId) {
  const { nav, project } = await projectHeader(projectId, "keys");
  const writer = canWrite(project.orgId);
  const indices = await all(`/v1/projects/${projectId}/indices`);
  const list = h("div");
  const created = h("div");
  const typeName = nextId("type");
  const secretOnly = h("fieldset", { class: "when-secret" }, h("legend", {}, "Secret key"),
    field("Access", select("access", [["read", "read: search and read only"], ["full", "full: also write documents and settings"]], "read")),
    field("Index", select("indexId", [["", "every index of the project"], ...indices.map((i) => [i.id, i.name])], "")));
  const publicOnly = h("fieldset", { class: "when-public", hidden: true }, h("legend", {}, "Public key"),
    field("Allowed origins (one per line)", h("textarea", { name: "allowedOrigins", rows: 3, placeholder: "https://shop.example.com\nhttps://*.example.com" }),
      "The shop pages' addresses: scheme://host[:port]. The browser sends the page's origin; other origins are refused."));
  const radio = (value, label, checked) => h("label", { class: "inline" }, h("input", { type: "radio", name: "type", value, checked,
    onchange: () => { secretOnly.hidden = value !== "secret"; publicOnly.hidden = value !== "public"; } }), " ", label);
  const createForm = form({ "aria-label": "Create API key" }, [
    field("Name", h("input", { name: "name", required: true, maxlength: 200, placeholder: "storefront, import job…" })),
    h("fieldset", { id: typeName }, h("legend", {}, "Type"), radio("secret", "Secret (server side)", true), radio("public", "Public (storefront search from shop pages)", false)),
    secretOnly, publicOnly,
  ], "Create key", async (v, el) => {
    const body = { type: v.type, name: v.name };
    if (v.type === "secret") {
      body.access = v.access;
      if (v.indexId) body.indexId = v.indexId;
    } else {
      body.allowedOrigins = v.allowedOrigins.split(/\s+/).filter(Boolean);
    }
    const key = await api("POST", `/v1/projects/${projectId}/api-keys`, { body });
    state.createdKeys[key.id] = key.key;
    el.reset(); secretOnly.hidden = false; publicOnly.hidden = true;
    const value = h("code", { class: "secret", id: "new-key" }, key.key);
    show(created, h("div", { class: "alert ok", role: "status" },
      h("p", {}, h("strong", {}, `Key “${key.name}” created. Copy it now: it is shown only once.`)),
      h("p", { class: "key-line" }, value, " ", copyButton(() => key.key, "Copy key"))));
    await load(list, projectId, indices, writer);
  });
  fill(main, nav, h("h1", {}, "API keys"), created,
    h("section", { class: "card" }, h("h2", {}, "Keys"), list),
    h("section", { class: "card" }, h("h2", {}, "Create a key"), writer ? createForm : readOnly("Creating and revoking keys")));
  await load(list, projectId, indices, writer);
}

async function load(slot, projectId, indices, writer) {
  const keys = await all(`/v1/projects/${projectId}/api-keys`);
  const message = h("div");
  const indexName = (id) => (indices.find((i) => i.id === id) || { name: id }).name;
  const rows = keys.map((k) => h("tr", {},
    h("td", {}, k.name), h("td", {}, k.type), h("td", {}, h("code", {}, k.prefix + "…")),
    h("td", {}, k.type === "secret" ? `${k.access}${k.indexId ? " · " + indexName(k.indexId) : " · every index"}` : (k.allowedOrigins || []).join(", ")),
    h("td", {}, when(k.createdAt)), h("td", {}, when(k.lastUsedAt)),
    h("td", {}, writer ? h("button", { type: "button", class: "danger", "aria-label": `Revoke key ${k.name}`, onclick: async () => {
      if (!confirm(`Revoke “${k.name}”? Anything using it stops working at once.`)) return;
      try { await api("DELETE", `/v1/projects/${projectId}/api-keys/${k.id}`); delete state.createdKeys[k.id]; await load(slot, projectId, indices, writer); } catch (e) { show(message, errorBox(e)); }
    } }, "Revoke") : null)));
  fill(slot, message, table(["Name", "Type", "Key", "Access / origins", "Created", "Last used", ""], rows));
}
