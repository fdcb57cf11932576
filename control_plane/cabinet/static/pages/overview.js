// An index at a glance: documents, searches today, the no-result rate, the last tasks (live), what
// is left to set up, and a search box that opens the search preview.
import { api } from "../api.js";
import { h, field, fill, percent, nextId } from "../ui.js";
import { liveTasks } from "../tasks.js";

const today = () => new Date().toISOString().slice(0, 10);
const daysAgo = (n) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);

export async function render(body, ctx) {
  const [stats, profiles, config] = await Promise.all([
    api("GET", `${ctx.url}/analytics?from=${daysAgo(6)}&to=${today()}&limit=5`).catch(() => null),
    ctx.profiles(),
    api("GET", `${ctx.url}/suggestions/config`).catch(() => null),
  ]);
  const index = ctx.index;
  const todayPoint = stats ? stats.series.find((p) => p.date === today()) || { searches: 0, noResultSearches: 0 } : null;
  const stat = (label, value, id, hint) => h("div", { class: "stat", id }, h("div", { class: "stat-value" }, value), h("div", { class: "stat-label" }, label),
    hint ? h("div", { class: "stat-hint muted" }, hint) : null);
  const tasks = h("div", { "aria-live": "polite" });
  const count = h("span", {}, index.documentCount.toLocaleString());
  const q = h("input", { type: "search", id: nextId("oq"), name: "q", autocomplete: "off", placeholder: "iphone" });
  const todo = [
    index.documentCount ? null : h("li", {}, h("a", { href: ctx.href("catalog") }, "Upload your catalog"), " — nothing is searchable yet."),
    profiles.length ? null : h("li", {}, h("a", { href: ctx.href("profiles", "new") }, "Save a search profile"), " — the settings your storefront searches with."),
    config && !config.sources.length && !config.popularQueries.enabled ? h("li", {}, h("a", { href: ctx.href("autocomplete") }, "Set up autocomplete")) : null,
  ].filter(Boolean);

  fill(body,
    h("p", { class: "muted" }, `${index.status} · language ${index.language} · ${index.shards} shard(s) · ${index.replicas} replica(s)`,
      index.integration ? ` · connected to ${index.integration.platform}` : "", index.feed ? ` · data source ${index.feed.schedule}` : ""),
    h("section", { class: "card" }, h("h2", {}, "At a glance"),
      h("div", { class: "stats" },
        stat("Documents", count, "stat-documents"),
        stat("Searches today", todayPoint ? todayPoint.searches.toLocaleString() : "—", "stat-searches-today", "UTC day"),
        stat("No-result rate", stats ? percent(stats.totals.noResultRate) : "—", "stat-no-result-rate", "last 7 days"),
        stat("Click-through rate", stats ? percent(stats.totals.clickThroughRate) : "—", "stat-ctr", "last 7 days")),
      h("p", {}, h("a", { href: ctx.href("analytics") }, "All analytics"))),
    todo.length ? h("section", { class: "card checklist" }, h("h2", {}, "Still to do"), h("ul", {}, todo)) : null,
    h("section", { class: "card" }, h("h2", {}, "Try a search"),
      h("form", { role: "search", "aria-label": "Try a search", class: "inline-form", onsubmit: (e) => {
        e.preventDefault(); location.hash = ctx.href("preview", null, { q: q.value });
      } }, field("Query", q), h("button", { type: "submit" }, "Open in search preview"))),
    h("section", { class: "card" }, h("h2", {}, "Last tasks"), tasks, h("p", {}, h("a", { href: ctx.href("catalog") }, "Catalog and all tasks"))));
  await liveTasks(tasks, ctx, { limit: 5, caption: "The index's last tasks (updates live)",
    onChange: async () => { try { count.textContent = (await api("GET", ctx.url)).documentCount.toLocaleString(); } catch (e) { /* next time */ } } });
}
