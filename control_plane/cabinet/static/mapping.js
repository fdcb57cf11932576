// The mapping editor: one row per field (name, type, flags), plus the id field.
import { h, nextId, select } from "./ui.js";

export const TYPES = ["text", "keyword", "integer", "float", "boolean", "date", "keyword[]", "geopoint", "vector"];
const VECTOR_KEYS = ["dimensions", "embed"];  // a vector field's own settings (kept as they are; dropped from another type)

/** What a vector field holds, read-only: "embeds name, categories" or "384 dimensions". */
export function vectorText(spec) {
  if (spec.embed && typeof spec.embed === "object") {
    return `embeds ${(spec.embed.from || []).join(", ")}` + (spec.embed.model ? ` (${spec.embed.model})` : "");
  }
  if (spec.dimensions !== undefined) return `${spec.dimensions} dimensions (shop-supplied)`;
  return "set dimensions or embed through the API";
}
const FLAGS = [
  ["searchable", "Searchable"], ["filterable", "Filterable"], ["facetable", "Facetable"],
  ["sortable", "Sortable"], ["retrievable", "Retrievable"], ["suggest", "Suggest"],
];

/** An editor for `{idField, fields, dynamic}`; `.value()` answers the mapping as the API takes it. */
export function mappingEditor(initial = { idField: "id", fields: {} }) {
  const idInput = h("input", { name: "idField", value: initial.idField || "id", required: true, id: nextId("idfield") });
  const dynamicInput = h("input", { type: "checkbox", name: "dynamic", checked: !!initial.dynamic, id: nextId("dynamic") });
  const body = h("tbody");
  const rows = [];

  function addRow(name = "", spec = { type: "text" }) {
    const extra = { ...spec };  // settings the editor doesn't show (analyzer) are kept as they were
    for (const [flag] of FLAGS) delete extra[flag];
    delete extra.type;
    const nameInput = h("input", { value: name, "aria-label": "Field name", required: true, class: "field-name" });
    const typeSelect = select("", TYPES, spec.type, { "aria-label": "Type", class: "field-type" });
    const flags = FLAGS.map(([flag, label]) => {
      const checked = flag === "retrievable" ? spec.retrievable !== false : !!spec[flag];
      return h("input", { type: "checkbox", checked, "aria-label": label, "data-flag": flag });
    });
    // a vector field: what it holds under its type; a profile's semantic setting searches it, no flag but retrievable
    const vectorNote = h("small", { class: "muted vector-note" });
    const showVector = () => {
      const vector = typeSelect.value === "vector";
      vectorNote.hidden = !vector;
      vectorNote.textContent = vector ? vectorText(extra) : "";
      for (const f of flags) if (f.dataset.flag !== "retrievable") f.disabled = vector;
    };
    typeSelect.addEventListener("change", showVector);
    showVector();
    const tr = h("tr", {}, h("td", {}, nameInput), h("td", {}, typeSelect, vectorNote), flags.map((f) => h("td", { class: "flag" }, f)),
      h("td", {}, h("button", { type: "button", class: "secondary", "aria-label": "Remove field", onclick: () => {
        tr.remove(); rows.splice(rows.indexOf(row), 1);
      } }, "✕")));
    nameInput.addEventListener("input", () => nameInput.setAttribute("aria-label", `Field name ${nameInput.value}`));
    flags.forEach((f) => nameInput.addEventListener("input", () => f.setAttribute("aria-label", `${f.dataset.flag} ${nameInput.value}`)));
    flags.forEach((f) => f.setAttribute("aria-label", `${f.dataset.flag} ${name}`.trim()));
    const row = { tr, nameInput, typeSelect, flags, extra };
    rows.push(row);
    body.append(tr);
    return nameInput;
  }

  for (const [name, spec] of Object.entries(initial.fields || {})) addRow(name, spec);
  const el = h("div", { class: "mapping-editor" },
    h("div", { class: "field" }, h("label", { for: idInput.id }, "Id field"), idInput,
      h("small", {}, "Each document's unique id: uploading the same id again replaces that document.")),
    h("div", { class: "table-wrap" }, h("table", {}, h("caption", {}, "Fields"),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Field"), h("th", { scope: "col" }, "Type"),
        FLAGS.map(([, label]) => h("th", { scope: "col" }, label)), h("th", {}, h("span", { class: "sr-only" }, "Remove")))), body)),
    h("button", { type: "button", class: "secondary", onclick: () => addRow().focus() }, "Add field"),
    h("div", { class: "field" }, h("label", { for: dynamicInput.id }, dynamicInput, " Infer new fields from uploaded documents"),
      h("small", {}, "A field a document brings that is not listed here is added: text searchable, numbers filterable and sortable, lists of words facetable. The upload's task says which.")));

  function value() {
    const fields = {};
    for (const row of rows) {
      const spec = { type: row.typeSelect.value, ...row.extra };
      const vector = spec.type === "vector";
      if (!vector) for (const k of VECTOR_KEYS) delete spec[k];
      for (const f of row.flags) {
        if (f.dataset.flag === "retrievable") { if (!f.checked) spec.retrievable = false; } else if (f.checked && !vector) spec[f.dataset.flag] = true;
      }
      fields[row.nameInput.value.trim()] = spec;
    }
    return dynamicInput.checked ? { idField: idInput.value.trim(), fields, dynamic: true } : { idField: idInput.value.trim(), fields };
  }
  return { el, value, addRow, setDynamic: (on) => { dynamicInput.checked = on; } };
}
