// The demo store: InstantSearch.js widgets on shopsearch's search client, a suggest dropdown on the
// storefront suggest route, clicks and "add to cart" conversions sent as events.
// Setup comes in the fragment: #key=<public key>&profile=<profile key>&suggest=<suggest key>; the API is
// this page's origin. Bundled by build.mjs into static/build/demo.js (no code from a CDN).
import instantsearch from "instantsearch.js";
import { connectSearchBox } from "instantsearch.js/es/connectors";
import {
  clearRefinements,
  currentRefinements,
  hierarchicalMenu,
  hits,
  hitsPerPage,
  numericMenu,
  pagination,
  panel,
  refinementList,
  sortBy,
  stats,
} from "instantsearch.js/es/widgets";

import { shopsearch } from "../../../clients/js/src/index";

const params = new URLSearchParams(location.hash.slice(1));
const KEY = params.get("key");
const PROFILE = params.get("profile");
const SUGGEST = params.get("suggest");
const CATEGORY_LEVELS = [0, 1, 2, 3, 4].map((n) => `hierarchicalCategories.lvl${n}`);
const LABELS = { brand: "Brand", price: "Price", [CATEGORY_LEVELS[0]]: "Category" };
const $ = (id) => document.getElementById(id);
// a picture frame, drawn here: the page shows no image from elsewhere when the shop's CDN fails
const PLACEHOLDER = "data:image/svg+xml," + encodeURIComponent(
  "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 24 24' fill='#eef0f4' stroke='#9aa3b2' stroke-width='1'>" +
  "<rect x='3' y='4' width='18' height='16' rx='2'/><circle cx='9' cy='10' r='2'/><path d='m21 17-5-5-9 8' fill='none'/></svg>");
const price = (value) => (typeof value === "number" ? `$${value.toFixed(2)}` : "");

function showError(error) {
  const banner = $("error");
  banner.textContent = error
    ? `The search was refused: ${error.status || ""} ${error.code || ""} ${error.message || error}`.replace(/\s+/g, " ")
    : "";
  banner.hidden = !error;
}

/** A search box whose suggestions come from POST /v1/suggest/{suggestKey}; typing searches as you type. */
function suggestBox(client, container) {
  const renderBox = (state, isFirstRender) => {
    const { query, widgetParams } = state;
    if (isFirstRender) {
      const root = document.querySelector(widgetParams.container);
      root.innerHTML = `
        <div class="suggest" role="search">
          <input id="q" type="search" autocomplete="off" spellcheck="false" autofocus
                 placeholder="Search 3,000+ phones and accessories: iphone, samsung galaxy, otterbox case, charger…"
                 aria-label="Search products" role="combobox" aria-expanded="false" aria-controls="suggestions"
                 aria-autocomplete="list">
          <ul id="suggestions" role="listbox" aria-label="Suggestions" hidden></ul>
        </div>`;
      const input = root.querySelector("input");
      const list = root.querySelector("ul");
      let active = -1;
      let asked = 0;
      let timer = null;
      const options = () => [...list.querySelectorAll("li")];
      const close = () => {
        list.hidden = true;
        list.replaceChildren();
        input.setAttribute("aria-expanded", "false");
        input.removeAttribute("aria-activedescendant");
        active = -1;
      };
      const choose = (text) => {
        input.value = text;
        close();
        state.refine(text);
      };
      const mark = (i) => {
        active = i;
        options().forEach((li, j) => li.setAttribute("aria-selected", String(j === i)));
        if (i >= 0) input.setAttribute("aria-activedescendant", options()[i].id);
        else input.removeAttribute("aria-activedescendant");
      };
      const suggest = async (q) => {
        const mine = ++asked;
        let answer;
        try {
          answer = await client.suggest(SUGGEST, { q, limit: 6 });
        } catch {
          return close(); // suggestions are a help: a refusal shows in the search itself
        }
        if (mine !== asked || input.value !== q) return;
        if (!answer.suggestions.length) return close();
        list.replaceChildren(...answer.suggestions.map((s, i) => {
          const li = document.createElement("li");
          li.id = `suggestion-${i}`;
          li.setAttribute("role", "option");
          li.dataset.text = s.text;
          const template = document.createElement("template");
          template.innerHTML = s.highlighted; // the server's: escaped text and <em>
          li.append(...[...template.content.childNodes].map((n) =>
            n.nodeName === "EM" ? Object.assign(document.createElement("mark"), { textContent: n.textContent })
              : document.createTextNode(n.textContent)));
          li.addEventListener("mousedown", (event) => {
            event.preventDefault();
            choose(s.text);
          });
          return li;
        }));
        list.hidden = false;
        input.setAttribute("aria-expanded", "true");
        mark(-1);
      };
      input.addEventListener("input", () => {
        state.refine(input.value);
        if (!SUGGEST) return;
        clearTimeout(timer);
        if (!input.value.trim()) return close();
        timer = setTimeout(() => suggest(input.value), 80);
      });
      input.addEventListener("keydown", (event) => {
        const items = options();
        if (event.key === "ArrowDown" && items.length) {
          event.preventDefault();
          mark((active + 1) % items.length);
        } else if (event.key === "ArrowUp" && items.length) {
          event.preventDefault();
          mark(active <= 0 ? items.length - 1 : active - 1);
        } else if (event.key === "Enter" && active >= 0) {
          event.preventDefault();
          choose(items[active].dataset.text);
        } else if (event.key === "Escape") {
          close();
        }
      });
      input.addEventListener("blur", () => setTimeout(close, 100));
      root.renderState = { input, close };
      return;
    }
    const { input } = document.querySelector(widgetParams.container).renderState;
    if (document.activeElement !== input && input.value !== query) input.value = query; // "clear all", history
  };
  return connectSearchBox(renderBox)({ container });
}

function hitTemplate(hit, { html, components, sendEvent }) {
  const leaf = (hit.categories || []).slice(-1)[0] || "";
  return html`
    <article class="product" data-id=${hit.objectID} onClick=${() => sendEvent("click", hit, "Product clicked")}>
      ${hit.image
        ? html`<img src=${hit.image} alt="" loading="lazy" width="96" height="96" referrerpolicy="no-referrer" />`
        : html`<img src=${PLACEHOLDER} alt="" class="noimg" width="96" height="96" />`}
      <div class="info">
        <h2 class="name">${components.Highlight({ hit, attribute: "name" })}</h2>
        <p class="meta">${components.Highlight({ hit, attribute: "brand" })}${leaf ? ` · ${leaf}` : ""}</p>
      </div>
      <div class="buy">
        <p class="price">${price(hit.price)}</p>
        <button type="button" class="add" onClick=${(event) => {
          event.stopPropagation();
          sendEvent("conversion", hit, "Added to cart");
          event.currentTarget.textContent = "Added";
        }}>Add to cart</button>
      </div>
    </article>`;
}

function start() {
  if (!KEY || !PROFILE) {
    $("setup").hidden = false;
    return;
  }
  const client = shopsearch({ host: location.origin, apiKey: KEY });
  client.insightsClient.onError = () => {}; // an event that was not recorded never disturbs the shopper
  const search = instantsearch({
    indexName: PROFILE,
    searchClient: client.searchClient,
    insights: { insightsClient: client.insightsClient },
    future: { preserveSharedStateOnUnmount: true, persistHierarchicalRootCount: true },
  });
  search.on("error", (error) => showError(error));
  search.on("render", () => {
    if (search.status !== "error") showError(null);
  });

  const facet = (header, widget, options) => panel({ templates: { header: () => header } })(widget)(options);
  search.addWidgets([
    suggestBox(client, "#searchbox"),
    stats({
      container: "#stats",
      // counts only: engine timings are not the shopper's business
      templates: { text: ({ nbHits, query }, { html }) =>
        nbHits ? html`${nbHits.toLocaleString("en-US")} products${query ? html` for “${query}”` : ""}`
          : html`No products${query ? html` for “${query}”` : ""}` },
    }),
    sortBy({
      container: "#sort",
      items: [
        { label: "Most relevant", value: PROFILE },
        { label: "Price: low to high", value: `${PROFILE}:price-asc` },
        { label: "Price: high to low", value: `${PROFILE}:price-desc` },
        { label: "Most popular", value: `${PROFILE}:popular` },
      ],
    }),
    hitsPerPage({
      container: "#per-page",
      items: [
        { label: "20 per page", value: 20, default: true },
        { label: "40 per page", value: 40 },
        { label: "60 per page", value: 60 },
      ],
    }),
    currentRefinements({
      container: "#current",
      transformItems: (items) => items.map((item) => ({ ...item, label: LABELS[item.attribute] || item.label })),
    }),
    clearRefinements({ container: "#clear", templates: { resetLabel: () => "Clear all" } }),
    hits({ container: "#hits", templates: { item: hitTemplate, empty: () => "No products match. Try fewer filters." } }),
    pagination({ container: "#pagination", padding: 2 }),
    facet("Category", hierarchicalMenu, { container: "#categories", attributes: CATEGORY_LEVELS, limit: 30 }),
    facet("Brand", refinementList, {
      container: "#brands",
      attribute: "brand",
      searchable: true,
      searchablePlaceholder: "Search brands",
      showMore: true,
      limit: 10,
      showMoreLimit: 20,
    }),
    facet("Price", numericMenu, {
      container: "#price",
      attribute: "price",
      items: [
        { label: "All" },
        { label: "Under $50", end: 49.99 },
        { label: "$50 to $200", start: 50, end: 199.99 },
        { label: "$200 to $500", start: 200, end: 499.99 },
        { label: "$500 and up", start: 500 },
      ],
    }),
  ]);
  search.start();

  // a product image that does not load (a CDN down, a blocked host) gives way to a placeholder
  document.addEventListener("error", (event) => {
    const img = event.target;
    if (img instanceof HTMLImageElement && img.closest(".product") && img.src !== PLACEHOLDER) {
      img.src = PLACEHOLDER;
      img.classList.add("noimg");
    }
  }, true);
  window.shopsearchDemo = { search, client }; // for the curious (and the page's tests)
}

start();
