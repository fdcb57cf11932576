// Synonyms: the list (pages of 20, or every match of a search over the terms), add multiway or
// oneway, edit, enable/disable, delete, import (JSON or Solr text, append or replace; a malformed
// line is named) and export as a file. A small preview beside the list re-runs its query after
// every change, so the effect of a synonym shows at once; "Preview" opens the full search preview.
import { api } from "../api.js";
import { h, field, form, select, errorBox, show, notice, fill, nextId, readOnly, download, debounce } from "../ui.js";
import { titleField, inlineProfile, defaultProfile, hitList } from "../search_view.js";

const PAGE = 20;
const split = (text) => text.split(",").map((t) => t.trim()).filter(Boolean);
const describe = (s) => (s.type === "multiway" ? s.terms.join(" ⇄ ") : `${s.input} → ${s.synonyms.join(", ")}`);
const firstTerm = (s) => (s.type === "multiway" ? s.terms[0] : s.input);

/** The body of POST/PUT synonyms from the editor's values. */
function synonymBody(v, enabled = true) {
  return v.type === "multiway"
    ? { type: "multiway", terms: split(v.terms || ""), enabled }
    : { type: "oneway", input: (v.input || "").trim(), synonyms: split(v.synonyms || ""), enabled };
}

/** The controls of one synonym (type, terms or input and synonyms), filled from `s`. */
function editorControls(s = { type: "multiway", terms: [] }) {
  const group = nextId("type");
  const multi = h("div", { class: "when-multiway", hidden: s.type !== "multiway" },
    field("Terms (comma-separated)", h("input", { name: "terms", "data-path": "terms", value: (s.terms || []).join(", "), placeholder: "cellphone, mobile phone, smartphone" }),
      "Each term finds the others."));
  const one = h("div", { class: "when-oneway", hidden: s.type !== "oneway" },
    field("Input", h("input", { name: "input", "data-path": "input", value: s.input || "", placeholder: "iphone" }), "What the shopper types."),
    field("Also finds (comma-separated)", h("input", { name: "synonyms", "data-path": "synonyms", value: (s.synonyms || []).join(", "), placeholder: "apple phone" })));
  const radio = (value, label) => h("label", { class: "inline" }, h("input", { type: "radio", name: "type", value, checked: s.type === value,
    onchange: () => { multi.hidden = value !== "multiway"; one.hidden = value !== "oneway"; } }), " ", label);
  return [h("fieldset", { id: group, "data-path": "type" }, h("legend", {}, "Kind"), radio("multiway", "Multiway: all terms are equivalent"),
    radio("oneway", "One way: the input also finds the synonyms")), multi, one];
}

export async function render(body, ctx) {
  const [mapping, profiles] = await Promise.all([ctx.mapping(), ctx.profiles()]);
  const profile = profiles[0] || defaultProfile(mapping);
  const title = titleField(profile, mapping);
  const listSlot = h("div", { "aria-live": "polite" });
  const listMessage = h("div");
  const search = h("input", { type: "search", id: nextId("find"), placeholder: "Find a term", autocomplete: "off" });
  let cursors = [null], position = 0, everything = null;

  // ---- the small preview
  const pq = h("input", { type: "search", id: nextId("pq"), autocomplete: "off", value: ctx.params.get("add") || ctx.params.get("q") || "" });
  const previewSlot = h("div", { class: "mini-preview", "aria-live": "polite" });
  const toFull = h("a", { href: ctx.href("preview") }, "Open in search preview");
  async function preview() {
    toFull.href = ctx.href("preview", null, { q: pq.value });
    if (!pq.value.trim()) { fill(previewSlot, h("p", { class: "muted" }, "Type a query to see what it finds with the current synonyms.")); return; }
    try {
      const answer = await api("POST", ctx.url + "/search", { body: { q: pq.value, perPage: 5, profile: { ...inlineProfile(profile), perPage: 5 } } });
      fill(previewSlot, h("p", { class: "summary", "data-total": String(answer.total) }, `${answer.total.toLocaleString()} results for “${pq.value}”`),
        hitList(answer, { title }));
    } catch (e) { fill(previewSlot, errorBox(e)); }
  }
  pq.addEventListener("input", debounce(preview, 200));
  const changed = async () => { everything = null; await Promise.all([load(), preview()]); };

  // ---- the list
  async function load() {
    fill(listMessage);
    try {
      const term = search.value.trim().toLowerCase();
      let items, more = false;
      if (term) {  // a search runs over every synonym (the export), shown a page at a time here too
        everything = everything || (await api("GET", ctx.url + "/synonyms/export")).items;
        const hits = everything.filter((s) => describe(s).toLowerCase().includes(term));
        items = hits.slice(position * PAGE, (position + 1) * PAGE);
        more = hits.length > (position + 1) * PAGE;
      } else {
        const cursor = cursors[position];
        const page = await api("GET", `${ctx.url}/synonyms?limit=${PAGE}` + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""));
        items = page.items;
        cursors[position + 1] = page.nextCursor;
        more = !!page.nextCursor;
      }
      renderList(items, more);
    } catch (e) { show(listMessage, errorBox(e)); }
  }

  function renderList(items, more) {
    const rows = items.map((s) => {
      const row = h("li", { class: "synonym" + (s.enabled ? "" : " disabled"), "data-id": s.id });
      const view = () => fill(row,
        h("span", { class: "terms" }, describe(s)), " ",
        h("span", { class: "badge" }, s.type === "multiway" ? "multiway" : "one way"),
        s.enabled ? null : h("span", { class: "badge warn" }, "disabled"),
        h("span", { class: "row-actions" },
          h("a", { href: ctx.href("preview", null, { q: firstTerm(s) }), "aria-label": `Preview “${firstTerm(s)}”` }, "Preview"),
          ctx.canWrite ? [
            h("label", { class: "inline" }, h("input", { type: "checkbox", checked: s.enabled, onchange: async (e) => {
              try { Object.assign(s, await api("PUT", `${ctx.url}/synonyms/${s.id}`, { body: { ...s, enabled: e.target.checked } })); await changed(); } catch (err) { e.target.checked = s.enabled; show(listMessage, errorBox(err)); }
            } }), ` Enabled`, h("span", { class: "sr-only" }, `: ${describe(s)}`)),
            h("button", { type: "button", class: "secondary", "aria-label": `Edit ${describe(s)}`, onclick: edit }, "Edit"),
            h("button", { type: "button", class: "danger", "aria-label": `Delete ${describe(s)}`, onclick: async () => {
              if (!confirm(`Delete the synonym “${describe(s)}”?`)) return;
              try { await api("DELETE", `${ctx.url}/synonyms/${s.id}`); await changed(); } catch (err) { show(listMessage, errorBox(err)); }
            } }, "Delete")] : null));
      const edit = () => {
        const f = form({ "aria-label": `Edit synonym ${describe(s)}`, class: "synonym-edit" }, editorControls(s), "Save", async (v) => {
          Object.assign(s, await api("PUT", `${ctx.url}/synonyms/${s.id}`, { body: synonymBody(v, s.enabled) }));
          await changed();
        });
        fill(row, f, h("button", { type: "button", class: "secondary", onclick: () => { view(); row.querySelector("button").focus(); } }, "Cancel"));
        f.querySelector("input:checked").focus();
      };
      view();
      return row;
    });
    fill(listSlot, rows.length ? h("ul", { class: "synonym-list" }, rows)
      : h("p", { class: "empty" }, search.value.trim() ? `No synonym contains “${search.value.trim()}”.` : "No synonym yet."),
    h("p", { class: "actions pager" },
      position > 0 ? h("button", { type: "button", class: "secondary", onclick: () => { position--; load(); } }, "Previous page") : null,
      more ? h("button", { type: "button", class: "secondary", onclick: () => { position++; load(); } }, "Next page") : null,
      position > 0 || more ? h("span", { class: "muted" }, `Page ${position + 1}`) : null));
  }
  search.addEventListener("input", debounce(() => { position = 0; cursors = [null]; load(); }, 200));

  // ---- add, import, export
  const prefill = ctx.params.get("add");
  const addForm = form({ "aria-label": "Add a synonym" }, editorControls(prefill ? { type: "oneway", input: prefill, synonyms: [] } : undefined), "Add synonym", async (v, el) => {
    const created = await api("POST", ctx.url + "/synonyms", { body: synonymBody(v) });
    el.reset();
    if (!pq.value.trim()) pq.value = firstTerm(created);
    position = 0; cursors = [null];
    await changed();
    return notice(`Synonym “${describe(created)}” added: the next search uses it.`);
  });

  fill(body,
    h("div", { class: "two-col" },
      h("div", {},
        ctx.canWrite ? h("section", { class: "card" }, h("h2", {}, "Add a synonym"), addForm) : null,
        h("section", { class: "card" }, h("h2", {}, "Synonyms"), field("Search the synonyms", search), listMessage, listSlot)),
      h("section", { class: "card preview" }, h("h2", {}, "Preview"), field("Query", pq), previewSlot, h("p", {}, toFull))),
    h("section", { class: "card" }, h("h2", {}, "Import and export"),
      ctx.canWrite ? importForm(ctx, changed) : readOnly("Importing synonyms"),
      h("p", { class: "actions" }, "Export every synonym: ",
        h("button", { type: "button", class: "secondary", onclick: () => exportAs(ctx, "json") }, "Download JSON"),
        h("button", { type: "button", class: "secondary", onclick: () => exportAs(ctx, "solr") }, "Download Solr text"))));
  await Promise.all([load(), preview()]);
}

async function exportAs(ctx, format) {
  const answer = await api("GET", ctx.url + "/synonyms/export" + (format === "solr" ? "?format=solr" : ""));
  const name = `synonyms-${ctx.index.name}`.replace(/[^\w.-]+/g, "_");
  if (format === "solr") download(name + ".txt", answer.solr, "text/plain");
  else download(name + ".json", JSON.stringify(answer.items, null, 2) + "\n");
}

/** Import from a file or pasted text; the API's error names the line (Solr) or the item (JSON). */
function importForm(ctx, changed) {
  const file = h("input", { type: "file", name: "file", accept: ".txt,.json,.solr,text/plain,application/json" });
  const text = h("textarea", { name: "text", rows: 6, class: "code", placeholder: "cellphone, mobile phone\niphone => apple phone", spellcheck: "false" });
  const format = select("format", [["solr", "Solr synonyms text"], ["json", "JSON (a list of synonyms, as exported)"]], "solr");
  const mode = select("mode", [["append", "Add to the current synonyms"], ["replace", "Replace every synonym"]], "append");
  const el = form({ "aria-label": "Import synonyms" }, [
    h("div", { class: "row" }, field("Format", format), field("Mode", mode)),
    field("File", file, "Or paste the text below."),
    field("Text", text),
  ], "Import", async (v) => {
    const chosen = file.files[0];
    const content = chosen ? await chosen.text() : v.text;
    // the API's error names `solr` (or `items[i]`): shown next to the file or the text it came from
    const [used, unused] = chosen ? [file, text] : [text, file];
    used.dataset.path = v.format === "solr" ? "solr" : "items";
    unused.dataset.path = unused.name;
    if (!content.trim()) throw { message: "Choose a file or paste the synonyms.", code: "VALIDATION_ERROR", details: [{ path: "text", message: "nothing to import" }] };
    if (v.mode === "replace" && !confirm("Replace every synonym of this index with the imported ones?")) return null;
    let request;
    if (v.format === "solr") request = { solr: content, mode: v.mode };
    else {
      let items;
      try { items = JSON.parse(content); } catch (e) {
        throw { message: `The file is not JSON: ${e.message}`, code: "VALIDATION_ERROR", details: [{ path: "items", message: e.message }] };
      }
      request = { items: Array.isArray(items) ? items : items.items, mode: v.mode };
    }
    try {
      const result = await api("POST", ctx.url + "/synonyms/import", { body: request });
      file.value = ""; text.value = "";
      await changed();
      return notice(`Imported ${result.imported} synonym(s); the index has ${result.total} now.`);
    } catch (e) {
      throw lineError(e, chosen ? chosen.name : "the text");
    }
  });
  return el;
}

/** An import error whose details carry a line (Solr) or an item index (JSON) says so first. */
function lineError(e, source) {
  const detail = (e.details || [])[0];
  if (!detail) return e;
  const item = /^items\[(\d+)\]/.exec(detail.path || "");
  const where = detail.line ? `Line ${detail.line} of ${source}` : item ? `Item ${Number(item[1]) + 1} of ${source}` : null;
  if (!where) return e;
  return { ...e, message: `${where}: ${detail.message}`, details: e.details.map((d) => ({ ...d, message: (d.line ? `line ${d.line}: ` : "") + d.message })), code: e.code };
}
