// Indices: the list with a create form (mapping editor), and one index's page: upload (add or
// replace the whole catalog), live tasks, reindex/cancel, documents browser, facets, mapping,
// data source, integration and deletion (the last three in index_settings.js).
import { api, all } from "../api.js";
import { h, field, form, table, when, select, errorBox, show, notice, nextId, fill } from "../ui.js";
import { onLeave } from "../state.js";
import { projectHeader } from "../project.js";
import { mappingEditor } from "../mapping.js";
import { parseCatalog, Upload, BATCH } from "../upload.js";
import { dataSource, integration, deleteIndex } from "./index_settings.js";

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
const DONE = new Set(["succeeded", "failed", "canceled"]);
const base = (p, i) => `/v1/projects/${p}/indices/${i}`;

/** MAPPING_BREAKS_CONFIG: the settings to change first, one per line. */
function mappingError(e) {
  if (e.code !== "MAPPING_BREAKS_CONFIG") return errorBox(e);
  return h("div", { class: "alert error", role: "alert", "data-code": e.code },
    h("strong", {}, "This mapping change would break settings that use these fields. Change them first:"),
    h("ul", { class: "breaks" }, e.details.map((d) => h("li", {}, `${d.kind || "setting"} “${d.name || d.id || ""}”: `, h("code", {}, d.path), " — ", d.message))));
}

export async function list(main, projectId) {
  const { nav } = await projectHeader(projectId, "indices");
  const slot = h("div");
  const editor = mappingEditor();
  const createForm = form({ "aria-label": "Create index" }, [
    field("Index name", h("input", { name: "name", required: true, maxlength: 200 })),
    field("Language", select("language", LANGUAGES, "en"), "Stemming and stop words for text fields."),
    field("Shards", h("input", { name: "shards", type: "number", min: 1, max: 64, value: 1 })),
    editor.el,
    h("button", { type: "button", class: "secondary", onclick: () => { for (const [n, s] of Object.entries(EXAMPLE.fields)) editor.addRow(n, s); } }, "Add example product fields"),
  ], "Create index", async (v) => {
    const mapping = editor.value();
    const body = { name: v.name, language: v.language, shards: Number(v.shards) || 1 };
    if (Object.keys(mapping.fields).length || mapping.idField !== "id") body.mapping = mapping;
    const index = await api("POST", `/v1/projects/${projectId}/indices`, { body });
    location.hash = `#/p/${projectId}/i/${index.id}`;
  });
  fill(main, nav, h("h1", {}, "Indices"), h("section", { class: "card" }, slot),
    h("section", { class: "card" }, h("h2", {}, "Create an index"), createForm));
  const indices = await all(`/v1/projects/${projectId}/indices`);
  fill(slot, table(["Index", "Documents", "Status", "Language", "Created"], indices.map((i) => h("tr", {},
    h("td", {}, h("a", { href: `#/p/${projectId}/i/${i.id}` }, i.name)), h("td", {}, i.documentCount.toLocaleString()),
    h("td", {}, i.status), h("td", {}, i.language), h("td", {}, when(i.createdAt))))));
}

export async function detail(main, projectId, indexId) {
  const { nav } = await projectHeader(projectId, "indices");
  const url = base(projectId, indexId);
  const [index, mapping] = await Promise.all([api("GET", url), api("GET", url + "/mapping")]);
  const summary = h("p", { class: "muted", id: "index-summary" });
  const setSummary = (i) => fill(summary, `${i.documentCount.toLocaleString()} documents · ${i.status} · language ${i.language} · ${i.shards} shard(s)`);
  setSummary(index);
  const actions = h("div");
  const tasks = h("div", { "aria-live": "polite" });
  const documents = h("div");
  const facets = h("div");
  const mappingSlot = h("div");
  const feedSlot = h("div");
  const integrationSlot = h("div");
  const deleteSlot = h("div");
  const reloadIntegration = async () => integration(integrationSlot, url, await api("GET", url), reloadIntegration);

  let reloadDocuments = async () => {};
  async function refreshIndex() {
    try { setSummary(await api("GET", url)); await reloadDocuments(); } catch (e) { /* the next poll tries again */ }
  }

  fill(main, nav, h("h1", {}, index.name), summary,
    h("p", { class: "actions" }, h("a", { class: "button", href: `#/p/${projectId}/i/${indexId}/profiles` }, "Search profiles & preview"),
      h("button", { type: "button", class: "secondary", onclick: async () => {
        try { const t = await api("POST", url + "/reindex"); show(actions, notice(`Reindex started (task ${t.taskId}).`)); } catch (e) { show(actions, errorBox(e)); }
      } }, "Reindex"),
      h("button", { type: "button", class: "secondary", onclick: async () => {
        try { const t = await api("POST", url + "/reindex/cancel"); show(actions, notice(`Reindex ${t.status}.`)); } catch (e) { show(actions, errorBox(e)); }
      } }, "Cancel reindex")),
    actions,
    h("section", { class: "card" }, h("h2", {}, "Upload a catalog"), uploadForm(projectId, indexId, mapping, refreshIndex)),
    h("section", { class: "card" }, h("h2", {}, "Tasks"), tasks),
    h("section", { class: "card" }, h("h2", {}, "Documents"), documents),
    h("section", { class: "card" }, h("h2", {}, "Facets"), facets),
    h("section", { class: "card" }, h("h2", {}, "Mapping"), mappingSlot),
    h("section", { class: "card" }, h("h2", {}, "Data source"), feedSlot),
    h("section", { class: "card" }, h("h2", {}, "Shop platform integration"), integrationSlot),
    h("section", { class: "card" }, h("h2", {}, "Delete this index"), deleteSlot));
  integration(integrationSlot, url, index, reloadIntegration);
  deleteIndex(deleteSlot, url, index, projectId);

  // Live task status: polled while this page is open.
  let lastActive = null;
  async function pollTasks() {
    try {
      const page = await api("GET", `/v1/projects/${projectId}/tasks?indexId=${indexId}&limit=10`);
      renderTasks(tasks, page.items);
      const active = page.items.filter((t) => !DONE.has(t.status)).length;
      if (lastActive !== null && active !== lastActive) refreshIndex();
      lastActive = active;
    } catch (e) { show(tasks, errorBox(e)); }
  }
  await pollTasks();
  const timer = setInterval(pollTasks, 1000);
  onLeave(() => clearInterval(timer));

  reloadDocuments = await browseDocuments(documents, url);
  await Promise.all([facetEditor(facets, url, mapping), mappingForm(mappingSlot, url, mapping), dataSource(feedSlot, url, pollTasks)]);
}

function renderTasks(slot, items) {
  fill(slot, table(["Task", "Type", "Status", "Documents", "Created", "Finished"], items.map((t) => {
    const d = t.details || {};
    const count = d.indexed !== undefined ? `${d.indexed} indexed` : d.received !== undefined ? `${d.received} received` : "";
    return h("tr", { "data-status": t.status }, h("td", {}, h("code", {}, t.taskId)), h("td", {}, t.type),
      h("td", {}, h("span", { class: `badge ${t.status}` }, t.status), t.error ? h("div", { class: "error-text" }, `${t.error.code}: ${t.error.message}`) : null),
      h("td", {}, count), h("td", {}, when(t.createdAt)), h("td", {}, when(t.finishedAt)));
  }), "Latest tasks of this index (updates live)"));
}

function uploadForm(projectId, indexId, mapping, refreshIndex) {
  const url = base(projectId, indexId);
  const fileInput = h("input", { type: "file", name: "file", accept: ".json,.ndjson,.jsonl,.csv,application/json,text/csv", required: true });
  const mode = nextId("mode");
  const radio = (value, label, checked) => h("label", { class: "inline" }, h("input", { type: "radio", name: "mode", value, checked }), " ", label);
  const progress = h("progress", { max: 1, value: 0, "aria-label": "Upload progress" });
  const status = h("p", { role: "status", class: "upload-status" });
  const message = h("div");
  const resume = h("button", { type: "button", hidden: true }, "Resume upload");
  const button = h("button", { type: "submit" }, "Upload");
  let upload = null, session = null;

  const onProgress = (u) => {
    progress.max = u.docs.length; progress.value = u.sent;
    status.textContent = `${u.sent.toLocaleString()} of ${u.docs.length.toLocaleString()} documents sent (batch ${u.next} of ${u.batches}).`;
  };

  async function watch(taskIds) {
    const finished = new Map();
    while (finished.size < taskIds.length) {
      for (const id of taskIds) {
        if (finished.has(id)) continue;
        const t = await api("GET", `/v1/projects/${projectId}/tasks/${id}`);
        if (DONE.has(t.status)) finished.set(id, t);
      }
      status.textContent = `Indexing: ${finished.size} of ${taskIds.length} task(s) finished.`;
      if (finished.size < taskIds.length) await new Promise((r) => setTimeout(r, 500));
    }
    const failed = [...finished.values()].filter((t) => t.status !== "succeeded");
    await refreshIndex();
    if (failed.length) show(message, errorBox({ message: `${failed.length} task(s) did not succeed: ${failed.map((t) => `${t.taskId} ${t.status}${t.error ? " — " + t.error.message : ""}`).join("; ")}` }));
    else { status.textContent = `Done: ${upload.docs.length.toLocaleString()} documents indexed.`; show(message, notice("The catalog is searchable.")); }
  }

  async function go() {
    resume.hidden = true; button.disabled = true;
    try {
      const answers = await upload.run();
      let taskIds = answers.map((a) => a.taskId).filter(Boolean);
      if (session) {
        status.textContent = "Swapping in the new catalog…";
        taskIds = [(await api("POST", `${url}/replace-sessions/${session.id}/commit`)).taskId];
        session = null;
      }
      await watch(taskIds);
      upload = null;
    } catch (e) {
      show(message, errorBox(e));
      if (e.status === 0 || e.status >= 500 || e.status === 429) {
        resume.hidden = false;
        status.textContent += " Stopped: resume when the connection is back; batches already sent are not sent twice.";
      } else if (session) {
        await api("POST", `${url}/replace-sessions/${session.id}/abort`).catch(() => {});
        session = null; upload = null;
      } else upload = null;
    } finally { button.disabled = false; }
  }
  resume.addEventListener("click", () => { fill(message); go(); });

  const el = h("form", { "aria-label": "Upload a catalog" },
    field("Catalog file", fileInput, `A JSON array, NDJSON (one document per line) or CSV with a header row. Sent in batches of ${BATCH}. CSV list fields separate values with |.`),
    h("fieldset", { id: mode }, h("legend", {}, "What to do"),
      radio("upsert", "Add or replace documents by id", true),
      radio("replace", "Replace the whole catalog (documents not in the file are removed; search answers from the old catalog until the swap)", false)),
    h("div", { class: "progress" }, progress, status), message, button, " ", resume);
  el.addEventListener("submit", async (event) => {
    event.preventDefault();
    fill(message);
    const file = fileInput.files[0];
    if (!file) return;
    let docs;
    try { docs = parseCatalog(await file.text(), file.name, mapping); } catch (e) { show(message, errorBox({ message: `${file.name}: ${e.message}` })); return; }
    if (!docs.length) { show(message, errorBox({ message: `${file.name} holds no documents.` })); return; }
    let target = url + "/documents";
    if (new FormData(el).get("mode") === "replace") {
      try { session = await api("POST", url + "/replace-sessions", { body: {} }); } catch (e) { show(message, errorBox(e)); return; }
      target = `${url}/replace-sessions/${session.id}/documents`;
    }
    upload = new Upload(api, target, docs, onProgress);
    onProgress(upload);
    await go();
  });
  return el;
}

async function browseDocuments(slot, url) {
  const view = h("pre", { class: "doc", tabindex: 0, "aria-label": "Document" }, "Choose a document to see it here.");
  const list = h("div");
  const message = h("div");
  const cursors = [null];
  async function load(position) {
    const cursor = cursors[position];
    const page = await api("GET", `${url}/documents?limit=20` + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""));
    cursors[position + 1] = page.nextCursor;
    fill(list, h("ul", { class: "doc-list" }, page.items.length ? page.items.map((d) => {
      const id = d.id ?? Object.values(d)[0];
      const title = d.name || d.title || "";
      return h("li", {}, h("button", { type: "button", class: "link", onclick: () => { view.textContent = JSON.stringify(d, null, 2); } }, String(id)), " ", title);
    }) : h("li", {}, "No documents yet.")),
    h("p", {}, position > 0 ? h("button", { type: "button", class: "secondary", onclick: () => load(position - 1) }, "Previous") : null, " ",
      page.nextCursor ? h("button", { type: "button", class: "secondary", onclick: () => load(position + 1) }, "Next") : null));
  }
  const lookup = form({ "aria-label": "Find a document", class: "inline-form" }, [field("Document id", h("input", { name: "docId", required: true }))], "Show", async (v) => {
    const doc = await api("GET", `${url}/documents/${encodeURIComponent(v.docId)}`);
    view.textContent = JSON.stringify(doc, null, 2);
  });
  fill(slot, lookup, message, h("div", { class: "split" }, list, view),
    h("button", { type: "button", class: "secondary", onclick: () => load(0).catch((e) => show(message, errorBox(e))) }, "Reload"));
  await load(0);
  return () => load(0);
}

async function facetEditor(slot, url, mapping) {
  const facetable = Object.entries(mapping.fields || {}).filter(([, s]) => s.facetable).map(([n]) => n);
  const current = (await api("GET", url + "/facets")).facets;
  const rows = h("tbody");
  const add = (f = { field: facetable[0] || "", type: "terms", label: "", size: 10, sort: "count" }) => {
    const ranges = h("input", { value: (f.ranges || []).map((r) => `${r.from ?? ""}-${r.to ?? ""}:${r.label}`).join(", "), "aria-label": "Ranges", placeholder: "0-100:Under $100, 100-:$100 and up" });
    const tr = h("tr", {},
      h("td", {}, select("", facetable, f.field, { "aria-label": "Facet field", "data-k": "field" })),
      h("td", {}, select("", ["terms", "range"], f.type, { "aria-label": "Facet type", "data-k": "type" })),
      h("td", {}, h("input", { value: f.label || "", "aria-label": "Label", "data-k": "label" })),
      h("td", {}, h("input", { type: "number", min: 1, max: 1000, value: f.size || 10, "aria-label": "Values shown", "data-k": "size" })),
      h("td", {}, select("", ["count", "alpha"], f.sort || "count", { "aria-label": "Order", "data-k": "sort" })),
      h("td", {}, ranges),
      h("td", {}, h("button", { type: "button", class: "secondary", "aria-label": "Remove facet", onclick: () => tr.remove() }, "✕")));
    tr.ranges = ranges;
    rows.append(tr);
  };
  current.forEach(add);
  const value = () => [...rows.children].map((tr) => {
    const get = (k) => tr.querySelector(`[data-k=${k}]`).value;
    const facet = { field: get("field"), type: get("type"), label: get("label") || get("field"), size: Number(get("size")), sort: get("sort") };
    if (facet.type === "range") {
      facet.ranges = tr.ranges.value.split(",").map((s) => s.trim()).filter(Boolean).map((s) => {
        const [span, label] = s.split(":");
        const [from, to] = span.split("-");
        const r = { label: (label || span).trim() };
        if (from && from.trim()) r.from = Number(from);
        if (to && to.trim()) r.to = Number(to);
        return r;
      });
    }
    return facet;
  });
  fill(slot, 
    facetable.length ? null : h("p", {}, "No field is facetable yet: mark one in the mapping."),
    form({ "aria-label": "Facets" }, [
      h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, h("tr", {}, ["Field", "Type", "Label", "Values", "Order", "Ranges (range facets)", ""].map((x) => h("th", { scope: "col" }, x)))), rows)),
      h("button", { type: "button", class: "secondary", onclick: () => add() }, "Add facet"),
    ], "Save facets", async () => {
      await api("PUT", url + "/facets", { body: { facets: value() } });
      return notice("Facets saved.");
    }));
}

function mappingForm(slot, url, mapping) {
  const editor = mappingEditor(mapping);
  const message = h("div");
  const button = h("button", { type: "submit" }, "Save mapping");
  const el = h("form", { "aria-label": "Mapping" },
    h("p", {}, "Changing a field's type or flags rebuilds the index from the stored documents; search keeps answering meanwhile."),
    editor.el, message, button);
  el.addEventListener("submit", async (event) => {
    event.preventDefault();
    button.disabled = true;
    try {
      const task = await api("PUT", url + "/mapping", { body: editor.value() });
      show(message, notice(`Mapping saved; task ${task.taskId} applies it.`));
    } catch (e) { show(message, mappingError(e)); } finally { button.disabled = false; }
  });
  fill(slot, el);
}
