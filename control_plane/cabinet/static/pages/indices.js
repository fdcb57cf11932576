// A project's home: the first-run checklist (index → upload → profile → key → storefront snippet),
// the indices, and (for admins) the create form with a mapping editor.
import { api, all } from "../api.js";
import { h, field, form, table, when, select, fill, readOnly } from "../ui.js";
import { canWrite } from "../state.js";
import { projectHeader } from "../project.js";
import { mappingEditor } from "../mapping.js";

const LANGUAGES = ["en", "de", "fr", "es", "it", "nl", "pt", "ru", "sv"];
const EXAMPLE = {
  idField: "id",
  fields: {
    name: { type: "text", searchable: true, suggest: true },
    description: { type: "text", searchable: true },
    brand: { type: "keyword", searchable: true, filterable: true, facetable: true },
    categories: { type: "keyword[]", filterable: true, facetable: true },
    price: { type: "float", filterable: true, sortable: true, facetable: true },
    popularity: { type: "integer", sortable: true },
  },
};

export async function list(main, projectId) {
  const { nav, project } = await projectHeader(projectId, "indices");
  const writer = canWrite(project.orgId);
  const slot = h("div");
  const checklistSlot = h("div");
  const editor = mappingEditor({ idField: "id", fields: {}, dynamic: true });
  const createForm = form({ "aria-label": "Create index", id: "create-index" }, [
    field("Index name", h("input", { name: "name", required: true, maxlength: 200 })),
    field("Language", select("language", LANGUAGES, "en"), "Stemming and stop words for text fields."),
    field("Shards", h("input", { name: "shards", type: "number", min: 1, max: 64, value: 1 })),
    h("p", { class: "muted" }, "No fields? Leave the list empty: the fields are inferred from the documents you upload, and you can edit them afterwards in the index's settings."),
    editor.el,
    h("button", { type: "button", class: "secondary", onclick: () => { for (const [n, s] of Object.entries(EXAMPLE.fields)) editor.addRow(n, s); editor.setDynamic(false); } }, "Add example product fields"),
  ], "Create index", async (v) => {
    const mapping = editor.value();
    const body = { name: v.name, language: v.language, shards: Number(v.shards) || 1 };
    // no fields, the id field "id" and inference on: no mapping (the API infers one)
    if (Object.keys(mapping.fields).length || mapping.idField !== "id" || !mapping.dynamic) body.mapping = mapping;
    const index = await api("POST", `/v1/projects/${projectId}/indices`, { body });
    location.hash = `#/p/${projectId}/i/${index.id}/catalog`;
  });
  fill(main, nav, h("h1", {}, "Indices"), checklistSlot, h("section", { class: "card" }, h("h2", {}, `Indices of ${project.name}`), slot),
    h("section", { class: "card" }, h("h2", {}, "Create an index"), writer ? createForm : readOnly("Creating an index")));
  const indices = await all(`/v1/projects/${projectId}/indices`);
  fill(slot, table(["Index", "Documents", "Status", "Language", "Created"], indices.map((i) => h("tr", {},
    h("td", {}, h("a", { href: `#/p/${projectId}/i/${i.id}` }, i.name)), h("td", {}, i.documentCount.toLocaleString()),
    h("td", {}, i.status), h("td", {}, i.language), h("td", {}, when(i.createdAt)))), null,
  writer ? "No index yet: create one below." : "No index yet. An admin of the organization creates them."));
  if (writer) await checklist(checklistSlot, projectId, indices);
}

/** The first-run steps, each done or with a link to where it is done; hidden once the first four are. */
async function checklist(slot, projectId, indices) {
  const withDocs = indices.find((i) => i.documentCount > 0);
  const first = withDocs || indices[0];
  const [profiles, keys] = await Promise.all([
    first ? all(`/v1/projects/${projectId}/indices/${first.id}/profiles`).catch(() => []) : [],
    all(`/v1/projects/${projectId}/api-keys`).catch(() => []),
  ]);
  const at = (section, sub) => (first ? `#/p/${projectId}/i/${first.id}/${section}` + (sub ? `/${sub}` : "") : "#create-index");
  const steps = [
    [indices.length > 0, "Create an index", "#create-index", "An index holds your products; its mapping says which fields are searched, filtered and sorted."],
    [!!withDocs, "Upload your catalog", at("catalog"), "A JSON, NDJSON or CSV file, or send documents with the API."],
    [profiles.length > 0, "Save a search profile", at("profiles"), "Which fields are searched and how; the live preview shows the results as you tune."],
    [keys.some((k) => k.type === "public"), "Create a public key", `#/p/${projectId}/keys`, "For your shop's pages, limited to your shop's address."],
    [false, "Add search to your shop", profiles.length ? at("profiles", profiles[0].id) + "?snippet=1" : at("profiles"), "Paste the storefront snippet of your profile into a page."],
  ];
  if (steps.slice(0, 4).every(([done]) => done)) { fill(slot); return; }
  const next = steps.findIndex(([done]) => !done);
  fill(slot, h("section", { class: "card checklist", "aria-labelledby": "checklist-title" },
    h("h2", { id: "checklist-title" }, "Get started"),
    h("ol", {}, steps.map(([done, label, href, hint], i) => h("li", { class: done ? "done" : i === next ? "next" : "todo" },
      h("span", { class: "step-state" }, done ? "Done" : i === next ? "Next" : "To do"), " ",
      done ? h("span", { class: "step-label" }, label) : href === "#create-index"
        ? h("button", { type: "button", class: "link", onclick: () => document.querySelector("#create-index input").focus() }, label)
        : h("a", { href }, label),
      h("span", { class: "muted" }, ` — ${hint}`))))));
}
