// Compare: several jobs on one problem, each one curve of the relative gap to the lowest
// objective any of them reached, against time (or iterations), as in the papers' figures.
// Multi-class jobs (one-vs-rest classes, one-vs-one pairs) are compared one part at a time,
// chosen in the "View" selector: each job's records of that class against the lowest
// objective of that class among the jobs (the server's down-sampling keeps each part's
// lowest and last records).  Without ?jobs=, pick finished jobs grouped by problem.
import { FINISHED, api, content, el, fmt, notice, seconds, shortId, start, statusBadge, table } from "./common.js";
import { makePlot, partOf, relativeGap, runTimes, seriesStyle } from "./plot.js";
import { race } from "./race.js";

const ids = (new URLSearchParams(location.search).get("jobs") || "").split(",").map((s) => s.trim()).filter(Boolean);
let xAxis = "time";
let plot = null;
let picked = "run";  // the part compared: "run" (every record) or a class's or pair's key

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
  const view = el("label", { id: "compare-view", hidden: true }, "View",
    el("select", { id: "compare-view-select",
      onchange: (e) => { picked = e.target.value; load(summary, box, true); } }));
  content(el("p", { class: "legend-note", id: "compare-note" }), el("div", { class: "toolbar" }, axis, view),
    el("p", { class: "plot-title", id: "compare-title" }, "Relative gap (f − f*) / |f*|, f* the lowest objective of these jobs (log scale)"),
    box, summary);
  await load(summary, box, true);
}

async function load(summary, box, rebuild) {
  const query = ids.map((id) => `job_id=${encodeURIComponent(id)}`).join("&");
  const logs = await api(`/logs?${query}&points=2000`);
  const labels = showParts(logs);
  const whole = picked === "run";
  const partRecords = logs.data.map((s) => (whole ? s.data : s.data.filter((r) => partOf(r).key === picked)));
  let best = whole ? logs.best_objective : null;
  for (const part of whole ? [] : partRecords) {
    for (const r of part) if (r.objective != null && (best == null || r.objective < best)) best = r.objective;
  }
  // a part's time is its own (from the class's start: one solver's classes need not take
  // the same time, nor start at the same moment of the job), its iterations the solver's
  const own = (r, key) => (r.extras && r.extras[key] != null ? r.extras[key] : null);
  const series = partRecords.map((part) => {
    const xs = xAxis === "time"
      ? (whole || part.some((r) => own(r, "subproblem_elapsed") == null) ? runTimes(part) : part.map((r) => own(r, "subproblem_elapsed")))
      : part.map((r, i) => (whole ? r.iteration : own(r, "solver_iteration") ?? i + 1));
    return [xs, part.map((r) => relativeGap(r.objective, best))];
  });
  const lowest = partRecords.map((part, i) => (whole ? logs.data[i].best_objective
    : part.reduce((m, r) => (r.objective != null && (m == null || r.objective < m) ? r.objective : m), null)));
  const note = document.getElementById("compare-note");
  note.textContent = `${logs.count} jobs${whole ? "" : `, ${labels.get(picked)}`}; f* = ${fmt(best, 12)}` +
    (whole ? "." : ", the lowest objective of this part among these jobs.") +
    (logs.same_problem ? " They solve the same problem." : " Warning: these jobs do not all solve the same problem, so their gaps do not compare.") +
    (whole && labels.size > 1 ? " Their logs have several parts (classes or pairs), each with its own optimum: pick one in View." : "");
  document.getElementById("compare-title").textContent = whole
    ? "Relative gap (f − f*) / |f*|, f* the lowest objective of these jobs (log scale)"
    : `Relative gap (f − f*) / |f*| of ${labels.get(picked)}, f* its lowest objective among these jobs (log scale)`;
  const data = series.length ? uPlot.join(series) : [[]];
  const names = logs.data.map((s) => `${s.job.solver} ${shortId(s.job.id)}`);
  if (rebuild || !plot) {
    box.replaceChildren();
    plot = makePlot(box, { xLabel: xAxis === "time" ? (whole ? "time (s)" : "time in this part (s)") : "iteration", yLabel: "relative gap",
      logY: true, data, height: 340, series: names.map((label) => ({ label })) });
  } else {
    plot.setData(data);
  }
  box.dataset.curves = String(partRecords.filter((part) => part.some((r) => relativeGap(r.objective, best) != null)).length);
  box.dataset.series = String(logs.data.length);
  box.dataset.view = picked;
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
    { label: whole ? "Lowest objective" : "Lowest objective (this part)", num: true, render: (s) => fmt(lowest[logs.data.indexOf(s)], 12) },
    { label: "Final gap", num: true, render: (s) => (lowest[logs.data.indexOf(s)] == null ? "–"
      : fmt(relativeGap(lowest[logs.data.indexOf(s)], best) ?? 0, 3)) },
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

// The parts (one-vs-rest classes, one-vs-one pairs) the jobs' records fall in, offered in the
// View selector after "the whole run"; returns key -> label (the whole run's included).
function showParts(logs) {
  const labels = new Map([["run", "the whole run"]]);
  for (const s of logs.data) {
    for (const r of s.data) {
      const part = partOf(r);
      if (part.kind === "run" && !labels.has(part.key)) labels.set(part.key, part.label);
    }
  }
  if (!labels.has(picked)) picked = "run";
  const view = document.getElementById("compare-view");
  const select = document.getElementById("compare-view-select");
  view.hidden = labels.size < 2;
  const keys = [...labels.keys()];
  if (select.options.length !== keys.length || [...select.options].some((o, i) => o.value !== keys[i])) {
    select.replaceChildren(...keys.map((key) => el("option", { value: key }, labels.get(key))));
  }
  select.value = picked;
  return labels;
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
