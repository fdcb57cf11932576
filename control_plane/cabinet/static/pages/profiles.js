// Search profiles: an editor whose every change re-runs a live preview (a secret search with the
// inline profile), save, and a ready-to-paste storefront snippet for the saved profile. The section
// opens the first saved profile; "New profile" starts from the mapping with a name not yet taken.
import { api, all } from "../api.js";
import { h, field, select, errorBox, show, notice, copyButton, highlighted, nextId, fill, readOnly, placeErrors, clearErrors } from "../ui.js";
import { state } from "../state.js";

const check = (checked, label, attrs = {}) => h("input", { type: "checkbox", checked, "aria-label": label, ...attrs });
const num = (value, label, attrs = {}) => h("input", { type: "number", value, "aria-label": label, ...attrs });

/** "storefront", or "storefront 2", … : a name no saved profile has (names are unique per index). */
export function freeName(profiles, wanted = "storefront") {
  const taken = new Set(profiles.map((p) => p.name));
  if (!taken.has(wanted)) return wanted;
  for (let n = 2; ; n++) if (!taken.has(`${wanted} ${n}`)) return `${wanted} ${n}`;
}

export async function render(main, ctx) {
  const { projectId, indexId, url } = ctx;
  const [mapping, profiles] = await Promise.all([ctx.mapping(), ctx.profiles(true)]);
  let profileId = ctx.sub;
  if (!profileId && profiles.length) {  // open the saved profile, never a new one named like it
    profileId = profiles[0].id;
    history.replaceState(null, "", `/#/p/${projectId}/i/${indexId}/profiles/${profileId}` + (location.hash.includes("?") ? "?" + location.hash.split("?")[1] : ""));
  }
  const fields = Object.entries(mapping.fields || {});
  const searchable = fields.filter(([, s]) => s.searchable).map(([n]) => n);
  const facetable = fields.filter(([, s]) => s.facetable).map(([n]) => n);
  const retrievable = fields.filter(([, s]) => s.retrievable !== false).map(([n]) => n);
  const sortable = fields.filter(([, s]) => s.sortable).map(([n]) => n);
  const numeric = fields.filter(([, s]) => ["integer", "float"].includes(s.type)).map(([n]) => n);
  const vectors = fields.filter(([, s]) => s.type === "vector").map(([n]) => n);

  const loaded = profileId && profileId !== "new" ? profiles.find((p) => p.id === profileId) : null;
  if (profileId && profileId !== "new" && !loaded) {
    fill(main, errorBox({ message: "This profile does not exist (any more).", code: "NOT_FOUND" }),
      h("p", {}, h("a", { href: ctx.href("profiles") }, "Open the saved profiles")));
    return;
  }
  const start = loaded || {
    name: freeName(profiles), operator: "and", perPage: 20,
    queryFields: Object.fromEntries(searchable.map((f, i) => [f, { weight: i === 0 ? 10 : 1, typo: true, prefix: true }])),
    facets: facetable.length ? facetable : null,
    highlight: searchable.filter((f) => mapping.fields[f].type === "text").slice(0, 1),
  };

  // ---- the editor
  const nameInput = h("input", { name: "name", value: start.name, required: true, maxlength: 200 });
  const qf = searchable.map((f) => {
    const s = (start.queryFields || {})[f];
    return { f, on: check(!!s, `Search ${f}`), weight: num(s ? s.weight : 1, `Weight of ${f}`, { min: 1, max: 100 }),
      typo: check(s ? s.typo !== false : true, `Typos in ${f}`), prefix: check(s ? s.prefix !== false : true, `Prefix match in ${f}`) };
  });
  const operator = select("operator", [["and", "all words (and)"], ["or", "any word (or)"]], start.operator || "and");
  const typos = check((start.typoTolerance || { enabled: true }).enabled !== false, "Typo tolerance");
  const perPage = num(start.perPage || 20, "Results per page", { min: 1, max: 100 });
  const facetChecks = facetable.map((f) => ({ f, box: check(start.facets ? start.facets.includes(f) : false, `Facet ${f}`) }));
  const retrieveChecks = retrievable.map((f) => ({ f, box: check(start.retrieve ? start.retrieve.includes(f) : false, `Return ${f}`) }));
  const highlightChecks = searchable.map((f) => ({ f, box: check((start.highlight || []).includes(f), `Highlight ${f}`) }));
  const sortRows = h("tbody");
  const boostRows = h("tbody");
  const direction = (name) => (mapping.fields[name].type === "geopoint" ? ":near" : ":asc");
  const addSort = (o = { key: "", label: "", sort: [sortable[0] ? sortable[0] + direction(sortable[0]) : ""] }) => {
    const tr = h("tr", {}, h("td", {}, h("input", { value: o.key, "aria-label": "Sort key", "data-k": "key", placeholder: "price-asc" })),
      h("td", {}, h("input", { value: o.label, "aria-label": "Sort label", "data-k": "label", placeholder: "Price: low to high" })),
      h("td", {}, h("input", { value: o.sort.join(", "), "aria-label": "Sort by", "data-k": "sort", placeholder: "price:asc" })),
      h("td", {}, h("button", { type: "button", class: "secondary", "aria-label": "Remove sort option", onclick: () => { tr.remove(); changed(); } }, "✕")));
    sortRows.append(tr);
  };
  const addBoost = (b = { field: numeric[0] || "", modifier: "log1p", weight: 1 }) => {
    const tr = h("tr", {}, h("td", {}, select("", numeric, b.field, { "aria-label": "Boost field", "data-k": "field" })),
      h("td", {}, select("", ["none", "log1p", "sqrt"], b.modifier, { "aria-label": "Modifier", "data-k": "modifier" })),
      h("td", {}, num(b.weight, "Boost weight", { min: 0, max: 100, step: "any", "data-k": "weight" })),
      h("td", {}, h("button", { type: "button", class: "secondary", "aria-label": "Remove boost", onclick: () => { tr.remove(); changed(); } }, "✕")));
    boostRows.append(tr);
  };
  // semantic search: a vector field of the mapping blended into the keyword ranking by a ratio
  const semanticStart = start.semantic && vectors.includes(start.semantic.field) ? start.semantic : null;
  const vectorPick = select("semantic.field", [["", "none (keyword search only)"], ...vectors.map((f) => [f, f])],
    semanticStart ? semanticStart.field : "", { id: nextId("vf"), "data-path": "semantic.field" });
  const ratioInput = h("input", { type: "range", id: nextId("ratio"), name: "semantic.ratio", min: 0, max: 1, step: 0.05,
    value: String(semanticStart ? semanticStart.ratio : 0.5) });
  const ratioShown = h("output", { for: ratioInput.id, class: "ratio-value" }, ratioInput.value);
  const syncRatio = () => {
    ratioShown.textContent = Number(ratioInput.value).toFixed(2);
    ratioInput.setAttribute("aria-valuetext", `${ratioShown.textContent}: ${ratioInput.value <= 0 ? "keyword ranking only" : ratioInput.value >= 1 ? "meaning only" : "keyword and meaning blended"}`);
    ratioInput.disabled = !vectorPick.value;
  };
  ratioInput.addEventListener("input", syncRatio);
  vectorPick.addEventListener("change", syncRatio);
  syncRatio();
  const semanticBox = h("fieldset", { "data-path": "semantic", class: "semantic" }, h("legend", {}, "Semantic search"),
    vectors.length ? [
      h("div", { class: "row" }, field("Vector field", vectorPick),
        h("div", { class: "field" }, h("label", { for: ratioInput.id }, "Semantic ratio"), h("div", { class: "ratio" }, ratioInput, ratioShown))),
      h("small", { class: "muted" }, "0: the keyword ranking exactly; 1: by meaning alone. In between, results matching the words stay first and those close in meaning fill in.")]
      : h("p", { class: "muted" }, "A vector field in the mapping (type vector, e.g. embedding the product name) enables search by meaning."));

  (start.sortOptions || []).forEach(addSort);
  (start.boosts || []).forEach(addBoost);

  const picked = (list) => list.filter((x) => x.box.checked).map((x) => x.f);
  function profile() {
    const p = { ...(loaded || {}) };
    for (const k of ["id", "profileKey", "indexId", "createdAt", "updatedAt"]) delete p[k];
    p.name = nameInput.value.trim();
    p.queryFields = Object.fromEntries(qf.filter((x) => x.on.checked).map((x) => [x.f, { weight: Number(x.weight.value), typo: x.typo.checked, prefix: x.prefix.checked }]));
    p.operator = operator.value;
    p.typoTolerance = { ...(p.typoTolerance || { minWordSizeOneTypo: 4, minWordSizeTwoTypos: 8 }), enabled: typos.checked };
    p.perPage = Number(perPage.value);
    p.facets = picked(facetChecks).length ? picked(facetChecks) : null;
    p.retrieve = picked(retrieveChecks).length ? picked(retrieveChecks) : null;
    p.highlight = picked(highlightChecks).length ? picked(highlightChecks) : null;
    p.sortOptions = [...sortRows.children].map((tr) => ({
      key: tr.querySelector("[data-k=key]").value.trim(), label: tr.querySelector("[data-k=label]").value.trim(),
      sort: tr.querySelector("[data-k=sort]").value.split(",").map((s) => s.trim()).filter(Boolean) }));
    if (p.defaultSort && !p.sortOptions.some((o) => o.key === p.defaultSort)) p.defaultSort = null;
    p.boosts = [...boostRows.children].map((tr) => ({ field: tr.querySelector("[data-k=field]").value,
      modifier: tr.querySelector("[data-k=modifier]").value, weight: Number(tr.querySelector("[data-k=weight]").value) }));
    if (vectors.length) p.semantic = vectorPick.value ? { field: vectorPick.value, ratio: Number(ratioInput.value) } : null;
    return p;
  }

  // ---- the live preview
  const q = h("input", { type: "search", id: nextId("q"), placeholder: "Type what a shopper would", autocomplete: "off" });
  const results = h("div", { class: "preview-results", "aria-live": "polite", "aria-busy": "false" });
  let timer = null, generation = 0;
  function changed() { clearTimeout(timer); timer = setTimeout(preview, 250); }
  async function preview() {
    const mine = ++generation;
    results.setAttribute("aria-busy", "true");
    try {
      // analytics off: trying settings is not a shopper's search
      const answer = await api("POST", url + "/search", { body: { q: q.value, profile: { ...profile(), analytics: false } } });
      if (mine === generation) renderResults(results, answer, profile());
    } catch (e) {
      if (mine === generation) show(results, errorBox(e));
    } finally { results.setAttribute("aria-busy", "false"); }
  }

  // ---- save and snippet
  const saveMessage = h("div");
  const snippetSlot = h("div");
  let current = loaded;  // the saved profile this editor writes to (null until the first save)
  const saveButton = h("button", { type: "button", onclick: async () => {
    saveButton.disabled = true;
    clearErrors(editor);
    try {
      const saved = current
        ? await api("PUT", `${url}/profiles/${current.id}`, { body: profile() })
        : await api("POST", url + "/profiles", { body: profile() });
      show(saveMessage, notice(`Profile “${saved.name}” saved. Its storefront handle is ${saved.profileKey}.`));
      if (!current) {
        history.replaceState(null, "", `/#/p/${projectId}/i/${indexId}/profiles/${saved.id}`);
        Object.assign(start, saved);
        saveButton.textContent = "Save profile";
        deleteButton.hidden = false;
      }
      current = saved;
      await renderSnippet(snippetSlot, projectId, saved, mapping);
    } catch (e) { show(saveMessage, errorBox(e)); placeErrors(editor, e); } finally { saveButton.disabled = false; }
  } }, loaded ? "Save profile" : "Create profile");
  const deleteButton = h("button", { type: "button", class: "danger", onclick: async () => {
    if (!current || !confirm(`Delete the profile “${current.name}”? Storefronts using ${current.profileKey} stop finding anything.`)) return;
    try {
      await api("DELETE", `${url}/profiles/${current.id}`);
      location.hash = ctx.href("profiles", "new");
    } catch (e) { show(saveMessage, errorBox(e)); }
  } }, "Delete profile");
  deleteButton.hidden = !loaded;

  const boxes = (title, list) => h("fieldset", {}, h("legend", {}, title),
    list.length ? list.map((x) => h("label", { class: "inline" }, x.box, " ", x.f)) : h("span", { class: "muted" }, "no such field"));
  const editor = h("form", { class: "profile-editor", "aria-label": "Profile settings", oninput: changed, onchange: changed, onsubmit: (e) => e.preventDefault() },
    field("Profile name", nameInput),
    h("fieldset", { "data-path": "queryFields" }, h("legend", {}, "Searched fields"), h("div", { class: "table-wrap" }, h("table", {},
      h("thead", {}, h("tr", {}, ["Field", "Search", "Weight (1–100)", "Typos", "Prefix"].map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, qf.map((x) => h("tr", {}, h("th", { scope: "row" }, x.f), h("td", {}, x.on), h("td", {}, x.weight), h("td", {}, x.typo), h("td", {}, x.prefix))))))),
    h("div", { class: "row" }, field("Match", operator), field("Results per page", perPage), h("label", { class: "inline" }, typos, " Typo tolerance")),
    boxes("Facets", facetChecks), boxes("Return only these fields (none ticked: all)", retrieveChecks), boxes("Highlight", highlightChecks),
    h("fieldset", {}, h("legend", {}, "Sort options"), h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, h("tr", {}, ["Key", "Label", "Sort by (field:asc|desc, geopoint:near, …)", ""].map((x) => h("th", { scope: "col" }, x)))), sortRows)),
      h("button", { type: "button", class: "secondary", onclick: () => { addSort(); changed(); } }, "Add sort option")),
    h("fieldset", {}, h("legend", {}, "Boosts (rank by a number too)"), h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, h("tr", {}, ["Field", "Modifier", "Weight", ""].map((x) => h("th", { scope: "col" }, x)))), boostRows)),
      numeric.length ? h("button", { type: "button", class: "secondary", onclick: () => { addBoost(); changed(); } }, "Add boost") : null),
    semanticBox);

  const switcher = select("profile", [...profiles.map((p) => [p.id, p.name]), ...(ctx.canWrite || !profiles.length ? [["new", "New profile"]] : [])],
    loaded ? loaded.id : "new", { "aria-label": "Profile", onchange: (e) => { location.hash = ctx.href("profiles", e.target.value); } });
  const toPreview = h("a", { href: ctx.href("preview"), onclick: (e) => {
    e.currentTarget.href = ctx.href("preview", null, { q: q.value, ...(loaded ? { profile: loaded.id } : {}) });
  } }, "Open in search preview");

  fill(main,
    h("p", { class: "actions" }, h("label", { class: "inline" }, "Profile ", switcher), toPreview),
    h("div", { class: "two-col" },
      h("section", { class: "card" }, h("h2", {}, "Settings"), editor, saveMessage,
        ctx.canWrite ? h("p", { class: "actions" }, saveButton, deleteButton) : readOnly("Saving profiles")),
      h("section", { class: "card preview" }, h("h2", {}, "Live preview"),
        h("div", { class: "field" }, h("label", { for: q.id }, "Search"), q), results)),
    h("section", { class: "card", id: "snippet-section" }, h("h2", {}, "Storefront snippet"), snippetSlot));
  q.value = ctx.params.get("q") || "";
  q.addEventListener("input", changed);
  if (loaded) await renderSnippet(snippetSlot, projectId, loaded, mapping);
  else fill(snippetSlot, h("p", { class: "muted" }, "Save the profile to get a snippet for your shop pages."));
  await preview();
  if (ctx.params.get("snippet")) {
    const heading = document.querySelector("#snippet-section h2");
    heading.tabIndex = -1;
    setTimeout(() => { heading.focus(); heading.scrollIntoView(); }, 0);  // after the router focused the page's heading
  }
}

function renderResults(slot, answer, profile) {
  const title = titleField(profile, null);
  const facets = Object.entries(answer.facets || {});
  fill(slot, 
    h("p", { class: "muted", id: "preview-total" }, `${answer.total.toLocaleString()} results · ${answer.tookMs} ms`),
    h("div", { class: "split" },
      h("ol", { class: "hits" }, answer.hits.map((hit) => {
        const hl = Object.entries(hit.highlights || {});
        const doc = hit.document || {};
        return h("li", { class: "hit" },
          h("div", { class: "hit-title" }, hl.find(([f]) => f === title) ? highlighted(hl.find(([f]) => f === title)[1]) : String(doc[title] ?? hit.id)),
          h("div", { class: "muted" }, `id ${hit.id} · score ${Number(hit.score).toFixed(3)}`, doc.price !== undefined ? ` · ${doc.price}` : ""),
          hl.filter(([f]) => f !== title).map(([f, v]) => h("div", { class: "hl" }, h("span", { class: "muted" }, f + ": "), highlighted(Array.isArray(v) ? v.join(" … ") : v))));
      })),
      facets.length ? h("div", { class: "facets" }, facets.map(([name, values]) => h("div", {}, h("h3", {}, name),
        h("ul", {}, values.map((v) => h("li", {}, `${v.label ?? v.value} (${v.count})`)))))) : null));
}

/** The field a storefront shows as each hit's title: the heaviest searched text field. */
function titleField(profile, mapping) {
  const weighted = Object.entries(profile.queryFields || {}).sort((a, b) => b[1].weight - a[1].weight);
  const text = weighted.find(([f]) => !mapping || (mapping.fields[f] || {}).type === "text");
  return (text || weighted[0] || ["id"])[0];
}

async function renderSnippet(slot, projectId, profile, mapping) {
  const keys = (await all(`/v1/projects/${projectId}/api-keys`)).filter((k) => k.type === "public");
  const keyInput = h("input", { id: nextId("pk"), autocomplete: "off", spellcheck: "false" });
  const known = keys.find((k) => state.createdKeys[k.id]);
  keyInput.value = known ? state.createdKeys[known.id] : "";
  const code = h("textarea", { class: "snippet", rows: 22, readonly: true, "aria-label": "Storefront snippet", id: "snippet" });
  const render = () => { code.value = snippet(location.origin, profile.profileKey, keyInput.value.trim() || "PASTE_YOUR_PUBLIC_KEY", titleField(profile, mapping)); };
  keyInput.addEventListener("input", render);
  render();
  fill(slot, 
    h("p", {}, "Paste this into a page of your shop. It searches with the saved profile ", h("code", {}, profile.profileKey),
      " using a public key; the page's origin must be one of the key's allowed origins."),
    keys.length ? null : h("p", { class: "alert warn" }, "This project has no public key yet: create one under API keys, with your shop's address as an allowed origin."),
    field("Public key", keyInput, keys.length ? `Public keys of this project: ${keys.map((k) => `${k.name} (${k.prefix}…, ${(k.allowedOrigins || []).join(" ")})`).join("; ")}. A key is shown once, when created.` : null),
    code, h("p", {}, copyButton(() => code.value, "Copy snippet")));
}

function snippet(origin, profileKey, publicKey, title) {
  const js = (v) => JSON.stringify(v);
  return `<form id="shopsearch-form" role="search">
  <label for="shopsearch-q">Search products</label>
  <input id="shopsearch-q" type="search" autocomplete="off">
  <button type="submit">Search</button>
</form>
<p id="shopsearch-total" aria-live="polite"></p>
<ol id="shopsearch-results"></ol>
<script>
(function () {
  var API = ${js(origin + "/v1/search/" + profileKey)};
  var KEY = ${js(publicKey)};
  var TITLE = ${js(title)};
  var form = document.getElementById("shopsearch-form");
  var input = document.getElementById("shopsearch-q");
  var list = document.getElementById("shopsearch-results");
  var total = document.getElementById("shopsearch-total");
  function search() {
    fetch(API, { method: "POST", headers: { "Authorization": "Bearer " + KEY, "Content-Type": "application/json" },
                 body: JSON.stringify({ q: input.value }) })
      .then(function (r) { return r.json().then(function (b) { return { ok: r.ok, body: b }; }); })
      .then(function (a) {
        list.textContent = "";
        if (!a.ok) { total.textContent = a.body.error.message; return; }
        total.textContent = a.body.total + " results";
        a.body.hits.forEach(function (hit) {
          var li = document.createElement("li");
          li.textContent = hit.document[TITLE] || hit.id;
          list.appendChild(li);
        });
      })
      .catch(function () { total.textContent = "Search is unavailable right now."; });
  }
  form.addEventListener("submit", function (e) { e.preventDefault(); search(); });
  var timer;
  input.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(search, 200); });
})();
</script>`;
}
