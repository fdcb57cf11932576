// The catalog section: upload a file (add or replace the whole catalog, resumable), the index's
// live tasks and a documents browser.
import { api } from "../api.js";
import { h, field, form, errorBox, show, notice, nextId, fill, readOnly } from "../ui.js";
import { parseCatalog, Upload, BATCH } from "../upload.js";
import { DONE, liveTasks } from "../tasks.js";

export async function render(body, ctx) {
  const mapping = await ctx.mapping();
  const summary = h("p", { class: "muted", id: "index-summary" });
  const setSummary = (i) => fill(summary, `${i.documentCount.toLocaleString()} documents · ${i.status} · language ${i.language} · ${i.shards} shard(s)`);
  setSummary(ctx.index);
  const tasks = h("div", { "aria-live": "polite" });
  const documents = h("div");
  let reloadDocuments = async () => {};
  async function refreshIndex() {
    try { setSummary(await api("GET", ctx.url)); await reloadDocuments(); } catch (e) { /* the next poll tries again */ }
  }
  fill(body, summary,
    h("section", { class: "card" }, h("h2", {}, "Upload a catalog"),
      ctx.canWrite ? uploadForm(ctx.projectId, ctx.indexId, mapping, refreshIndex) : readOnly("Uploading documents")),
    h("section", { class: "card" }, h("h2", {}, "Tasks"), tasks),
    h("section", { class: "card" }, h("h2", {}, "Documents"), documents));
  await liveTasks(tasks, ctx, { onChange: refreshIndex });
  reloadDocuments = await browseDocuments(documents, ctx.url);
}

const base = (p, i) => `/v1/projects/${p}/indices/${i}`;

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

