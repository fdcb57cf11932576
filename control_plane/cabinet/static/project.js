// The heading and sub-navigation of a project's pages.
import { api } from "./api.js";
import { h } from "./ui.js";
import { state } from "./state.js";

export async function projectHeader(projectId, current) {
  const project = await api("GET", `/v1/projects/${encodeURIComponent(projectId)}`);
  state.orgId = project.orgId;
  const select = document.getElementById("org-switch");
  if (select) select.value = project.orgId;
  const link = (href, label, key) => h("a", { href, "aria-current": key === current ? "page" : null }, label);
  return {
    project,
    nav: h("nav", { class: "subnav", "aria-label": "Project" },
      h("a", { href: `#/org/${project.orgId}` }, "← Projects"),
      h("strong", {}, project.name),
      link(`#/p/${project.id}`, "Indices", "indices"),
      link(`#/p/${project.id}/keys`, "API keys", "keys")),
  };
}
