// An index's data source (feed), its connected integration (read-only, disconnect) and deletion.
import { api } from "../api.js";
import { h, field, form, select, errorBox, show, notice, when, fill } from "../ui.js";

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

/** GET/PUT/DELETE .../feed and POST .../feed/sync. The URL comes back redacted; saving it unchanged keeps the stored one. */
export async function dataSource(slot, url, onSync) {
  let feed = null;
  try { feed = await api("GET", url + "/feed"); } catch (e) { if (e.status !== 404) throw e; }
  const status = h("div", { id: "feed-status" });
  const message = h("div");
  const describe = () => fill(status, feed
    ? h("p", {}, "Source: ", h("code", { id: "feed-url" }, feed.url), ` · ${feed.format} · ${feed.schedule} · last sync ${when(feed.lastSyncAt)}`,
      feed.lastTaskId ? ` (task ${feed.lastTaskId})` : "")
    : h("p", { class: "muted" }, "No data source: the catalog comes from uploads or the API."));
  describe();
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
        try { const t = await api("POST", url + "/feed/sync"); show(message, notice(`Sync started (task ${t.taskId}).`)); onSync(); } catch (e) { show(message, errorBox(e)); }
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
export function integration(slot, url, index, reload) {
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
  h("button", { type: "button", class: "danger", onclick: async () => {
    if (!confirm(`Disconnect ${i.platform} “${i.name}”? The plugin stops sending changes until it connects again.`)) return;
    try { await api("DELETE", url + "/integration"); await reload(); } catch (e) { show(message, errorBox(e)); }
  } }, "Disconnect"));
}

/** Deleting the index, after a confirmation naming it. */
export function deleteIndex(slot, url, index, projectId) {
  const message = h("div");
  fill(slot, h("p", {}, "Deletes the index, its documents, settings and profiles. Storefronts searching it get errors at once."), message,
    h("button", { type: "button", class: "danger", onclick: async () => {
      if (!confirm(`Delete the index “${index.name}” and its ${index.documentCount.toLocaleString()} documents? This can't be undone.`)) return;
      try { await api("DELETE", url); location.hash = `#/p/${projectId}`; } catch (e) { show(message, errorBox(e)); }
    } }, "Delete index"));
}
