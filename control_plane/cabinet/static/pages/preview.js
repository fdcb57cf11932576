// The search preview: pick a saved profile (or edit its settings inline), type, and see the hits with
// scores and highlights, the facets with counts (click a value to filter), the rules that applied
// and the time taken; tick "compare" to see a second profile's answer beside it, each hit marked
// with how it moved. Searches are secret searches with the profile inline and analytics off, so
// trying things never counts as a shopper's search. With a vector field in the mapping, "Compare
// keyword and hybrid" shows profile A without its semantic setting beside A with it (the ratio is the
// profile's, or typed here). `?q=…&profile=…` opens it on a query (`&hybrid=1`: compared).
import { api } from "../api.js";
import { h, field, select, errorBox, fill, nextId, debounce } from "../ui.js";
import { setHashParams } from "../state.js";
import { titleField, inlineProfile, defaultProfile, hitList, ruleNotes, facetList, filterChips, toggleFilter, removeFilter } from "../search_view.js";

export async function render(body, ctx) {
  const [mapping, saved, rules, facetSettings] = await Promise.all([ctx.mapping(), ctx.profiles(), ctx.rules().catch(() => []),
    api("GET", ctx.url + "/facets").catch(() => ({ facets: [] }))]);
  const profiles = saved.length ? saved : [{ id: "default", ...defaultProfile(mapping) }];
  const ruleNames = new Map(rules.map((r) => [r.id, r.name]));
  const byId = (id) => profiles.find((p) => p.id === id) || profiles[0];
  const title = titleField(profiles[0], mapping);
  const facetLabels = Object.fromEntries(facetSettings.facets.filter((f) => f.label).map((f) => [f.field, f.label]));

  const state = {
    q: ctx.params.get("q") || "",
    a: byId(ctx.params.get("profile")).id,
    b: ctx.params.get("compare") ? byId(ctx.params.get("compare")).id : null,
    hybrid: false,  // A's keyword ranking beside its hybrid one (instead of profile B)
    inline: null,  // settings edited inline for A (null: A as saved)
    filters: {},
    sort: "",
    page: 1,
  };

  // ---- controls
  const q = h("input", { type: "search", id: nextId("q"), name: "q", value: state.q, autocomplete: "off", placeholder: "Type what a shopper would" });
  const options = profiles.map((p) => [p.id, p.name]);
  const pickA = select("profileA", options, state.a, { id: nextId("pa") });
  const pickB = select("profileB", options, state.b || (profiles[1] || profiles[0]).id, { id: nextId("pb") });
  const compare = h("input", { type: "checkbox", id: nextId("cmp"), checked: !!state.b });
  const sort = select("sort", [], "", { id: nextId("sort") });
  // the point a sort option FIELD:near (a geopoint field) measures from: "lat, lng"
  const hasGeo = Object.values(mapping.fields || {}).some((s) => s.type === "geopoint");
  const near = h("input", { id: nextId("near"), name: "near", autocomplete: "off", placeholder: "48.8566, 2.3522", inputmode: "decimal" });
  // keyword against hybrid: the vector field and ratio of the hybrid column (prefilled from profile A)
  const vectors = Object.entries(mapping.fields || {}).filter(([, s]) => s.type === "vector").map(([n]) => n);
  const hybrid = h("input", { type: "checkbox", id: nextId("hyb") });
  const hybridField = select("hybridField", vectors, vectors[0], { id: nextId("hf") });
  const hybridRatio = h("input", { type: "number", id: nextId("hr"), name: "hybridRatio", min: 0, max: 1, step: 0.05, value: "0.5", inputmode: "decimal", class: "narrow" });
  const hybridControls = h("div", { class: "row hybrid-controls", hidden: true },
    vectors.length > 1 ? field("Vector field", hybridField) : null,
    field("Hybrid ratio", hybridRatio, "0: keyword ranking exactly; 1: by meaning alone"));
  const hybridNote = h("p", { class: "muted hybrid-note", hidden: true });
  if (vectors.length) state.hybrid = ctx.params.get("hybrid") === "1" && !state.b;
  const inlineText = h("textarea", { rows: 14, class: "code", id: nextId("inline"), "data-path": "profile", spellcheck: "false" });
  const inlineMessage = h("div");
  const inlineState = h("span", { class: "muted", role: "status" });
  const inlineBox = h("details", { class: "inline-edit" }, h("summary", {}, "Edit settings inline"),
    h("p", { class: "muted" }, "The profile's settings as JSON (as POST profiles takes them). Apply to search with them; nothing is saved."),
    field("Settings of profile A (JSON)", inlineText), inlineMessage,
    h("p", { class: "actions" },
      h("button", { type: "button", onclick: applyInline }, "Apply settings"),
      h("button", { type: "button", class: "secondary", onclick: () => { resetInline(); run(); } }, "Back to the saved settings"), inlineState));
  const chips = h("div");
  const facetSlot = h("div");
  const colA = h("section", { class: "card column", "aria-labelledby": "col-a", "aria-live": "polite" });
  const colB = h("section", { class: "card column", "aria-labelledby": "col-b", "aria-live": "polite", hidden: !state.b });
  const pager = h("p", { class: "actions pager" });

  /** The hybrid column's ratio and field from profile A's semantic setting (or the index's first vector field, 0.5). */
  function resetHybrid() {
    const semantic = (state.inline || byId(state.a)).semantic;
    const known = semantic && vectors.includes(semantic.field) ? semantic : null;
    hybridField.value = known ? known.field : vectors[0] || "";
    hybridRatio.value = String(known && known.ratio > 0 ? known.ratio : 0.5);
  }
  function hybridSetting() {
    const ratio = Math.min(1, Math.max(0, Number(hybridRatio.value)));
    return { field: hybridField.value, ratio: Number.isFinite(ratio) ? ratio : 0.5 };
  }

  function resetInline() {
    state.inline = null;
    inlineText.value = JSON.stringify(settingsOf(byId(state.a)), null, 2);
    inlineText.removeAttribute("aria-invalid");
    fill(inlineMessage);
    inlineState.textContent = "";
    resetHybrid();
  }
  function applyInline() {
    fill(inlineMessage);
    try {
      state.inline = JSON.parse(inlineText.value);
      inlineText.removeAttribute("aria-invalid");
      inlineState.textContent = "Searching with the edited settings.";
      resetHybrid();
    } catch (e) {
      inlineText.setAttribute("aria-invalid", "true");
      fill(inlineMessage, errorBox({ code: "VALIDATION_ERROR", message: `Not valid JSON: ${e.message}` }));
      return;
    }
    state.page = 1;
    run();
  }
  const settingsOf = (p) => { const s = inlineProfile(p); delete s.analytics; return s; };

  function fillSort() {
    const options2 = [["", "Relevance"], ...((state.inline || byId(state.a)).sortOptions || []).map((o) => [o.key, o.label || o.key])];
    fill(sort, options2.map(([v, label]) => h("option", { value: v, selected: v === state.sort }, label)));
    if (!options2.some(([v]) => v === state.sort)) state.sort = "";
  }

  // ---- searching
  let generation = 0;
  async function searchWith(profile, withSort) {
    const request = { q: state.q, page: state.page, profile: { ...inlineProfile(profile), analytics: false } };
    if (Object.keys(state.filters).length) request.filters = state.filters;
    if (withSort) request.sort = withSort;
    const point = near.value.split(/[\s,;]+/).filter(Boolean).map(Number);
    if (point.length === 2 && point.every(Number.isFinite)) request.near = { lat: point[0], lng: point[1] };
    return api("POST", ctx.url + "/search", { body: request });
  }

  async function run() {
    const mine = ++generation;
    setHashParams({ q: state.q, profile: state.a !== "default" ? state.a : null, compare: state.b, hybrid: state.hybrid ? "1" : null });
    fillSort();
    let profileA = state.inline || byId(state.a);
    let profileB = state.b ? byId(state.b) : null;
    const semantic = state.hybrid ? hybridSetting() : null;
    if (semantic) {  // the same settings twice: without the semantic setting, and with it
      profileB = { ...profileA, semantic };
      profileA = { ...profileA, semantic: null };
    }
    const sortB = semantic ? state.sort : profileB && (profileB.sortOptions || []).some((o) => o.key === state.sort) ? state.sort : "";
    hybridControls.hidden = !semantic;
    const spec = semantic ? mapping.fields[semantic.field] || {} : {};
    hybridNote.hidden = !(semantic && !spec.embed);
    hybridNote.textContent = semantic && !spec.embed ? `${semantic.field} holds shop-supplied vectors: a search brings its own query vector, `
      + "so without one the hybrid column ranks as the keyword one does." : "";
    for (const col of [colA, colB]) col.setAttribute("aria-busy", "true");
    const [a, b] = await Promise.allSettled([searchWith(profileA, state.sort), profileB ? searchWith(profileB, sortB) : null]);
    if (mine !== generation) return;
    for (const col of [colA, colB]) col.setAttribute("aria-busy", "false");
    const nameA = byId(state.a).name + (state.inline ? " (edited)" : "");
    column(colA, "col-a", semantic ? "Keyword" : `A: ${nameA}`, a, null);
    if (state.inline && a.status === "rejected") {
      fill(inlineMessage, errorBox(a.reason));
      inlineText.setAttribute("aria-invalid", "true");
      inlineBox.open = true;
    }
    colB.hidden = !profileB;
    if (profileB) column(colB, "col-b", semantic ? `Hybrid (ratio ${semantic.ratio})` : `B: ${profileB.name}`, b, a.status === "fulfilled" ? a.value : null);
    const answer = a.status === "fulfilled" ? a.value : null;
    fill(chips, filterChips(state.filters, (f, v) => { state.filters = removeFilter(state.filters, f, v); state.page = 1; run(); }));
    fill(facetSlot, (answer && facetList(answer, state.filters, (f, entry) => {
      state.filters = toggleFilter(state.filters, f, entry); state.page = 1; run();
    }, facetLabels)) || h("p", { class: "muted" }, "This profile shows no facets."));
    const perPage = answer ? answer.perPage : 0;
    fill(pager, answer && state.page > 1 ? h("button", { type: "button", class: "secondary", onclick: () => { state.page--; run(); } }, "Previous page") : null,
      answer && state.page * perPage < answer.total ? h("button", { type: "button", class: "secondary", onclick: () => { state.page++; run(); } }, "Next page") : null,
      answer && answer.total ? h("span", { class: "muted" }, `Page ${state.page} of ${Math.max(1, Math.ceil(answer.total / perPage))}`) : null);
  }

  function column(col, id, heading, result, other) {
    if (result.status === "rejected") {
      fill(col, h("h2", { id }, heading), errorBox(result.reason));
      return;
    }
    const answer = result.value;
    const compareMap = other ? new Map(other.hits.map((hit, i) => [String(hit.id), (other.page - 1) * other.perPage + i + 1])) : null;
    fill(col, h("h2", { id }, heading),
      h("p", { class: "muted summary", "data-total": String(answer.total) }, `${answer.total.toLocaleString()} results · ${answer.tookMs} ms`),
      ruleNotes(answer, ruleNames, (rid) => ctx.href("rules", rid)),
      answer.hits.length ? hitList(answer, { title, compare: compareMap, start: (answer.page - 1) * answer.perPage + 1 })
        : h("p", { class: "empty" }, "No results.", state.q ? [" ", h("a", { href: ctx.href("synonyms", null, { add: state.q }) }, "Add a synonym"), " or ",
          h("a", { href: ctx.href("rules", "new", { q: state.q }) }, "create a rule"), ` for “${state.q}”.`] : null));
  }

  const typed = debounce(() => { state.q = q.value; state.page = 1; run(); }, 200);
  q.addEventListener("input", typed);
  pickA.addEventListener("change", () => { state.a = pickA.value; resetInline(); state.page = 1; run(); });
  pickB.addEventListener("change", () => { state.b = pickB.value; run(); });
  // the two comparisons share the second column: ticking one unticks the other
  compare.addEventListener("change", () => {
    state.b = compare.checked ? pickB.value : null; pickB.disabled = !compare.checked;
    if (compare.checked) { state.hybrid = false; hybrid.checked = false; }
    run();
  });
  hybrid.addEventListener("change", () => {
    state.hybrid = hybrid.checked;
    if (hybrid.checked) { state.b = null; compare.checked = false; pickB.disabled = true; }
    run();
  });
  hybridRatio.addEventListener("change", () => { state.page = 1; run(); });
  hybridField.addEventListener("change", () => { state.page = 1; run(); });
  sort.addEventListener("change", () => { state.sort = sort.value; state.page = 1; run(); });
  near.addEventListener("change", () => { state.page = 1; run(); });
  pickB.disabled = !state.b;
  hybrid.checked = state.hybrid;
  resetInline();

  const searchForm = h("form", { role: "search", "aria-label": "Search preview", class: "preview-controls", onsubmit: (e) => { e.preventDefault(); state.q = q.value; run(); } },
    field("Search", q),
    h("div", { class: "row" }, field("Profile A", pickA), field("Sort", sort), hasGeo ? field("Near (lat, lng)", near) : null,
      h("label", { class: "inline", for: compare.id }, compare, " Compare with"), field("Profile B", pickB)),
    vectors.length ? h("div", { class: "row" }, h("label", { class: "inline", for: hybrid.id }, hybrid, " Compare keyword and hybrid"), hybridControls) : null,
    hybridNote);
  fill(body,
    saved.length ? null : h("p", { class: "alert warn" }, "No saved profile yet: this preview searches every searchable field. ",
      h("a", { href: ctx.href("profiles", "new") }, "Create a profile")),
    h("section", { class: "card" }, searchForm, inlineBox),
    chips,
    h("div", { class: "preview-grid" + (state.b || state.hybrid ? " compare" : "") },
      h("aside", { class: "card facet-panel", "aria-labelledby": "facets-title" }, h("h2", { id: "facets-title" }, "Facets"), facetSlot),
      colA, colB),
    pager);
  const grid = body.querySelector(".preview-grid");
  const twoColumns = () => grid.classList.toggle("compare", compare.checked || hybrid.checked);
  compare.addEventListener("change", twoColumns);
  hybrid.addEventListener("change", twoColumns);
  await run();
}
