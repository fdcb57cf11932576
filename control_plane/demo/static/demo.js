// The demo store: search-as-you-type against the public storefront route, facets as filters.
// Setup comes in the fragment: #key=<public key>&profile=<profile key>; the API is this page's origin.

const params = new URLSearchParams(location.hash.slice(1));
const KEY = params.get("key");
const PROFILE = params.get("profile");
const HEADINGS = { brand: "Brand", categories: "Category", price: "Price" };
const DEBOUNCE_MS = 120;

const $ = (id) => document.getElementById(id);
const state = { q: "", filters: {}, ranges: {}, page: 1, hits: [] };
let sent = 0; // answers to older keystrokes are dropped
let timer = null;

function el(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (value === true) node.setAttribute(name, "");
    else if (value !== false && value != null) node.setAttribute(name, value);
  }
  for (const child of [].concat(children)) node.append(child);
  return node;
}

/** Highlight HTML from the API: keep its text and <em>, nothing else (parsed inert in a template). */
function highlighted(html) {
  const template = document.createElement("template");
  template.innerHTML = html;
  return [...template.content.childNodes].map((node) =>
    node.nodeName === "EM" ? el("mark", { text: node.textContent }) : document.createTextNode(node.textContent));
}

function filtersBody() {
  const filters = {};
  for (const [field, values] of Object.entries(state.filters)) if (values.length) filters[field] = values;
  for (const [field, range] of Object.entries(state.ranges)) {
    const bound = {};
    if (range.from != null) bound.gte = range.from;
    if (range.to != null) bound.lt = range.to;
    filters[field] = bound;
  }
  return filters;
}

async function search({ append = false } = {}) {
  const mine = ++sent;
  const body = { q: state.q, filters: filtersBody(), page: state.page };
  let response, answer;
  try {
    response = await fetch(`/v1/search/${encodeURIComponent(PROFILE)}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    answer = await response.json();
  } catch (error) {
    if (mine === sent) $("summary").textContent = `The search service did not answer (${error}).`;
    return;
  }
  if (mine !== sent) return;
  if (!response.ok) {
    const err = answer.error || {};
    $("summary").textContent = `Search refused: ${response.status} ${err.code || ""} ${err.message || ""}`;
    return;
  }
  state.hits = append ? state.hits.concat(answer.hits) : answer.hits;
  render(answer);
}

function render(answer) {
  const shown = state.hits.length;
  $("summary").textContent = answer.total
    ? `${answer.total} products${state.q ? ` for “${state.q}”` : ""} (${answer.tookMs} ms)`
    : `No products${state.q ? ` for “${state.q}”` : ""}.`;
  $("results").replaceChildren(...state.hits.map(hitItem));
  $("more").hidden = shown >= answer.total;
  renderFacets(answer.facets || {});
}

function hitItem(hit) {
  const doc = hit.document || {};
  const name = (hit.highlights && hit.highlights.name) ? highlighted(hit.highlights.name) : [doc.name || hit.id];
  const price = typeof doc.price === "number" ? `$${doc.price.toFixed(2)}` : "";
  return el("li", { class: "hit", "data-id": hit.id }, [
    doc.image ? el("img", { src: doc.image, alt: "", loading: "lazy", onerror: (e) => { e.target.style.visibility = "hidden"; } })
      : el("div", { class: "noimg" }),
    el("div", {}, [
      el("h2", { class: "name" }, name),
      el("p", { class: "meta", text: [doc.brand, (doc.categories || []).slice(-1)[0]].filter(Boolean).join(" · ") }),
    ]),
    el("p", { class: "price", text: price }),
  ]);
}

function renderFacets(facets) {
  const groups = [];
  for (const [field, buckets] of Object.entries(facets)) {
    if (!buckets.length) continue;
    const isRange = "label" in buckets[0] || "from" in buckets[0] || "to" in buckets[0];
    const items = buckets.map((bucket) => {
      const label = isRange ? (bucket.label || `${bucket.from ?? ""}–${bucket.to ?? ""}`) : bucket.value;
      const checked = isRange
        ? state.ranges[field] && state.ranges[field].label === label
        : (state.filters[field] || []).includes(bucket.value);
      const toggle = () => {
        if (isRange) {
          if (checked) delete state.ranges[field];
          else state.ranges[field] = { from: bucket.from, to: bucket.to, label };
        } else {
          const values = state.filters[field] || [];
          state.filters[field] = checked ? values.filter((v) => v !== bucket.value) : values.concat([bucket.value]);
        }
        state.page = 1;
        search();
      };
      return el("li", {}, el("label", {}, [
        el("input", { type: "checkbox", checked, onchange: toggle }),
        ` ${label} `,
        el("span", { class: "count", text: String(bucket.count) }),
      ]));
    });
    groups.push(el("fieldset", { "data-field": field }, [
      el("legend", { text: HEADINGS[field] || field }), el("ul", {}, items),
    ]));
  }
  $("facets").replaceChildren(...groups);
}

function start() {
  if (!KEY || !PROFILE) {
    $("setup").hidden = false;
    $("summary").textContent = "";
    return;
  }
  $("q").addEventListener("input", (event) => {
    state.q = event.target.value;
    state.page = 1;
    clearTimeout(timer);
    timer = setTimeout(search, DEBOUNCE_MS);
  });
  $("more").addEventListener("click", () => {
    state.page += 1;
    search({ append: true });
  });
  search();
}

start();
