// Ranking rules: the list in the order they apply (drag a rule, or use its Move buttons or the arrow
// keys on its handle; each move sends PUT rules/order), and the editor: conditions, a filter
// condition, validity windows and every consequence (pin and hide by searching for the product,
// boost, bury, added filters, replaced query, redirect, custom data), with a live preview of the
// hits before and after the change through POST rules/test.
import { api } from "../api.js";
import { h, field, select, errorBox, show, notice, fill, nextId, readOnly, debounce, placeErrors, clearErrors } from "../ui.js";
import { titleField, inlineProfile, defaultProfile, hitList } from "../search_view.js";

const ANCHORING = [["contains", "contains"], ["is", "is exactly"], ["startsWith", "starts with"], ["endsWith", "ends with"]];

export async function render(body, ctx) {
  if (ctx.sub) return editor(body, ctx, ctx.sub === "new" ? null : ctx.sub);
  return list(body, ctx);
}

function summary(rule) {
  const c = rule.consequence || {};
  const parts = [];
  if ((c.pin || []).length) parts.push(`pins ${c.pin.length}`);
  if ((c.hide || []).length) parts.push(`hides ${c.hide.length}`);
  if ((c.boost || []).length) parts.push(`boosts ${c.boost.length}`);
  if ((c.bury || []).length) parts.push(`buries ${c.bury.length}`);
  if (c.addFilters) parts.push("adds filters");
  if (c.replaceQuery) parts.push(`searches “${c.replaceQuery}”`);
  if (c.redirect) parts.push("redirects");
  if (c.userData) parts.push("custom data");
  return parts.join(", ") || "no consequence";
}

const when = (rule) => (rule.conditions.length
  ? rule.conditions.map((c) => `query ${ANCHORING.find(([k]) => k === c.anchoring)[1]} “${c.pattern}”`).join(" or ")
  : "every query");

async function list(body, ctx) {
  let rules = await ctx.rules(true);
  const message = h("div");
  const announce = h("p", { class: "sr-only", role: "status", "aria-live": "polite" });
  const listEl = h("ol", { class: "rule-list" });
  let dragged = null;

  async function saveOrder(next, moved) {
    const before = rules;
    rules = next;
    draw(moved);
    try {
      rules = (await api("PUT", ctx.url + "/rules/order", { body: { ids: next.map((r) => r.id) } })).items;
      draw(moved);
      announce.textContent = `${moved.name} is now rule ${rules.findIndex((r) => r.id === moved.id) + 1} of ${rules.length}.`;
    } catch (e) {
      rules = before;
      draw(moved);
      show(message, errorBox(e));
    }
  }
  function move(rule, by) {
    const at = rules.findIndex((r) => r.id === rule.id);
    const to = Math.max(0, Math.min(rules.length - 1, at + by));
    if (to === at) return;
    const next = [...rules];
    next.splice(at, 1);
    next.splice(to, 0, rule);
    saveOrder(next, rule);
  }
  function draw(focusRule) {
    fill(listEl, rules.map((rule, i) => {
      const handle = ctx.canWrite ? h("button", { type: "button", class: "handle", "aria-label": `Reorder ${rule.name} (rule ${i + 1} of ${rules.length}): arrow keys move it`,
        onkeydown: (e) => {
          if (e.key === "ArrowUp" || e.key === "ArrowDown") { e.preventDefault(); move(rule, e.key === "ArrowUp" ? -1 : 1); }
        } }, "⠿") : null;
      const li = h("li", { class: "rule" + (rule.enabled ? "" : " disabled"), "data-id": rule.id, draggable: ctx.canWrite ? "true" : null },
        handle,
        h("div", { class: "rule-text" },
          h("a", { href: ctx.href("rules", rule.id), class: "rule-name" }, rule.name),
          rule.enabled ? null : h("span", { class: "badge warn" }, "disabled"),
          h("div", { class: "muted" }, `When ${when(rule)}: ${summary(rule)}`, rule.validity.length ? " · has validity windows" : "")),
        h("span", { class: "row-actions" },
          h("a", { href: ctx.href("preview", null, { q: (rule.conditions[0] || {}).pattern || "" }), "aria-label": `Preview ${rule.name}` }, "Preview"),
          ctx.canWrite ? [
            h("button", { type: "button", class: "secondary", disabled: i === 0, "aria-label": `Move ${rule.name} up`, onclick: () => move(rule, -1) }, "Move up"),
            h("button", { type: "button", class: "secondary", disabled: i === rules.length - 1, "aria-label": `Move ${rule.name} down`, onclick: () => move(rule, 1) }, "Move down")] : null));
      if (ctx.canWrite) {
        li.addEventListener("dragstart", (e) => { dragged = rule; li.classList.add("dragging"); e.dataTransfer.effectAllowed = "move"; e.dataTransfer.setData("text/plain", rule.id); });
        li.addEventListener("dragend", () => { li.classList.remove("dragging"); dragged = null; });
        li.addEventListener("dragover", (e) => { if (dragged && dragged.id !== rule.id) { e.preventDefault(); li.classList.add("drop-target"); } });
        li.addEventListener("dragleave", () => li.classList.remove("drop-target"));
        li.addEventListener("drop", (e) => {
          e.preventDefault();
          li.classList.remove("drop-target");
          const source = dragged || rules.find((r) => r.id === e.dataTransfer.getData("text/plain"));
          if (!source || source.id === rule.id) return;
          const next = rules.filter((r) => r.id !== source.id);
          const target = next.findIndex((r) => r.id === rule.id);
          const from = rules.findIndex((r) => r.id === source.id);
          next.splice(from < rules.findIndex((r) => r.id === rule.id) ? target + 1 : target, 0, source);
          saveOrder(next, source);
        });
      }
      return li;
    }));
    if (focusRule) {
      const handle = listEl.querySelector(`li[data-id="${CSS.escape(focusRule.id)}"] .handle`);
      if (handle) handle.focus();
    }
  }
  draw(null);
  fill(body,
    h("p", {}, "Rules change the results of the queries they match: pin or hide products, boost or bury some, add filters, search another text or redirect. Enabled rules apply in this order."),
    ctx.canWrite ? h("p", { class: "actions" }, h("a", { class: "button", href: ctx.href("rules", "new") }, "New rule")) : readOnly("Changing rules"),
    h("section", { class: "card" }, h("h2", {}, `Rules (${rules.length})`),
      ctx.canWrite && rules.length > 1 ? h("p", { class: "muted" }, "Drag a rule to reorder, or use its Move buttons (or the arrow keys on its ⠿ handle).") : null,
      message, announce, rules.length ? listEl : h("p", { class: "empty" }, "No rule yet.")));
}

// ---------------------------------------------------------------------------- the editor

/** "2026-12-24", "2026-12-24 18:00" or an ISO time, read as UTC; null for empty; throws on anything else. */
function iso(text, path) {
  const value = text.trim();
  if (!value) return null;
  const m = /^(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}:\d{2})(?::\d{2})?)?(Z|[+-]\d{2}:\d{2})?$/.exec(value);
  const time = m ? Date.parse(`${m[1]}T${m[2] || "00:00"}:00${m[3] || "Z"}`) : NaN;
  if (Number.isNaN(time)) throw { code: "VALIDATION_ERROR", message: `${value}: not a date`, details: [{ path, message: "a date YYYY-MM-DD, optionally with a time HH:MM (UTC)" }] };
  return new Date(time).toISOString().replace(".000Z", "Z");
}
const local = (value) => (value ? new Date(value).toISOString().slice(0, 16).replace("T", " ") : "");
const jsonText = (v) => (v === undefined || v === null ? "" : JSON.stringify(v, null, 2));

function jsonField(label, value, path, hint) {
  const area = h("textarea", { rows: 3, class: "code", "data-path": path, spellcheck: "false", placeholder: '{"brand": ["Apple"]}', value: jsonText(value) });
  return { area, el: field(label, area, hint) };
}

async function editor(body, ctx, ruleId) {
  const [mapping, profiles, rules] = await Promise.all([ctx.mapping(), ctx.profiles(), ctx.rules(true)]);
  const saved = ruleId ? rules.find((r) => r.id === ruleId) : null;
  if (ruleId && !saved) {
    fill(body, errorBox({ message: "This rule does not exist (any more).", code: "NOT_FOUND" }), h("p", {}, h("a", { href: ctx.href("rules") }, "Back to the rules")));
    return;
  }
  const profile = profiles[0] || defaultProfile(mapping);
  const title = titleField(profile, mapping);
  const asked = ctx.params.get("q") || "";
  const rule = saved || { name: asked ? `Results for “${asked}”` : "", enabled: true, conditions: asked ? [{ pattern: asked, anchoring: "is" }] : [],
    filters: null, validity: [], consequence: { pin: [], hide: [], boost: [], bury: [] } };
  const c = { pin: [], hide: [], boost: [], bury: [], ...rule.consequence };
  const names = new Map();  // document id → title, for pins and hides

  // ---- basics and conditions
  const name = h("input", { name: "name", "data-path": "name", value: rule.name, required: true, maxlength: 200 });
  const enabled = h("input", { type: "checkbox", name: "enabled", checked: rule.enabled });
  const conditionRows = h("div", { class: "rows", "data-path": "conditions" });
  const addCondition = (cond = { pattern: "", anchoring: "is" }) => {
    const i = conditionRows.children.length;
    const row = h("div", { class: "row condition" },
      select("", ANCHORING, cond.anchoring, { "aria-label": "Query", "data-k": "anchoring" }),
      h("input", { value: cond.pattern, "aria-label": "Query text", "data-k": "pattern", "data-path": `conditions[${i}].pattern`, placeholder: "iphone" }),
      h("button", { type: "button", class: "secondary", "aria-label": "Remove condition", onclick: () => { row.remove(); renumber(conditionRows, "conditions", "pattern"); changed(); } }, "Remove"));
    conditionRows.append(row);
    return row;
  };
  (rule.conditions || []).forEach(addCondition);
  const filtersField = jsonField("Only when the search filters hold (JSON, optional)", rule.filters, "filters", "Field values the shopper's filters must include, e.g. {\"brand\": [\"Apple\"]}.");

  // ---- validity
  const windowRows = h("div", { class: "rows", "data-path": "validity" });
  const addWindow = (w = { from: null, until: null }) => {
    const i = windowRows.children.length;
    const row = h("div", { class: "row window", "data-path": `validity[${i}]` },
      field("From (UTC)", h("input", { value: local(w.from), "data-k": "from", "data-path": `validity[${i}].from`, placeholder: "2026-12-24 18:00", autocomplete: "off" })),
      field("Until (UTC)", h("input", { value: local(w.until), "data-k": "until", "data-path": `validity[${i}].until`, placeholder: "2026-12-27", autocomplete: "off" })),
      h("button", { type: "button", class: "secondary", "aria-label": "Remove validity window", onclick: () => { row.remove(); renumber(windowRows, "validity"); changed(); } }, "Remove"));
    windowRows.append(row);
    return row;
  };
  (rule.validity || []).forEach(addWindow);

  // ---- pins and hides, found by searching the catalog
  const pinList = h("ol", { class: "pin-list", "data-path": "consequence.pin" });
  const hideList = h("ul", { class: "pin-list", "data-path": "consequence.hide" });
  let pins = (c.pin || []).map((p) => ({ ...p }));
  let hides = [...(c.hide || [])];
  const label = (id) => names.get(String(id)) || `document ${id}`;
  function drawPins() {
    pins.sort((a, b) => a.position - b.position);
    fill(pinList, pins.map((p, i) => h("li", { "data-id": p.id },
      h("span", { class: "pin-name" }, label(p.id)), " ", h("code", {}, p.id), " ",
      h("label", { class: "inline" }, "at position ", h("input", { type: "number", min: 1, max: 1000, value: p.position, class: "narrow",
        "data-path": `consequence.pin[${i}].position`, "aria-label": `Position of ${label(p.id)}`,
        onchange: (e) => { p.position = Number(e.target.value) || 1; drawPins(); changed(); } })),
      h("button", { type: "button", class: "secondary", "aria-label": `Unpin ${label(p.id)}`, onclick: () => { pins = pins.filter((x) => x !== p); drawPins(); changed(); } }, "Unpin"))));
    if (!pins.length) pinList.append(h("li", { class: "muted" }, "Nothing pinned."));
  }
  function drawHides() {
    fill(hideList, hides.map((id) => h("li", { "data-id": id }, h("span", {}, label(id)), " ", h("code", {}, id), " ",
      h("button", { type: "button", class: "secondary", "aria-label": `Show ${label(id)} again`, onclick: () => { hides = hides.filter((x) => x !== id); drawHides(); changed(); } }, "Show again"))));
    if (!hides.length) hideList.append(h("li", { class: "muted" }, "Nothing hidden."));
  }
  async function learnNames(ids) {
    await Promise.all(ids.filter((id) => !names.has(String(id))).map(async (id) => {
      try { const doc = await api("GET", `${ctx.url}/documents/${encodeURIComponent(id)}`); names.set(String(id), String(doc[title] ?? id)); } catch (e) { names.set(String(id), "(not in the catalog)"); }
    }));
  }
  const finder = h("input", { type: "search", id: nextId("find"), autocomplete: "off", placeholder: "Search the catalog" });
  const found = h("div", { class: "found", "aria-live": "polite" });
  async function find() {
    if (!finder.value.trim()) { fill(found); return; }
    try {
      const answer = await api("POST", ctx.url + "/search", { body: { q: finder.value, perPage: 8, profile: { ...inlineProfile(profile), perPage: 8 } } });
      for (const hit of answer.hits) names.set(String(hit.id), String((hit.document || {})[title] ?? hit.id));
      fill(found, answer.hits.length ? hitList(answer, { title, actions: (hit) => [
        h("button", { type: "button", class: "secondary", "aria-label": `Pin ${label(hit.id)}`, onclick: () => {
          if (pins.some((p) => String(p.id) === String(hit.id))) return;
          pins.push({ id: String(hit.id), position: pins.reduce((m, p) => Math.max(m, p.position), 0) + 1 });
          drawPins(); changed();
        } }, "Pin"),
        h("button", { type: "button", class: "secondary", "aria-label": `Hide ${label(hit.id)}`, onclick: () => {
          if (!hides.includes(String(hit.id))) hides.push(String(hit.id));
          drawHides(); changed();
        } }, "Hide")] }) : h("p", { class: "muted" }, "No product found."));
    } catch (e) { fill(found, errorBox(e)); }
  }
  finder.addEventListener("input", debounce(find, 250));

  // ---- boost and bury
  const weighted = (kind, items, defaultWeight, hint) => {
    const rows = h("div", { class: "rows", "data-path": `consequence.${kind}` });
    const add = (b = { filters: null, weight: defaultWeight }) => {
      const i = rows.children.length;
      const f = jsonField("Products matching (JSON filter)", b.filters, `consequence.${kind}[${i}].filters`);
      const row = h("div", { class: "row weighted" }, f.el,
        field("Weight", h("input", { type: "number", step: "any", min: 0, max: kind === "bury" ? 1 : 100, value: b.weight, "data-k": "weight", "data-path": `consequence.${kind}[${i}].weight` }), hint),
        h("button", { type: "button", class: "secondary", "aria-label": `Remove ${kind}`, onclick: () => { row.remove(); renumber(rows, `consequence.${kind}`); changed(); } }, "Remove"));
      rows.append(row);
    };
    items.forEach(add);
    return { rows, add };
  };
  const boosts = weighted("boost", c.boost || [], 1, "Score × (1 + weight).");
  const buries = weighted("bury", c.bury || [], 0.5, "Score × (1 − weight); 1 sinks them below everything.");
  const addFilters = jsonField("Add filters (JSON)", c.addFilters, "consequence.addFilters", "Filters added to the search, e.g. {\"categories\": [\"Cell Phones\"]}.");
  const replaceQuery = h("input", { "data-path": "consequence.replaceQuery", value: c.replaceQuery || "", maxlength: 512 });
  const redirect = h("input", { "data-path": "consequence.redirect", value: c.redirect || "", maxlength: 2000, placeholder: "https://shop.example/sale or /sale" });
  const userData = jsonField("Custom data (JSON object, returned with the answer)", c.userData, "consequence.userData");

  /** The rule as the API takes it; throws an error naming the field when a JSON box doesn't parse. */
  function draft() {
    const parse = ({ area }) => {
      if (!area.value.trim()) return null;
      try { return JSON.parse(area.value); } catch (e) {
        throw { code: "VALIDATION_ERROR", message: `Not valid JSON: ${e.message}`, details: [{ path: area.dataset.path, message: "not valid JSON: " + e.message }] };
      }
    };
    const weightedOf = (w) => [...w.rows.children].map((row) => ({
      filters: parse({ area: row.querySelector("textarea") }) || {}, weight: Number(row.querySelector("[data-k=weight]").value) }));
    const consequence = { pin: pins.map((p) => ({ id: p.id, position: p.position })), hide: hides, boost: weightedOf(boosts), bury: weightedOf(buries) };
    const added = parse(addFilters);
    if (added) consequence.addFilters = added;
    if (replaceQuery.value.trim()) consequence.replaceQuery = replaceQuery.value.trim();
    if (redirect.value.trim()) consequence.redirect = redirect.value.trim();
    const data = parse(userData);
    if (data) consequence.userData = data;
    const out = {
      name: name.value.trim(), enabled: enabled.checked,
      conditions: [...conditionRows.children].map((row) => ({ pattern: row.querySelector("[data-k=pattern]").value, anchoring: row.querySelector("[data-k=anchoring]").value })),
      validity: [...windowRows.children].map((row, i) => {
        const w = {};
        const from = iso(row.querySelector("[data-k=from]").value, `validity[${i}].from`);
        const until = iso(row.querySelector("[data-k=until]").value, `validity[${i}].until`);
        if (from) w.from = from;
        if (until) w.until = until;
        return w;
      }),
      consequence,
    };
    const conditionFilters = parse(filtersField);
    if (conditionFilters) out.filters = conditionFilters;
    return out;
  }

  // ---- live preview: rules/test without and with the draft
  const q = h("input", { type: "search", id: nextId("tq"), autocomplete: "off", value: asked || (rule.conditions[0] || {}).pattern || "" });
  const before = h("section", { class: "column", "aria-labelledby": "before-title" });
  const after = h("section", { class: "column", "aria-labelledby": "after-title", "aria-live": "polite" });
  const matched = h("div");
  let generation = 0;
  async function preview() {
    const mine = ++generation;
    clearErrors(form);
    let rule2;
    try { rule2 = draft(); } catch (e) { placeErrors(form, e); fill(after, h("h3", { id: "after-title" }, "After"), errorBox(e)); return; }
    if (saved) rule2.position = saved.position;
    if (!rule2.name) rule2.name = "(unnamed)";  // a name is asked for on save, not to try the rule
    const test = { q: q.value, perPage: 10 };
    if (profiles[0]) test.profileKey = profiles[0].profileKey;
    const k = rule2.consequence;
    const acts = k.pin.length || k.hide.length || k.boost.length || k.bury.length || k.addFilters || k.replaceQuery || k.redirect || k.userData;
    const [was, will] = await Promise.allSettled([api("POST", ctx.url + "/rules/test", { body: test }),
      acts ? api("POST", ctx.url + "/rules/test", { body: { ...test, rule: rule2 } }) : Promise.resolve(null)]);
    if (mine !== generation) return;
    const names2 = new Map(rules.map((r) => [r.id, r.name]));
    names2.set("draft", "this rule");
    const column = (el, id, heading, result, other) => {
      if (result.status === "rejected") {
        placeErrors(form, result.reason, "rule.");
        fill(el, h("h3", { id }, heading), errorBox(result.reason));
        return;
      }
      const answer = result.value;
      for (const hit of answer.hits) names.set(String(hit.id), String((hit.document || {})[title] ?? hit.id));
      const compare = other ? new Map(other.hits.map((hit, i) => [String(hit.id), i + 1])) : null;
      fill(el, h("h3", { id }, heading),
        h("p", { class: "muted summary", "data-total": String(answer.total) }, `${answer.total.toLocaleString()} results`,
          answer.appliedRules.length ? ` · rules applied: ${answer.appliedRules.map((r) => names2.get(r) || r).join(", ")}` : ""),
        answer.redirect ? h("p", {}, "Redirects to ", h("code", {}, answer.redirect)) : null,
        answer.hits.length ? hitList(answer, { title, compare }) : h("p", { class: "empty" }, "No results."));
    };
    column(before, "before-title", saved ? "Before: as saved" : "Before: without this rule", was, null);
    if (!acts) {
      fill(after, h("h3", { id: "after-title" }, "After"), h("p", { class: "muted" }, "Pin, hide, boost or change something below to see its effect here."));
      fill(matched);
      return;
    }
    column(after, "after-title", saved ? "After: with your changes" : "After: with this rule", will, was.status === "fulfilled" ? was.value : null);
    if (will.status === "fulfilled") {
      const m = will.value.matchedRules.find((r) => r.id === "draft");
      fill(matched, m ? notice(m.active ? "This rule matches the query." : "This rule matches the query but is not active now (disabled, or outside its validity windows).", m.active ? "ok" : "warn")
        : notice("This rule does not match the query.", "warn"),
      saved && saved.enabled ? h("p", { class: "muted" }, "The saved version of this rule applies in both columns; your changes apply before it in the second.") : null);
    }
  }
  const changed = debounce(preview, 300);
  q.addEventListener("input", changed);

  // ---- save and delete
  const message = h("div");
  const saveButton = h("button", { type: "submit" }, saved ? "Save rule" : "Create rule");
  const form = h("form", { class: "rule-editor", "aria-label": "Rule", oninput: changed, onchange: changed, onsubmit: async (e) => {
    e.preventDefault();
    clearErrors(form);
    fill(message);
    saveButton.disabled = true;
    try {
      const r = draft();
      const result = saved ? await api("PUT", `${ctx.url}/rules/${saved.id}`, { body: r }) : await api("POST", ctx.url + "/rules", { body: r });
      if (!saved) { location.hash = ctx.href("rules", result.id); return; }
      Object.assign(saved, result);
      show(message, notice(`Rule “${result.name}” saved: the next search uses it.`));
      preview();
    } catch (err) {
      show(message, errorBox(err));
      placeErrors(form, err);
    } finally { saveButton.disabled = false; }
  } },
  h("fieldset", { disabled: !ctx.canWrite, class: "plain" },
    h("legend", { class: "sr-only" }, "Rule settings"),
    h("div", { class: "row" }, field("Rule name", name), h("label", { class: "inline" }, enabled, " Enabled")),
    h("fieldset", {}, h("legend", {}, "When the query…"), conditionRows,
      h("button", { type: "button", class: "secondary", onclick: () => { addCondition().querySelector("input").focus(); } }, "Add condition"),
      h("p", { class: "muted" }, "No condition: the rule applies to every query."), filtersField.el),
    h("fieldset", {}, h("legend", {}, "Validity windows"), windowRows,
      h("button", { type: "button", class: "secondary", onclick: () => { addWindow().querySelector("input").focus(); } }, "Add validity window"),
      h("p", { class: "muted" }, "None: always valid. Dates YYYY-MM-DD, optionally with a time HH:MM, in UTC; from is included, until is not.")),
    h("fieldset", {}, h("legend", {}, "Pin and hide products"),
      field("Find a product", finder, "Type a name, then pin it (first free position) or hide it."), found,
      h("h3", {}, "Pinned"), pinList, h("h3", {}, "Hidden"), hideList),
    h("fieldset", {}, h("legend", {}, "Boost"), boosts.rows, h("button", { type: "button", class: "secondary", onclick: () => boosts.add() }, "Add boost")),
    h("fieldset", {}, h("legend", {}, "Bury"), buries.rows, h("button", { type: "button", class: "secondary", onclick: () => buries.add() }, "Add bury")),
    h("fieldset", {}, h("legend", {}, "Change the search"), addFilters.el,
      field("Search this text instead", replaceQuery), field("Redirect to", redirect, "An https address, or a path of your shop starting with /."), userData.el)),
  message,
  ctx.canWrite ? h("p", { class: "actions" }, saveButton,
    saved ? h("button", { type: "button", class: "danger", onclick: async () => {
      if (!confirm(`Delete the rule “${saved.name}”?`)) return;
      try { await api("DELETE", `${ctx.url}/rules/${saved.id}`); location.hash = ctx.href("rules"); } catch (e) { show(message, errorBox(e)); }
    } }, "Delete rule") : null) : readOnly("Changing rules"));

  await learnNames([...pins.map((p) => p.id), ...hides]);
  drawPins();
  drawHides();
  const toFull = h("a", { href: ctx.href("preview"), onclick: (e) => { e.currentTarget.href = ctx.href("preview", null, { q: q.value }); } }, "Open in search preview");
  fill(body,
    h("p", {}, h("a", { href: ctx.href("rules") }, "← All rules"), saved ? ` · rule ${saved.position} of ${rules.length}` : null),
    h("div", { class: "two-col even" },
      h("section", { class: "card" }, h("h2", {}, saved ? `Rule “${saved.name}”` : "New rule"), form),
      h("section", { class: "card preview" }, h("h2", {}, "Live preview"),
        field("Query", q), matched, h("div", { class: "split" }, before, after), h("p", {}, toFull))));
  await preview();
}

/** After a row is removed, the data-path indices of the rows below move up (errors find their row). */
function renumber(rows, prefix, leaf) {
  [...rows.children].forEach((row, i) => {
    for (const el of [row, ...row.querySelectorAll("[data-path]")]) {
      if (el.dataset.path && el.dataset.path.startsWith(prefix + "[")) el.dataset.path = el.dataset.path.replace(/^([^[]+)\[\d+\]/, `$1[${i}]`);
    }
  });
  return leaf;
}
