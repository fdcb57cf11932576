// The settings section: facets, mapping (and reindex), data source, the connected integration and
// deleting the index. A read-only member sees each setting, without the forms.
import { api } from "../api.js";
import { h, field, form, select, errorBox, show, notice, when, fill, table, readOnly } from "../ui.js";
import { mappingEditor } from "../mapping.js";

export async function render(body, ctx) {
  const mapping = await ctx.mapping();
  const url = ctx.url;
  const actions = h("div");
  const facets = h("div");
  const mappingSlot = h("div");
  const feedSlot = h("div");
  const integrationSlot = h("div");
  const reloadIntegration = async () => integration(integrationSlot, url, await api("GET", url), reloadIntegration, ctx.canWrite);
  fill(body,
    h("section", { class: "card" }, h("h2", {}, "Facets"), facets),
    h("section", { class: "card" }, h("h2", {}, "Mapping"), mappingSlot,
      ctx.canWrite ? h("p", { class: "actions" },
        h("button", { type: "button", class: "secondary", onclick: async () => {
          try { const t = await api("POST", url + "/reindex"); show(actions, notice(`Reindex started (task ${t.taskId}): see Catalog for its progress.`)); } catch (e) { show(actions, errorBox(e)); }
        } }, "Reindex"),
        h("button", { type: "button", class: "secondary", onclick: async () => {
          try { const t = await api("POST", url + "/reindex/cancel"); show(actions, notice(`Reindex ${t.status}.`)); } catch (e) { show(actions, errorBox(e)); }
        } }, "Cancel reindex")) : null, actions),
    h("section", { class: "card" }, h("h2", {}, "Data source"), feedSlot),
    h("section", { class: "card" }, h("h2", {}, "Shop platform integration"), integrationSlot),
    ctx.canWrite ? h("section", { class: "card" }, h("h2", {}, "Delete this index"), deleteIndex(url, ctx.index, ctx.projectId)) : null);
  integration(integrationSlot, url, ctx.index, reloadIntegration, ctx.canWrite);
  dataSource(feedSlot, url, ctx.index.feed, ctx.canWrite);
  if (ctx.canWrite) {
    await facetEditor(facets, url, mapping);
    mappingForm(mappingSlot, url, mapping);
  } else {
    const current = (await api("GET", url + "/facets")).facets;
    fill(facets, table(["Field", "Type", "Label", "Values", "Order"], current.map((f) =>
      h("tr", {}, h("td", {}, f.field), h("td", {}, f.type), h("td", {}, f.label || ""), h("td", {}, String(f.size ?? "")), h("td", {}, f.sort || ""))), null, "No facet."),
    readOnly());
    fill(mappingSlot, h("p", {}, "Id field: ", h("code", {}, mapping.idField || "id"),
      mapping.dynamic ? ". New fields are inferred from uploaded documents." : ""),
      table(["Field", "Type", "Capabilities"], Object.entries(mapping.fields || {}).map(([name, spec]) =>
        h("tr", {}, h("td", {}, name), h("td", {}, spec.type),
          h("td", {}, ["searchable", "filterable", "facetable", "sortable", "suggest"].filter((k) => spec[k]).join(", ") || "stored only"))), null, "No field."),
      readOnly());
  }
}

/** MAPPING_BREAKS_CONFIG: the settings to change first, one per line. */
function mappingError(e) {
  if (e.code !== "MAPPING_BREAKS_CONFIG") return errorBox(e);
  return h("div", { class: "alert error", role: "alert", "data-code": e.code },
    h("strong", {}, "This mapping change would break settings that use these fields. Change them first:"),
    h("ul", { class: "breaks" }, e.details.map((d) => h("li", {}, `${d.kind || "setting"} “${d.name || d.id || ""}”: `, h("code", {}, d.path), " — ", d.message))));
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

const FORMATS = [["json", "JSON array"], ["jsonl", "NDJSON (one document per line)"], ["csv", "CSV with a header row"]];
const SCHEDULES = [["manual", "only when I press Sync now"], ["hourly", "every hour"], ["daily", "every day"]];

const fieldMapText = (map) => Object.entries(map || {}).map(([from, to]) => `${from}=${to}`).join("\n");
function parseFieldMap(text) {
  const map = {};
  for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
    const [from, ...to] = line.split("=");
    map[from.trim()] = to.join("=").trim();
  }
  return map;
}

/**
 * PUT/DELETE .../feed and POST .../feed/sync; the current one comes with the index (`feed`), so no
 * page load asks GET .../feed for a 404. The URL comes back redacted; saving it unchanged keeps the stored one.
 */
function dataSource(slot, url, current, canWrite) {
  let feed = current || null;
  const status = h("div", { id: "feed-status" });
  const message = h("div");
  const describe = () => fill(status, feed
    ? h("p", {}, "Source: ", h("code", { id: "feed-url" }, feed.url), ` · ${feed.format} · ${feed.schedule} · last sync ${when(feed.lastSyncAt)}`,
      feed.lastTaskId ? ` (task ${feed.lastTaskId})` : "")
    : h("p", { class: "muted" }, "No data source: the catalog comes from uploads or the API."));
  describe();
  if (!canWrite) { fill(slot, status, readOnly()); return; }
  const urlInput = h("input", { name: "url", type: "url", required: true, maxlength: 2000, value: feed ? feed.url : "", placeholder: "https://shop.example.com/feed.json", spellcheck: "false" });
  const saveForm = form({ "aria-label": "Data source" }, [
    field("Feed URL", urlInput, "Credentials in it (user:password@, query values) are stored encrypted and shown as ***. Saving the address as shown keeps them."),
    h("div", { class: "row" }, field("Format", select("format", FORMATS, feed ? feed.format : "json")),
      field("Sync", select("schedule", SCHEDULES, feed ? feed.schedule : "manual"))),
    field("Field names (optional)", h("textarea", { name: "fieldMap", rows: 3, value: fieldMapText(feed && feed.fieldMap), placeholder: "title=name\nbrand_name=brand" }),
      "One “feed field=index field” per line, for feeds whose names differ from the mapping."),
  ], "Save data source", async (v) => {
    feed = await api("PUT", url + "/feed", { body: { url: v.url.trim(), format: v.format, schedule: v.schedule, fieldMap: parseFieldMap(v.fieldMap) } });
    urlInput.value = feed.url;
    describe();
    render();
    return notice("Data source saved.");
  });
  const actions = h("p", { class: "actions" });
  function render() {
    fill(actions, feed ? [
      h("button", { type: "button", class: "secondary", onclick: async () => {
        try { const t = await api("POST", url + "/feed/sync"); show(message, notice(`Sync started (task ${t.taskId}): see Catalog for its progress.`)); } catch (e) { show(message, errorBox(e)); }
      } }, "Sync now"),
      h("button", { type: "button", class: "danger", onclick: async () => {
        if (!confirm("Remove the data source? The documents already indexed stay.")) return;
        try {
          await api("DELETE", url + "/feed");
          feed = null; urlInput.value = ""; describe(); render();
          show(message, notice("Data source removed."));
        } catch (e) { show(message, errorBox(e)); }
      } }, "Remove data source")] : null);
  }
  render();
  fill(slot, status, saveForm, message, actions);
}

/** The platform plugin connected to the index (it connects itself with its key): shown, and disconnect. */
function integration(slot, url, index, reload, canWrite) {
  const i = index.integration;
  const message = h("div");
  if (!i) {
    fill(slot, h("p", { class: "muted", id: "integration-none" }, "No shop platform is connected. A platform plugin connects itself with a full-access secret key."), message);
    return;
  }
  const row = (term, value) => [h("dt", {}, term), h("dd", {}, value || "—")];
  fill(slot, h("dl", { class: "facts", id: "integration" },
    row("Platform", i.platform), row("Name", i.name), row("Shop address", i.url), row("Plugin version", i.version),
    row("Manages the mapping", i.settings && i.settings.manageMapping ? "yes: mapping changes here are refused" : "no"),
    row("Connected", when(i.connectedAt)), row("Updated", when(i.updatedAt))),
  h("p", {}, "While it is connected the index takes no data source."), message,
  canWrite && h("button", { type: "button", class: "danger", onclick: async () => {
    if (!confirm(`Disconnect ${i.platform} “${i.name}”? The plugin stops sending changes until it connects again.`)) return;
    try { await api("DELETE", url + "/integration"); await reload(); } catch (e) { show(message, errorBox(e)); }
  } }, "Disconnect"));
}

/** Deleting the index, after a confirmation naming it. */
function deleteIndex(url, index, projectId) {
  const message = h("div");
  return h("div", {}, h("p", {}, "Deletes the index, its documents, settings and profiles. Storefronts searching it get errors at once."), message,
    h("button", { type: "button", class: "danger", onclick: async () => {
      if (!confirm(`Delete the index “${index.name}” and its ${index.documentCount.toLocaleString()} documents? This can't be undone.`)) return;
      try { await api("DELETE", url); location.hash = `#/p/${projectId}`; } catch (e) { show(message, errorBox(e)); }
    } }, "Delete index"));
}
