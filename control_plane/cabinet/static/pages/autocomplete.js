// Autocomplete: the settings (fields and their weights, popular queries, products), custom
// suggestions, a rebuild with its task's progress, and a box that suggests as you type (POST
// .../suggest, the same answer the storefront's suggest route gives).
import { api, all } from "../api.js";
import { h, field, form, select, errorBox, show, notice, fill, nextId, readOnly, table, when, debounce, highlighted } from "../ui.js";
import { taskProgress, waitTask } from "../tasks.js";

export async function render(body, ctx) {
  const [mapping, profiles, config] = await Promise.all([ctx.mapping(), ctx.profiles(), api("GET", ctx.url + "/suggestions/config")]);
  const progress = taskProgress("Suggestion rebuild progress");
  progress.el.hidden = true;
  const rebuildMessage = h("div");

  /** Follows the latest rebuild task (the one a save or an added suggestion enqueued, or ours). */
  async function follow(taskId) {
    if (!taskId) {
      const page = await api("GET", `/v1/projects/${ctx.projectId}/tasks?indexId=${ctx.indexId}&type=suggestions.rebuild&limit=1`);
      if (!page.items.length) return;
      taskId = page.items[0].taskId;
    }
    progress.el.hidden = false;
    const task = await waitTask(ctx.projectId, taskId, (t) => {
      if (!progress.el.isConnected) throw new Error("The page was left.");  // stop polling
      progress.update(t);
    });
    if (task.status === "succeeded") {
      const fresh = await api("GET", ctx.url + "/suggestions/config");
      fill(built, builtText(fresh));
      suggestNow();
    }
  }
  const builtText = (cfg) => (cfg.builtAt ? `Last rebuilt ${when(cfg.builtAt)}: ${cfg.builtCount.toLocaleString()} suggestions.` : "Not built yet.");
  const built = h("span", { id: "built" }, builtText(config));

  // ---- the settings
  const suggestFields = Object.entries(mapping.fields || {}).filter(([, s]) => s.suggest).map(([n]) => n);
  const sources = suggestFields.map((f) => {
    const current = config.sources.find((s) => s.field === f);
    return { f, on: h("input", { type: "checkbox", checked: !!current, "aria-label": `Suggest from ${f}`, "data-path": `source-${f}` }),
      weight: h("input", { type: "number", min: 0, max: 100, step: "any", value: current ? current.weight : 1, class: "narrow", "aria-label": `Weight of ${f}` }) };
  });
  const settingsForm = form({ "aria-label": "Autocomplete settings" }, [
    h("fieldset", { disabled: !ctx.canWrite, class: "plain" }, h("legend", { class: "sr-only" }, "Settings"),
      h("label", { class: "inline" }, h("input", { type: "checkbox", name: "enabled", checked: config.enabled }), " Autocomplete on"),
      h("fieldset", { "data-path": "sources" }, h("legend", {}, "Suggest from these fields"),
        sources.length ? h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, h("tr", {}, ["Field", "Use", "Weight (0–100)"].map((x) => h("th", { scope: "col" }, x)))),
          h("tbody", {}, sources.map((s) => h("tr", {}, h("th", { scope: "row" }, s.f), h("td", {}, s.on),
            h("td", {}, s.weight))))))
          : h("p", { class: "muted" }, "No field is marked “Suggest” in the mapping: mark one under ", h("a", { href: ctx.href("settings") }, "Settings"), ".")),
      h("fieldset", { "data-path": "popularQueries" }, h("legend", {}, "Popular queries"),
        h("label", { class: "inline" }, h("input", { type: "checkbox", name: "popularEnabled", checked: config.popularQueries.enabled }), " Suggest what shoppers search often"),
        h("div", { class: "row" },
          field("Searched at least (times)", h("input", { type: "number", name: "minSearches", "data-path": "popularQueries.minSearches", min: 1, value: config.popularQueries.minSearches })),
          field("In the last (days)", h("input", { type: "number", name: "days", "data-path": "popularQueries.days", min: 1, max: 365, value: config.popularQueries.days })))),
      h("fieldset", { "data-path": "products" }, h("legend", {}, "Products"),
        h("label", { class: "inline" }, h("input", { type: "checkbox", name: "productsEnabled", checked: config.products.enabled }), " Also show matching products"),
        h("div", { class: "row" },
          field("How many", h("input", { type: "number", name: "productCount", "data-path": "products.count", min: 1, max: 20, value: config.products.count })),
          field("Found with the profile", select("productProfile", [["", "the first saved profile"], ...profiles.map((p) => [p.profileKey, p.name])],
            config.products.profileKey || "", { "data-path": "products.profileKey" })))),
      h("div", { class: "row" },
        field("Suggestions shown (1–20)", h("input", { type: "number", name: "maxSuggestions", "data-path": "maxSuggestions", min: 1, max: 20, value: config.maxSuggestions })),
        h("label", { class: "inline" }, h("input", { type: "checkbox", name: "typoTolerance", checked: config.typoTolerance }), " Tolerate typos"))),
  ], "Save settings", async (v) => {
    const settings = {
      enabled: !!v.enabled,
      sources: sources.filter((s) => s.on.checked).map((s) => ({ field: s.f, weight: Number(s.weight.value) })),
      popularQueries: { enabled: !!v.popularEnabled, minSearches: Number(v.minSearches), days: Number(v.days) },
      maxSuggestions: Number(v.maxSuggestions),
      products: { enabled: !!v.productsEnabled, count: Number(v.productCount), ...(v.productProfile ? { profileKey: v.productProfile } : {}) },
      typoTolerance: !!v.typoTolerance,
    };
    // errors name `sources.N.…` by the position in the list sent: point those at the rows sent
    const sent = sources.filter((s) => s.on.checked);
    sources.forEach((s) => { delete s.weight.dataset.path; s.on.dataset.path = `source-${s.f}`; });
    sent.forEach((s, i) => { s.on.dataset.path = `sources.${i}`; s.weight.dataset.path = `sources.${i}.weight`; });
    await api("PUT", ctx.url + "/suggestions/config", { body: settings });
    follow().catch((e) => show(rebuildMessage, errorBox(e)));
    return notice("Settings saved; the suggestions are being rebuilt.");
  });
  if (!ctx.canWrite) settingsForm.querySelector("button[type=submit]").hidden = true;

  // ---- custom suggestions
  const customSlot = h("div");
  async function loadCustom() {
    const items = await all(ctx.url + "/suggestions/custom");
    const message = h("div");
    fill(customSlot, message, table(["Suggestion", "Weight", "Added", ""], items.map((s) => h("tr", {},
      h("td", {}, s.text), h("td", {}, String(s.weight)), h("td", {}, when(s.createdAt)),
      h("td", {}, ctx.canWrite ? h("button", { type: "button", class: "danger", "aria-label": `Delete suggestion ${s.text}`, onclick: async () => {
        try { await api("DELETE", `${ctx.url}/suggestions/custom/${s.id}`); await loadCustom(); suggestNow(); } catch (e) { show(message, errorBox(e)); }
      } }, "Delete") : null))), null, "No custom suggestion."));
  }
  const customForm = form({ "aria-label": "Add a custom suggestion", class: "inline-form" }, [
    field("Suggestion", h("input", { name: "text", required: true, maxlength: 200 })),
    field("Weight", h("input", { name: "weight", type: "number", min: 0, max: 1000, value: 10, class: "narrow" })),
  ], "Add suggestion", async (v, el) => {
    await api("POST", ctx.url + "/suggestions/custom", { body: { text: v.text, weight: Number(v.weight) } });
    el.reset();
    await loadCustom();
    follow().catch((e) => show(rebuildMessage, errorBox(e)));
    return notice("Added: it is served once the rebuild checked that it finds something.");
  });

  // ---- the try-it box: a combobox suggesting as you type
  const listId = nextId("suggestions");
  const box = h("input", { type: "search", id: nextId("try"), autocomplete: "off", role: "combobox", "aria-autocomplete": "list",
    "aria-expanded": "false", "aria-controls": listId, placeholder: "Start typing, e.g. iph" });
  const listbox = h("ul", { id: listId, role: "listbox", class: "suggestions", "aria-label": "Suggestions" });
  const products = h("div", { class: "suggest-products" });
  const took = h("p", { class: "muted", "aria-live": "polite" });
  let options = [], active = -1, generation = 0;
  function choose(i) {
    active = i;
    options.forEach((o, j) => o.setAttribute("aria-selected", j === i ? "true" : "false"));
    if (i >= 0) box.setAttribute("aria-activedescendant", options[i].id); else box.removeAttribute("aria-activedescendant");
  }
  async function suggestNow() {
    const mine = ++generation;
    try {
      const answer = await api("POST", ctx.url + "/suggest", { body: { q: box.value } });
      if (mine !== generation) return;
      // a refresh (after a rebuild) keeps the option the keyboard is on, if it is still offered
      const kept = active >= 0 ? options[active].firstChild.textContent : null;
      options = answer.suggestions.map((s) => h("li", { role: "option", id: nextId("opt"), "aria-selected": "false", class: "suggestion",
        onmousedown: (e) => { e.preventDefault(); box.value = s.text; suggestNow(); } },
      h("span", {}, highlighted(s.highlighted)), " ", h("span", { class: "badge" }, s.source)));
      fill(listbox, options);
      box.setAttribute("aria-expanded", options.length ? "true" : "false");
      choose(kept === null ? -1 : options.findIndex((o) => o.firstChild.textContent === kept));
      fill(products, answer.products && answer.products.length ? [h("h3", {}, "Products"),
        h("ul", {}, answer.products.map((p) => h("li", {}, String((p.document || {}).name ?? (p.document || {}).title ?? p.id))))] : null);
      took.textContent = `${answer.suggestions.length} suggestion(s) · ${answer.tookMs} ms`;
    } catch (e) { fill(listbox); fill(products, errorBox(e)); }
  }
  box.addEventListener("input", debounce(suggestNow, 120));
  box.addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown" && options.length) { e.preventDefault(); choose((active + 1) % options.length); }
    else if (e.key === "ArrowUp" && options.length) { e.preventDefault(); choose(active <= 0 ? options.length - 1 : active - 1); }
    else if (e.key === "Enter" && active >= 0) { e.preventDefault(); box.value = options[active].firstChild.textContent; suggestNow(); }
    else if (e.key === "Escape") { fill(listbox); options = []; box.setAttribute("aria-expanded", "false"); choose(-1); }
  });

  fill(body,
    h("div", { class: "two-col" },
      h("div", {},
        h("section", { class: "card" }, h("h2", {}, "Settings"),
          h("p", {}, "Storefront handle: ", h("code", { id: "suggest-key" }, config.suggestKey), " — shop pages call ", h("code", {}, `POST /v1/suggest/${config.suggestKey}`), " with a public key."),
          settingsForm, ctx.canWrite ? null : readOnly()),
        h("section", { class: "card" }, h("h2", {}, "Rebuild"),
          h("p", {}, built, " Suggestions are rebuilt after each change of the catalog or the settings; rebuild now to include today's popular queries."),
          ctx.canWrite ? h("button", { type: "button", class: "secondary", onclick: async () => {
            try { const t = await api("POST", ctx.url + "/suggestions/rebuild"); await follow(t.taskId); } catch (e) { show(rebuildMessage, errorBox(e)); }
          } }, "Rebuild now") : null, progress.el, rebuildMessage),
        h("section", { class: "card" }, h("h2", {}, "Custom suggestions"), customSlot, ctx.canWrite ? customForm : readOnly("Adding suggestions"))),
      h("section", { class: "card preview" }, h("h2", {}, "Try it"),
        field("Type as a shopper would", box), listbox, took, products)));
  await Promise.all([loadCustom(), suggestNow()]);
}
