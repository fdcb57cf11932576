// Tasks of an index: the table (live while a page polls it) and waiting for one task with its progress.
import { api } from "./api.js";
import { h, fill, table, when } from "./ui.js";
import { onLeave } from "./state.js";

export const DONE = new Set(["succeeded", "failed", "canceled"]);

function progressOf(t) {
  const d = t.details || {};
  if (d.indexed !== undefined) return `${d.indexed} indexed`;
  if (d.deleted !== undefined) return `${d.deleted} deleted`;
  if (d.received !== undefined) return `${d.received} received`;
  if (d.progress !== undefined && !DONE.has(t.status)) return `${Math.round(d.progress * 100)}%`;
  return "";
}

export function renderTasks(slot, items, caption = "Latest tasks of this index (updates live)") {
  fill(slot, table(["Task", "Type", "Status", "Documents", "Created", "Finished"], items.map((t) =>
    h("tr", { "data-status": t.status }, h("td", {}, h("code", {}, t.taskId)), h("td", {}, t.type),
      h("td", {}, h("span", { class: `badge ${t.status}` }, t.status), t.error ? h("div", { class: "error-text" }, `${t.error.code}: ${t.error.message}`) : null),
      h("td", {}, progressOf(t)), h("td", {}, when(t.createdAt)), h("td", {}, when(t.finishedAt)))), caption, "No task yet."));
}

/**
 * Polls the index's latest tasks into `slot` every second while the page is open; `onChange` runs
 * when the number of unfinished tasks changes (a task finished: counts and documents changed).
 */
export async function liveTasks(slot, ctx, { limit = 10, onChange, caption } = {}) {
  let lastActive = null;
  async function poll() {
    try {
      const page = await api("GET", `/v1/projects/${ctx.projectId}/tasks?indexId=${ctx.indexId}&limit=${limit}`);
      if (!slot.isConnected && lastActive !== null) return;
      renderTasks(slot, page.items, caption);
      const active = page.items.filter((t) => !DONE.has(t.status)).length;
      if (lastActive !== null && active !== lastActive && onChange) onChange();
      lastActive = active;
    } catch (e) { /* the next poll tries again */ }
  }
  await poll();
  const timer = setInterval(poll, 1000);
  onLeave(() => clearInterval(timer));
  return poll;
}

/** Waits for a task to finish, calling `onUpdate(task)` on each poll (progress bars); answers the task. */
export async function waitTask(projectId, taskId, onUpdate, interval = 500) {
  for (;;) {
    const task = await api("GET", `/v1/projects/${projectId}/tasks/${taskId}`);
    if (onUpdate) onUpdate(task);
    if (DONE.has(task.status)) return task;
    await new Promise((r) => setTimeout(r, interval));
  }
}

/** A <progress> and a status line following one task. */
export function taskProgress(label) {
  const bar = h("progress", { max: 1, value: 0, "aria-label": label });
  const line = h("span", { role: "status" });
  const el = h("div", { class: "progress" }, bar, line);
  return {
    el,
    update(task) {
      const p = (task.details || {}).progress;
      if (DONE.has(task.status)) bar.value = 1; else if (p !== undefined) bar.value = p; else bar.removeAttribute("value");
      line.textContent = `Task ${task.taskId}: ${task.status}` + (p !== undefined && !DONE.has(task.status) ? ` (${Math.round(p * 100)}%)` : "")
        + (task.error ? ` — ${task.error.message}` : "");
    },
  };
}
