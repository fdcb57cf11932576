// Daily series as a line chart drawn in the page with uPlot (vendored under vendor/, loaded on
// first use), plus the same numbers as a table for screen readers and keyboard users.
import { h } from "./ui.js";
import { onLeave } from "./state.js";

let loading = null;
function uPlotModule() {
  if (!loading) {
    const css = h("link", { rel: "stylesheet", href: "/cabinet/vendor/uPlot.min.css" });
    document.head.append(css);
    loading = import("./vendor/uPlot.esm.js").then((m) => m.default);
  }
  return loading;
}

const COLORS = ["#2450c8", "#b3261e", "#1f7a3a", "#8a5a00"];
const utcSeconds = (date) => Date.parse(date + "T00:00:00Z") / 1000;

/**
 * A chart of `series` ([{label, values}]) over `dates` (YYYY-MM-DD, UTC) into a new element, with
 * a "Show the numbers" table beside it. `title` names the chart for assistive technology.
 */
export async function lineChart(title, dates, series) {
  const uPlot = await uPlotModule();
  const target = h("div", { class: "chart" });
  const box = h("figure", { class: "chart-box" },
    h("figcaption", {}, title),
    h("div", { role: "img", "aria-label": `${title}: ${series.map((s) => `${s.label} ${s.values.reduce((a, b) => a + b, 0)} in total`).join(", ")}` }, target),
    h("details", {}, h("summary", {}, "Show the numbers"),
      h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": `${title} (table)` }, h("table", {},
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Day"), series.map((s) => h("th", { scope: "col" }, s.label)))),
        h("tbody", {}, dates.map((d, i) => h("tr", {}, h("th", { scope: "row" }, d), series.map((s) => h("td", {}, String(s.values[i]))))))))));
  const options = {
    width: 600, height: 260,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] } },
    axes: [{ stroke: "#1d2330", grid: { stroke: "#e6e9ef" } }, { stroke: "#1d2330", grid: { stroke: "#e6e9ef" } }],
    series: [{ label: "Day", value: (u, ts) => (ts === null ? "—" : new Date(ts * 1000).toISOString().slice(0, 10)) },
      ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 2, points: { show: dates.length <= 62 } }))],
    cursor: { drag: { x: false, y: false } },
  };
  const plot = new uPlot(options, [dates.map(utcSeconds), ...series.map((s) => s.values)], target);
  const fit = () => { const w = Math.max(260, box.clientWidth - 4); if (w && Math.abs(w - plot.width) > 2) plot.setSize({ width: w, height: 260 }); };
  const observer = new ResizeObserver(fit);
  observer.observe(box);
  onLeave(() => { observer.disconnect(); plot.destroy(); });
  return box;
}
