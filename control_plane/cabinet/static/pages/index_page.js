// One index's page: a side menu of sections (overview, search preview, profiles, catalog,
// merchandising: synonyms and rules, autocomplete, analytics, settings) beside the section shown.
// Every section renders for a read-only member too: edits are left out, never an error page.
import { api, all } from "../api.js";
import { h, fill } from "../ui.js";
import { canWrite, hashParams } from "../state.js";
import { projectHeader } from "../project.js";
import * as overview from "./overview.js";
import * as preview from "./preview.js";
import * as profiles from "./profiles.js";
import * as catalog from "./catalog.js";
import * as synonyms from "./synonyms.js";
import * as rules from "./rules.js";
import * as autocomplete from "./autocomplete.js";
import * as analytics from "./analytics.js";
import * as settings from "./settings.js";

// [key, menu label, title (h1, before the index name), module, group]
const SECTIONS = [
  ["overview", "Overview", null, overview],
  ["preview", "Search preview", "Search preview", preview],
  ["profiles", "Search profiles", "Search profiles", profiles],
  ["catalog", "Catalog", "Catalog", catalog],
  ["synonyms", "Synonyms", "Synonyms", synonyms, "Merchandising"],
  ["rules", "Ranking rules", "Ranking rules", rules, "Merchandising"],
  ["autocomplete", "Autocomplete", "Autocomplete", autocomplete],
  ["analytics", "Analytics", "Analytics", analytics],
  ["settings", "Settings", "Settings", settings],
];

/** What every section gets: ids, the index, the caller's rights and lazily loaded shared data. */
function context(projectId, indexId, project, index, sub) {
  const url = `/v1/projects/${projectId}/indices/${indexId}`;
  const once = (load) => { let p = null; return (fresh) => (p && !fresh ? p : (p = load())); };
  return {
    projectId, indexId, project, index, url, sub,
    canWrite: canWrite(project.orgId),
    params: hashParams(),
    href: (section, sub2, query) => `#/p/${projectId}/i/${indexId}/${section}` + (sub2 ? `/${encodeURIComponent(sub2)}` : "")
      + (query ? "?" + new URLSearchParams(query).toString() : ""),
    mapping: once(() => api("GET", url + "/mapping")),
    profiles: once(() => all(url + "/profiles")),
    rules: once(() => all(url + "/rules")),
  };
}

function menu(ctx, current) {
  const link = ([key, label]) => h("li", {}, h("a", { href: ctx.href(key), "aria-current": key === current ? "page" : null }, label));
  const items = [];
  let group = null;
  for (const section of SECTIONS) {
    if (section[4]) {
      if (!group) {
        group = h("ul", { "aria-label": section[4] });
        items.push(h("li", { class: "group" }, h("span", { class: "group-label", "aria-hidden": "true" }, section[4]), group));
      }
      group.append(link(section));
    } else items.push(link(section));
  }
  return h("nav", { class: "side-menu", "aria-label": "Index sections" }, h("ul", {}, items));
}

export async function page(view, projectId, indexId, section = "overview", sub) {
  const entry = SECTIONS.find(([key]) => key === section);
  const { nav, project } = await projectHeader(projectId, "indices");
  if (!entry) {
    fill(view, nav, h("h1", {}, "Page not found"), h("p", {}, h("a", { href: `#/p/${projectId}/i/${indexId}` }, "Back to the index")));
    return;
  }
  const index = await api("GET", `/v1/projects/${projectId}/indices/${indexId}`);
  const ctx = context(projectId, indexId, project, index, sub);
  const [, , title, module] = entry;
  const body = h("div", { class: "section-body" }, h("p", {}, "Loading…"));
  fill(view, nav, h("div", { class: "index-layout" }, menu(ctx, section),
    h("div", { class: "index-main" }, h("h1", {}, title ? `${title} — ${index.name}` : index.name), body)));
  await module.render(body, ctx);
}
