// Analytics of an index for a date range: searches and no-result searches per day (a chart and its
// numbers), totals (searches, no-result rate, click-through, conversion, average click position),
// top queries with their click-through, no-result queries with a synonym or a rule to create for
// each, and the most clicked products. Dates are UTC days, as the API counts them.
import { api } from "../api.js";
import { h, field, errorBox, fill, table, percent, placeErrors, clearErrors } from "../ui.js";
import { setHashParams } from "../state.js";
import { lineChart } from "../chart.js";
import { titleField } from "../search_view.js";

const day = (d) => d.toISOString().slice(0, 10);
const daysAgo = (n) => day(new Date(Date.now() - n * 86_400_000));

export async function render(body, ctx) {
  const mapping = await ctx.mapping();
  const title = titleField(null, mapping);
  // text, not type=date: Chromium's date picker button takes a keyboard stop that shows no focus
  const dateInput = (name, value) => h("input", { name, "data-path": name, value, required: true, inputmode: "numeric", placeholder: "YYYY-MM-DD",
    pattern: "\\d{4}-\\d{2}-\\d{2}", size: 11, autocomplete: "off" });
  const from = dateInput("from", ctx.params.get("from") || daysAgo(29));
  const to = dateInput("to", ctx.params.get("to") || daysAgo(0));
  const report = h("div", { "aria-live": "polite" });
  const message = h("div");
  const preset = (n, label) => h("button", { type: "button", class: "secondary", onclick: () => { from.value = daysAgo(n - 1); to.value = daysAgo(0); load(); } }, label);
  const rangeForm = h("form", { class: "inline-form", "aria-label": "Date range", onsubmit: (e) => { e.preventDefault(); load(); } },
    field("From (YYYY-MM-DD)", from), field("To, included", to), h("button", { type: "submit" }, "Show"),
    h("span", { class: "actions presets" }, preset(7, "Last 7 days"), preset(30, "Last 30 days"), preset(90, "Last 90 days")));
  fill(body, h("section", { class: "card" }, rangeForm, message), report);

  async function load() {
    clearErrors(rangeForm);
    fill(message);
    setHashParams({ from: from.value, to: to.value });
    let data;
    try {
      data = await api("GET", `${ctx.url}/analytics?from=${encodeURIComponent(from.value)}&to=${encodeURIComponent(to.value)}&limit=20`);
    } catch (e) {
      fill(message, errorBox(e));
      placeErrors(rangeForm, e);
      return;
    }
    await draw(data);
  }

  async function draw(data) {
    const t = data.totals;
    const stat = (label, value, id) => h("div", { class: "stat", id }, h("div", { class: "stat-value" }, value), h("div", { class: "stat-label" }, label));
    const chart = await lineChart(`Searches per day, ${data.from} to ${data.to}`, data.series.map((p) => p.date), [
      { label: "Searches", values: data.series.map((p) => p.searches) },
      { label: "No-result searches", values: data.series.map((p) => p.noResultSearches) },
    ]);
    const names = await productNames(ctx, data.topClicked.map((x) => x.documentId), title);
    const preview = (q) => h("a", { href: ctx.href("preview", null, { q }), "aria-label": `Preview “${q}”` }, "Preview");
    fill(report,
      h("section", { class: "card" }, h("h2", {}, "Totals"),
        h("div", { class: "stats" },
          stat("Searches", t.searches.toLocaleString(), "total-searches"),
          stat("No-result rate", percent(t.noResultRate), "total-no-result-rate"),
          stat("Click-through rate", percent(t.clickThroughRate), "total-ctr"),
          stat("Conversion rate", percent(t.conversionRate), "total-conversion"),
          stat("Average click position", t.averageClickPosition === null ? "—" : t.averageClickPosition.toFixed(1), "total-click-position"),
          stat("Clicks", t.clicks.toLocaleString(), "total-clicks"),
          stat("Suggest requests", t.suggests.toLocaleString(), "total-suggests"))),
      h("section", { class: "card" }, h("h2", {}, "Searches per day"), chart),
      h("div", { class: "split" },
        h("section", { class: "card" }, h("h2", {}, "Top queries"),
          table(["Query", "Searches", "Average hits", "Click-through", ""], data.topQueries.map((x) => h("tr", {},
            h("td", { class: "query" }, x.query), h("td", {}, x.count.toLocaleString()), h("td", {}, x.avgHits.toFixed(1)),
            h("td", {}, percent(x.clickThroughRate)), h("td", {}, preview(x.query)))), null, "No search in this period.")),
        h("section", { class: "card" }, h("h2", {}, "Queries without results"),
          table(["Query", "Searches", ""], data.noResultQueries.map((x) => h("tr", {},
            h("td", { class: "query" }, x.query), h("td", {}, x.count.toLocaleString()),
            h("td", { class: "actions" }, ctx.canWrite ? [
              h("a", { class: "button secondary", href: ctx.href("synonyms", null, { add: x.query }), "aria-label": `Add a synonym for “${x.query}”` }, "Add a synonym"),
              h("a", { class: "button secondary", href: ctx.href("rules", "new", { q: x.query }), "aria-label": `Create a rule for “${x.query}”` }, "Create a rule")] : null,
            preview(x.query)))), null, "Every search found something."))),
      h("section", { class: "card" }, h("h2", {}, "Most clicked products"),
        table(["Product", "Id", "Clicks", "Conversions"], data.topClicked.map((x) => h("tr", {},
          h("td", {}, names.get(x.documentId) || ""), h("td", {}, h("code", {}, x.documentId)),
          h("td", {}, x.clicks.toLocaleString()), h("td", {}, x.conversions.toLocaleString()))), null, "No click recorded in this period.")));
  }
  await load();
}

/** Document id → title, fetched for the few ids shown (an id no longer in the catalog stays unnamed). */
async function productNames(ctx, ids, title) {
  const names = new Map();
  await Promise.all(ids.slice(0, 20).map(async (id) => {
    try { const doc = await api("GET", `${ctx.url}/documents/${encodeURIComponent(id)}`); names.set(id, String(doc[title] ?? "")); } catch (e) { names.set(id, "(not in the catalog)"); }
  }));
  return names;
}
