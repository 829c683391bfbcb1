// Compare: several jobs on one problem, each one curve of the relative gap to the lowest
// objective any of them reached, against time (or iterations), as in the papers' figures.
// Without ?jobs=, pick finished jobs grouped by problem.
import { FINISHED, api, content, el, fmt, notice, seconds, shortId, start, statusBadge, table } from "./common.js";
import { makePlot, relativeGap, runTimes, seriesStyle } from "./plot.js";
import { race } from "./race.js";

const ids = (new URLSearchParams(location.search).get("jobs") || "").split(",").map((s) => s.trim()).filter(Boolean);
let xAxis = "time";
let plot = null;

async function render() {
  if (!ids.length) return picker();
  const refused = sessionStorage.getItem("svmsvc-race-refused");
  if (refused) {
    sessionStorage.removeItem("svmsvc-race-refused");
    notice("Not raced: " + JSON.parse(refused).map((r) => `${r.solver} (${r.message})`).join("; "));
  }
  const summary = el("div", { id: "compare-summary" });
  const box = el("div", { class: "plot", id: "plot-compare" });
  const axis = el("fieldset", { class: "toolbar" }, el("legend", {}, "Against"),
    ["time", "iterations"].map((value) => el("label", { style: "flex-direction:row;gap:.3rem" },
      el("input", { type: "radio", name: "x", value, checked: value === xAxis,
        onchange: () => { xAxis = value; load(summary, box, true); } }), value === "time" ? "time (s)" : "iterations")));
  content(el("p", { class: "legend-note", id: "compare-note" }), axis,
    el("p", { class: "plot-title" }, "Relative gap (f − f*) / |f*|, f* the lowest objective of these jobs (log scale)"),
    box, summary);
  await load(summary, box, true);
}

async function load(summary, box, rebuild) {
  const query = ids.map((id) => `job_id=${encodeURIComponent(id)}`).join("&");
  const logs = await api(`/logs?${query}&points=800`);
  const best = logs.best_objective;
  const series = logs.data.map((s) => {
    const xs = xAxis === "time" ? runTimes(s.data) : s.data.map((r) => r.iteration);
    return [xs, s.data.map((r) => relativeGap(r.objective, best))];
  });
  const note = document.getElementById("compare-note");
  note.textContent = `${logs.count} jobs; f* = ${fmt(best, 12)}.` +
    (logs.same_problem ? " They solve the same problem." : " Warning: these jobs do not all solve the same problem, so their gaps do not compare.");
  const data = series.length ? uPlot.join(series) : [[]];
  const labels = logs.data.map((s) => `${s.job.solver} ${shortId(s.job.id)}`);
  if (rebuild || !plot) {
    box.replaceChildren();
    plot = makePlot(box, { xLabel: xAxis === "time" ? "time (s)" : "iteration", yLabel: "relative gap",
      logY: true, data, height: 340, series: labels.map((label) => ({ label })) });
  } else {
    plot.setData(data);
  }
  box.dataset.curves = String(logs.data.filter((s) => s.data.some((r) => relativeGap(r.objective, best) != null)).length);
  box.dataset.series = String(logs.data.length);
  summary.replaceChildren(el("h2", {}, "Jobs"), table([
    { label: "Curve", render: (s) => key(logs.data.indexOf(s)) },
    { label: "Job", render: (s) => el("a", { href: `/ui/jobs/${s.job.id}`, class: "mono" }, shortId(s.job.id)) },
    { label: "Solver", render: (s) => s.job.solver },
    { label: "Loss", render: (s) => lossOf(s.job) },
    { label: "Bias", render: (s) => (s.job.params && s.job.params.bias) || "–" },
    { label: "C", num: true, render: (s) => fmt(s.job.params && s.job.params.C) },
    { label: "tol", num: true, render: (s) => tolOf(s.job) },
    { label: "Status", render: (s) => statusBadge(s.job.status) },
    { label: "Iterations", num: true, render: (s) => fmt(s.count) },
    { label: "Time (s)", num: true, render: (s) => (s.data.length ? seconds(runTimes(s.data).pop()) : "–") },
    { label: "Lowest objective", num: true, render: (s) => fmt(s.best_objective, 12) },
    { label: "Final gap", num: true, render: (s) => fmt(relativeGap(s.best_objective, best) ?? 0, 3) },
  ], logs.data));
  const first = logs.data[0] && logs.data[0].job;
  if (first && first.problem_key && logs.same_problem) {
    summary.append(el("div", { class: "actions" }, el("button", { type: "button", id: "race", onclick: async (e) => {
      e.target.disabled = true;
      const { queued } = await race(first, []);
      location.href = `/ui/compare?jobs=${[...ids, ...queued.map((j) => j.id)].join(",")}`;
    } }, "Race every solver again")));
  }
  if (logs.data.some((s) => !FINISHED.has(s.job.status))) setTimeout(() => load(summary, box, false).catch(() => {}), 1500);
}

function lossOf(job) {  // lp names its exponent; lp at p = 1 or 2 is posed as hinge / squared_hinge
  const p = job.params || {};
  return p.loss === "lp" ? `lp (p = ${fmt(p.p)})` : (p.loss || "–");
}

function tolOf(job) {  // the certified-gap tolerance; a solver without one says which rule stopped it
  const p = job.params || {};
  if (typeof p.tol === "number") return fmt(p.tol, 2);
  if (p.tol === null && "tol" in p) return "exact end";
  return p.kkt_tol != null ? `kkt ${fmt(p.kkt_tol, 2)}` : (p.cg_tol != null ? `cg ${fmt(p.cg_tol, 2)}` : "own rule");
}

function key(i) {  // a swatch drawn like the curve: dash and mark, not colour alone
  const style = seriesStyle(i);
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("width", "48"); svg.setAttribute("height", "12"); svg.setAttribute("aria-hidden", "true");
  const line = document.createElementNS(svg.namespaceURI, "line");
  Object.entries({ x1: 0, y1: 6, x2: 48, y2: 6, stroke: style.stroke, "stroke-width": 2, "stroke-dasharray": style.dash.join(" ") })
    .forEach(([k, v]) => line.setAttribute(k, v));
  svg.append(line);
  return el("span", {}, svg, ` ${i + 1}`);
}

// A problem in words: its dataset by name (not its UUID) and the fields that pose it.
function describeProblem(job, names) {
  const p = job.problem || {};
  const dataset = names.get(p.dataset) || (p.dataset ? shortId(p.dataset) : "?");
  const parts = Object.entries(p).filter(([k]) => k !== "dataset").map(([k, v]) => `${k} ${v}`);
  return `${dataset}: ${parts.join(", ")}`;
}

async function picker() {
  const [page, datasets] = await Promise.all([api("/jobs?status=succeeded&limit=500"),
    api("/datasets?limit=1000")]);
  const names = new Map(datasets.data.map((d) => [d.id, d.name]));
  const groups = new Map();
  for (const job of page.data) {
    if (!job.problem_key) continue;
    if (!groups.has(job.problem_key)) groups.set(job.problem_key, []);
    groups.get(job.problem_key).push(job);
  }
  if (!groups.size) {
    content(el("p", { class: "muted" }, "No finished job to compare yet. Train one, then race the solvers from its page."));
    return;
  }
  content(el("p", {}, "Pick finished jobs on one problem (same dataset, loss, bias, C) and compare them."),
    [...groups.entries()].map(([problem, jobs]) => {
      const form = el("form", { class: "group" }, el("h2", {}, `${jobs.length} job${jobs.length > 1 ? "s" : ""}`),
        el("p", { class: "problem", title: problem }, describeProblem(jobs[0], names)),
        table([
          { label: "Pick", render: (j) => el("input", { type: "checkbox", name: "pick", value: j.id, checked: true, "aria-label": `pick job ${shortId(j.id)}` }) },
          { label: "Job", render: (j) => el("a", { href: `/ui/jobs/${j.id}`, class: "mono" }, shortId(j.id)) },
          { label: "Solver", render: (j) => j.solver },
          { label: "Objective", num: true, render: (j) => fmt(j.progress && j.progress.objective, 10) },
        ], jobs),
        el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Compare")));
      form.addEventListener("submit", (e) => {
        e.preventDefault();
        const picked = [...form.querySelectorAll("input[name=pick]:checked")].map((c) => c.value);
        location.href = `/ui/compare?jobs=${picked.join(",")}`;
      });
      return form;
    }));
}

start(render);
