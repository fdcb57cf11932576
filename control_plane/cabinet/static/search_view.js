// A search answer as the cabinet shows it: hits (title with highlights, id, score, rank change
// against another answer), applied rules by name, redirect and custom data, and facets with counts
// whose values are toggle buttons (clicking one filters). Stored text always goes in as text.
import { h, highlighted } from "./ui.js";

/** The field shown as a hit's title: `name` or `title` when the documents have one, else the heaviest searched field. */
export function titleField(profile, mapping) {
  const fields = (mapping && mapping.fields) || {};
  for (const f of ["name", "title"]) if (fields[f]) return f;
  const weighted = Object.entries((profile && profile.queryFields) || {}).sort((a, b) => b[1].weight - a[1].weight);
  const text = weighted.find(([f]) => (fields[f] || {}).type === "text");
  return (text || weighted[0] || ["id"])[0];
}

/** A settings object for an inline search: the profile without its read-only fields, analytics off. */
export function inlineProfile(profile) {
  const p = { ...profile };
  for (const k of ["id", "profileKey", "indexId", "createdAt", "updatedAt"]) delete p[k];
  p.analytics = false;  // trying settings in the cabinet is not a shopper's search
  return p;
}

/** A profile for an index that has none saved yet: every searchable field, its facetable fields. */
export function defaultProfile(mapping) {
  const fields = Object.entries(mapping.fields || {});
  const searchable = fields.filter(([, s]) => s.searchable).map(([n]) => n);
  const facetable = fields.filter(([, s]) => s.facetable).map(([n]) => n);
  const text = searchable.filter((f) => mapping.fields[f].type === "text");
  return {
    name: "default", operator: "and", perPage: 20,
    queryFields: Object.fromEntries(searchable.map((f, i) => [f, { weight: i === 0 ? 10 : 1 }])),
    facets: facetable.length ? facetable : null,
    highlight: text.length ? text.slice(0, 1) : null,
  };
}

function hitTitle(hit, title) {
  const hl = (hit.highlights || {})[title];
  if (hl) return highlighted(Array.isArray(hl) ? hl.join(" … ") : hl);
  const doc = hit.document || {};
  return String(doc[title] ?? hit.id);
}

/**
 * The hits of `answer` as an ordered list. `compare` (Map id → 1-based position in another answer)
 * adds a badge saying how each hit moved; `actions(hit)` may add buttons (pin, hide) to each.
 */
export function hitList(answer, { title = "name", compare = null, actions = null, start = 1 } = {}) {
  return h("ol", { class: "hits", start }, answer.hits.map((hit, i) => {
    const position = start + i;
    let badge = null;
    if (compare) {
      const was = compare.get(String(hit.id));
      if (was === undefined) badge = h("span", { class: "move new" }, "new");
      else if (was > position) badge = h("span", { class: "move up", title: `was ${was}` }, `▲ ${was - position}`, h("span", { class: "sr-only" }, ` (was ${was})`));
      else if (was < position) badge = h("span", { class: "move down", title: `was ${was}` }, `▼ ${position - was}`, h("span", { class: "sr-only" }, ` (was ${was})`));
    }
    const doc = hit.document || {};
    const other = Object.entries(hit.highlights || {}).filter(([f]) => f !== title);
    return h("li", { class: "hit", "data-id": String(hit.id) },
      h("div", { class: "hit-title" }, hitTitle(hit, title), badge ? " " : null, badge),
      h("div", { class: "muted" }, `id ${hit.id}`, hit.score !== undefined && hit.score !== null ? ` · score ${Number(hit.score).toFixed(3)}` : "",
        doc.price !== undefined ? ` · ${doc.price}` : "", hit.groupSize > 1 ? ` · ${hit.groupSize} variants` : "",
        typeof hit.distanceM === "number" ? ` · ${hit.distanceM >= 1000 ? (hit.distanceM / 1000).toFixed(1) + " km" : hit.distanceM + " m"}` : ""),
      other.map(([f, v]) => h("div", { class: "hl" }, h("span", { class: "muted" }, f + ": "), highlighted(Array.isArray(v) ? v.join(" … ") : v))),
      actions ? h("div", { class: "hit-actions" }, actions(hit, position)) : null);
  }));
}

/** Which rules applied (names linked to their editor), the redirect and custom data of an answer. */
export function ruleNotes(answer, ruleNames = new Map(), ruleHref = null) {
  const applied = answer.appliedRules || [];
  const out = [];
  if (applied.length) {
    out.push(h("p", { class: "applied-rules" }, "Rules applied: ", applied.map((id, i) => [i ? ", " : "",
      ruleHref ? h("a", { href: ruleHref(id) }, ruleNames.get(id) || id) : (ruleNames.get(id) || id)])));
  }
  if (answer.redirect) out.push(h("p", {}, "Redirects to ", h("code", {}, answer.redirect)));
  if (answer.userData && answer.userData.length) out.push(h("p", {}, "Custom data: ", h("code", {}, JSON.stringify(answer.userData))));
  return out;
}

/** The value a filter keeps for a facet entry: a term, or a range `{gte, lt}`. */
function facetFilter(entry) {
  if (entry.value !== undefined) return entry.value;
  const range = {};
  if (entry.from !== undefined && entry.from !== null) range.gte = entry.from;
  if (entry.to !== undefined && entry.to !== null) range.lt = entry.to;
  return range;
}

const sameRange = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** Is this facet entry among the filters? */
export function isFiltered(filters, field, entry) {
  const current = filters[field];
  const value = facetFilter(entry);
  if (current === undefined) return false;
  if (typeof value === "object") return sameRange(current, value);
  return Array.isArray(current) ? current.includes(value) : current === value;
}

/** Filters with this facet entry toggled: terms OR within a field, one range at a time. */
export function toggleFilter(filters, field, entry) {
  const out = { ...filters };
  const value = facetFilter(entry);
  if (typeof value === "object") {
    if (sameRange(out[field], value)) delete out[field]; else out[field] = value;
    return out;
  }
  const list = Array.isArray(out[field]) ? [...out[field]] : [];
  const at = list.indexOf(value);
  if (at >= 0) list.splice(at, 1); else list.push(value);
  if (list.length) out[field] = list; else delete out[field];
  return out;
}

/** The facets of an answer; each value a toggle button (aria-pressed) calling onToggle(field, entry). */
export function facetList(answer, filters, onToggle, labels = {}) {
  const facets = Object.entries(answer.facets || {});
  if (!facets.length) return null;
  return h("div", { class: "facets" }, facets.map(([name, values]) => h("div", { class: "facet" },
    h("h3", {}, labels[name] || name),
    h("ul", {}, flatten(values).map((entry) => {
      const on = isFiltered(filters, name, entry);
      const label = entry.label ?? entry.path ?? entry.value;
      return h("li", { class: entry.level ? `level-${Math.min(entry.level, 4)}` : null },
        h("button", { type: "button", class: "facet-value", "aria-pressed": on ? "true" : "false", onclick: () => onToggle(name, entry) },
          h("span", {}, String(label)), " ", h("span", { class: "count" }, `(${entry.count})`)));
    })))));
}

function flatten(values) {  // hierarchy facets carry children: shown indented under their parent
  const out = [];
  for (const v of values) { out.push(v); if (v.children) out.push(...flatten(v.children)); }
  return out;
}

/** The filters in effect, each a button that removes it. */
export function filterChips(filters, onRemove) {
  const entries = Object.entries(filters);
  if (!entries.length) return null;
  return h("div", { class: "chips", "aria-label": "Filters in effect", role: "group" }, entries.flatMap(([field, value]) => {
    const values = Array.isArray(value) ? value : [value];
    return values.map((v) => h("button", { type: "button", class: "chip", onclick: () => onRemove(field, v),
      "aria-label": `Remove filter ${field}: ${typeof v === "object" ? JSON.stringify(v) : v}` },
    `${field}: ${typeof v === "object" ? rangeText(v) : v}`, h("span", { "aria-hidden": "true" }, " ✕")));
  }));
}

const rangeText = (r) => [r.gte !== undefined ? `≥ ${r.gte}` : null, r.lt !== undefined ? `< ${r.lt}` : null].filter(Boolean).join(" and ");

/** Filters with one value (or range) taken out. */
export function removeFilter(filters, field, value) {
  const out = { ...filters };
  if (Array.isArray(out[field])) {
    out[field] = out[field].filter((v) => v !== value);
    if (!out[field].length) delete out[field];
  } else delete out[field];
  return out;
}
