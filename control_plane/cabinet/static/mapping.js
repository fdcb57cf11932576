// The mapping editor: one row per field (name, type, flags), plus the id field.
import { h, nextId, select } from "./ui.js";

export const TYPES = ["text", "keyword", "integer", "float", "boolean", "date", "keyword[]", "geopoint"];
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
    const tr = h("tr", {}, h("td", {}, nameInput), h("td", {}, typeSelect), flags.map((f) => h("td", { class: "flag" }, f)),
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
      for (const f of row.flags) {
        if (f.dataset.flag === "retrievable") { if (!f.checked) spec.retrievable = false; } else if (f.checked) spec[f.dataset.flag] = true;
      }
      fields[row.nameInput.value.trim()] = spec;
    }
    return dynamicInput.checked ? { idField: idInput.value.trim(), fields, dynamic: true } : { idField: idInput.value.trim(), fields };
  }
  return { el, value, addRow, setDynamic: (on) => { dynamicInput.checked = on; } };
}
