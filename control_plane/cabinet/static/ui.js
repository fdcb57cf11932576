// Small DOM helpers: elements are built with h() (text always as text nodes, never innerHTML).

let uid = 0;
export const nextId = (prefix = "f") => `${prefix}-${++uid}`;

/** el.replaceChildren(...) leaving out null/false (so `cond ? node : null` can be passed). */
export function fill(el, ...nodes) {
  el.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false));
  return el;
}

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "value") { if ("defaultValue" in el && el.tagName !== "SELECT") el.defaultValue = v; el.value = v; }
    else if (k === "checked") el.checked = el.defaultChecked = !!v;  // defaults: form.reset() returns to them
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** A labelled control: field("Email", h("input", {...})). */
export function field(label, control, hint) {
  if (!control.id) control.id = nextId();
  const hintEl = hint ? h("small", { id: control.id + "-hint" }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control, hintEl);
}

/** The API error (message and each detail's path) in an alert region. */
export function errorBox(error) {
  const details = (error.details || []).map((d) => h("li", {}, d.path ? h("code", {}, d.path) : null, d.path ? " — " : null, d.message));
  return h("div", { class: "alert error", role: "alert", "data-code": error.code || "" },
    h("strong", {}, error.message || String(error)), details.length ? h("ul", {}, details) : null);
}

export function notice(text, kind = "ok") {
  return h("div", { class: `alert ${kind}`, role: "status" }, text);
}

/** Replaces a slot's content (e.g. a form's message area) and moves focus to an alert. */
export function show(slot, ...nodes) {
  fill(slot, ...nodes);
  const alert = slot.querySelector("[role=alert]");
  if (alert) { alert.tabIndex = -1; alert.focus(); }
}

/**
 * A form whose submit runs `action(values)`; the button is disabled while it runs and an ApiError
 * appears above the button, each detail also next to the control its path names. `action` may
 * return a node to show as the result.
 */
export function form(attrs, controls, submitLabel, action) {
  const message = h("div", { class: "message" });
  const button = h("button", { type: "submit" }, submitLabel);
  const el = h("form", { ...attrs, novalidate: false }, controls, message, button);
  el.addEventListener("submit", async (event) => {
    event.preventDefault();
    button.disabled = true;
    message.replaceChildren();
    clearErrors(el);
    try {
      const result = await action(Object.fromEntries(new FormData(el).entries()), el);
      if (result instanceof Node) show(message, result);
    } catch (e) {
      show(message, errorBox(e));
      placeErrors(el, e);
    } finally {
      button.disabled = false;
    }
  });
  return el;
}

/** Removes the messages placeErrors() put next to controls. */
export function clearErrors(scope) {
  for (const el of scope.querySelectorAll(".field-error")) el.remove();
  for (const el of scope.querySelectorAll("[aria-invalid]")) {
    el.removeAttribute("aria-invalid");
    const ids = (el.getAttribute("aria-describedby") || "").split(" ").filter((x) => x && !x.startsWith("err-"));
    if (ids.length) el.setAttribute("aria-describedby", ids.join(" ")); else el.removeAttribute("aria-describedby");
  }
}

/**
 * Each `details[].path` of an API error in words next to the control it concerns: the control
 * whose `data-path` (or `name`) is the longest prefix of the path (`consequence.pin[0].id` finds
 * `consequence.pin[0].id`, else `consequence.pin`). `strip` drops a prefix the request added
 * (`rule.` when the rule was sent inside another body). Answers how many were placed.
 */
export function placeErrors(scope, error, strip = "") {
  let placed = 0;
  const controls = [...scope.querySelectorAll("[data-path], [name]")];
  for (const detail of (error && error.details) || []) {
    let path = String(detail.path || "");
    if (strip && path.startsWith(strip)) path = path.slice(strip.length);
    if (!path) continue;
    let best = null, bestLength = -1;
    for (const control of controls) {
      const key = control.dataset.path || control.getAttribute("name");
      if (!key) continue;
      const fits = path === key || path.startsWith(key + ".") || path.startsWith(key + "[");
      if (fits && key.length > bestLength) { best = control; bestLength = key.length; }
    }
    if (!best) continue;
    const note = h("div", { class: "field-error", id: nextId("err") }, detail.message || "invalid");
    if (path !== (best.dataset.path || best.getAttribute("name"))) note.prepend(h("code", {}, path), " — ");
    best.setAttribute("aria-invalid", "true");
    best.setAttribute("aria-describedby", [best.getAttribute("aria-describedby"), note.id].filter(Boolean).join(" "));
    (best.closest(".field, td, .control") || best).after(note);
    placed++;
  }
  return placed;
}

/** A file the browser saves (export), made in the page: no second request, no server round trip. */
export function download(filename, text, type = "application/json") {
  const href = URL.createObjectURL(new Blob([text], { type }));
  const a = h("a", { href, download: filename, class: "offscreen" }, filename);
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(href), 10_000);
}

/** What a read-only member sees instead of a form. */
export function readOnly(what = "Changing these settings") {
  return h("p", { class: "muted read-only" }, `${what} needs an admin of the organization; you have read access.`);
}

/** A JSON textarea's value, or an error whose details name `path` (shown next to it). */
export function parseJson(text, path, { optional = true } = {}) {
  if (!text.trim()) {
    if (optional) return undefined;
    throw { message: "Fill in this field.", code: "VALIDATION_ERROR", details: [{ path, message: "required" }] };
  }
  try { return JSON.parse(text); } catch (e) {
    throw { message: `${path}: not valid JSON (${e.message}).`, code: "VALIDATION_ERROR", details: [{ path, message: "not valid JSON: " + e.message }] };
  }
}

/** A short delay before `fn` runs again (typing in a search box). */
export function debounce(fn, ms = 250) {
  let timer = null;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
}

export function copyButton(getText, label = "Copy") {
  const button = h("button", { type: "button", class: "secondary" }, label);
  button.addEventListener("click", async () => {
    const text = getText();
    try {
      await navigator.clipboard.writeText(text);
    } catch (e) {  // no clipboard permission: select the text for Ctrl+C instead
      const area = h("textarea", { "aria-hidden": "true", class: "offscreen" }, text);
      document.body.append(area); area.select(); document.execCommand("copy"); area.remove();
    }
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = label; }, 1500);
  });
  return button;
}

/** A data table; on a phone each row becomes a block whose cells carry their column's name (data-label). */
export function table(headers, rows, caption, empty) {
  for (const row of rows) {
    [...row.children].forEach((cell, i) => { if (headers[i]) cell.dataset.label = headers[i]; });
  }
  return h("div", { class: "table-wrap" }, h("table", { class: "stack" },
    caption ? h("caption", {}, caption) : null,
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: headers.length, class: "empty" }, empty || "Nothing yet.")))));
}

export const when = (iso) => (iso ? new Date(iso).toLocaleString() : "—");
export const percent = (x) => (x === null || x === undefined || Number.isNaN(x) ? "—" : `${(x * 100).toFixed(1)}%`);

export function select(name, options, value, attrs = {}) {
  return h("select", { name, ...attrs }, options.map((o) => {
    const [v, label] = Array.isArray(o) ? o : [o, o];
    return h("option", { value: v, selected: v === value }, label);
  }));
}

/** Highlight HTML from the API: keep text and <em>, drop everything else (parsed inert in a template). */
export function highlighted(htmlText) {
  const template = document.createElement("template");
  template.innerHTML = htmlText;
  const out = [];
  for (const node of template.content.childNodes) {
    if (node.nodeType === Node.TEXT_NODE) out.push(node.textContent);
    else if (node.nodeName === "EM") out.push(h("mark", {}, node.textContent));
    else out.push(node.textContent);
  }
  return out;
}
