// One job: parameters, status and message, the convergence plot updating live from the SSE
// stream (relative gap on a log scale with the solver's own optimality measure, and the
// objective, against time or iterations), cancel, race; for a tuning job, once it has run,
// the cross-validation curve (mean fold score against C, one curve per gamma, +- one
// standard deviation) and its table.
import { FINISHED, api, content, el, fmt, jobElapsed, notice, seconds, setTitle, shortId, showError, start, statusBadge, streamLog, table, when } from "./common.js";
import { makePlot, relativeGap, runTimes } from "./plot.js";
import { race } from "./race.js";

const jobId = location.pathname.split("/").filter(Boolean).pop();
const records = [];
let job = null;
let reference = null;  // the lowest objective known for the problem (other finished jobs too)
let plots = null;
let xAxis = "time";
let pending = false;

async function render() {
  job = await api(`/jobs/${jobId}`);
  setTitle(`Job ${shortId(job.id)} · ${job.solver}`);
  const dataset = await api(`/datasets/${job.dataset_id}`).catch(() => null);
  const facts = el("dl", { class: "facts", id: "job-facts" });
  const params = el("dl", { class: "facts", id: "job-params" },
    Object.entries(job.params).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v == null ? "none" : String(v))]));
  const actions = el("div", { class: "actions" });
  const axis = el("fieldset", { class: "toolbar", id: "x-axis" }, el("legend", {}, "Against"),
    ["time", "iterations"].map((value) => el("label", { style: "flex-direction:row;gap:.3rem" },
      el("input", { type: "radio", name: "x", value, checked: value === xAxis,
        onchange: () => { xAxis = value; redraw(true); } }), value === "time" ? "time (s)" : "iterations")));
  const gapBox = el("div", { class: "plot", id: "plot-gap" });
  const objBox = el("div", { class: "plot", id: "plot-objective" });
  facts.classList.add("wide");
  content(
    el("section", {}, facts, actions),
    el("h2", { id: "convergence" }, "Convergence"),
    el("p", { class: "legend-note", id: "plot-note" }),
    axis,
    el("div", { class: "columns" },
      el("div", {}, el("p", { class: "plot-title" }, "Relative gap (f − f*) / |f*| and the solver's optimality measure (log scale)"),
        gapBox),
      el("div", {}, el("p", { class: "plot-title" }, "Primal objective f"), objBox)),
    el("section", { id: "cross-validation" }),
    el("h2", {}, "Parameters"), params);
  showFacts(facts, actions, dataset);
  await findReference();
  if (FINISHED.has(job.status)) {
    const page = await api(`/jobs/${jobId}/log?points=2000`);
    records.push(...page.data);
    redraw(true);
  } else {
    redraw(true);
    follow(facts, actions, dataset);
  }
}

async function findReference() {
  reference = null;
  if (!job.problem_key) return;
  const others = await api(`/jobs?problem_key=${encodeURIComponent(job.problem_key)}&status=succeeded&limit=100`);
  for (const other of others.data) {
    const f = other.progress && other.progress.objective;
    if (f != null && (reference == null || f < reference)) reference = f;
  }
}

async function follow(facts, actions, dataset) {
  const after = records.length ? records[records.length - 1].iteration : 0;
  try {
    await streamLog(jobId, after, (type, data) => {
      if (type === "record") {
        records.push(data);
        schedule();
      } else {
        job = data;
        showFacts(facts, actions, dataset);
      }
    });
    schedule();
  } catch (error) {
    showError(error);
  }
}

function schedule() {  // redraw at most every 200 ms while records stream in
  if (pending) return;
  pending = true;
  setTimeout(() => { pending = false; redraw(false); }, 200);
}

function showFacts(facts, actions, dataset) {
  const rows = [
    ["Status", statusBadge(job.status)],
    ["Solver status", job.solver_status || "–"],
    ["Message", job.message || "–"],
    ["Error", job.error ? el("span", { class: "error" }, job.error) : "–"],
    ["Dataset", dataset ? `${dataset.name} (${dataset.n_samples} × ${dataset.n_features})` : job.dataset_id],
    ["Iterations", job.progress ? fmt(job.progress.iteration) : "–"],
    ["Objective", job.progress ? fmt(job.progress.objective, 10) : "–"],
    ["Optimality", job.progress ? fmt(job.progress.optimality) : "–"],
    ["Elapsed", seconds(jobElapsed(job))],
    ["Created", when(job.created_at)],
    ["Problem", job.problem_key ? el("code", {}, job.problem_key) : "– (tuning job)"],
  ];
  facts.replaceChildren(...rows.flatMap(([k, v]) => [el("dt", {}, k), el("dd", { "data-fact": k.toLowerCase() }, v)]));
  const buttons = [];
  if (!FINISHED.has(job.status)) {
    buttons.push(el("button", { type: "button", class: "danger", id: "cancel", disabled: job.cancel_requested,
      onclick: async (e) => {
        e.target.disabled = true;
        try { job = await api(`/jobs/${jobId}/cancel`, { method: "POST" }); notice("Cancel requested.", true); showFacts(facts, actions, dataset); }
        catch (error) { showError(error); e.target.disabled = false; }
      } }, job.cancel_requested ? "Cancel requested" : "Cancel job"));
  }
  if (job.model_id) buttons.push(el("a", { class: "button", href: `/ui/models/${job.model_id}` }, "Model"));
  if (job.problem_key) {
    buttons.push(el("a", { class: "button", href: `/ui/jobs?problem_key=${encodeURIComponent(job.problem_key)}` }, "Jobs on this problem"));
    buttons.push(el("button", { type: "button", id: "race", onclick: async (e) => {
      e.target.disabled = true;
      try {
        const { queued, refused } = await race(job);
        const ids = [job.id, ...queued.map((j) => j.id)];
        if (refused.length) sessionStorage.setItem("svmsvc-race-refused", JSON.stringify(refused));
        location.href = `/ui/compare?jobs=${ids.join(",")}`;
      } catch (error) { showError(error); e.target.disabled = false; }
    } }, "Race every solver on this problem"));
  }
  actions.replaceChildren(...buttons);
  showCrossValidation();
}

// A tuning job's table (job.cross_validation, once it ran): the curve of the mean fold score
// against C (log scale), one per gamma for a kernel grid, with mean +- std dashed, and the
// rows with the best point marked.
let cvShown = null;
function showCrossValidation() {
  const section = document.getElementById("cross-validation");
  const cv = job.cross_validation;
  if (!section || !cv || cvShown === cv) return;
  cvShown = cv;
  const rankError = cv.metric === "mean_absolute_rank_error";
  const label = rankError ? "mean absolute rank error" : `mean ${cv.metric.replaceAll("_", " ")}`;
  const Cs = [...new Set(cv.table.map((r) => r.C))].sort((a, b) => a - b);
  const gammas = [...new Set(cv.table.map((r) => r.gamma))];
  const series = [];
  const data = [Cs];
  for (const gamma of gammas) {
    const rows = Cs.map((C) => cv.table.find((r) => r.C === C && r.gamma === gamma));
    const name = gamma == null ? "" : ` (gamma ${fmt(gamma)})`;
    data.push(rows.map((r) => (r ? r.mean : null)));
    series.push({ label: label + name });
    if (gammas.length === 1) {
      data.push(rows.map((r) => (r ? r.mean - r.std : null)), rows.map((r) => (r ? r.mean + r.std : null)));
      series.push({ label: "− 1 std", width: 1, dash: [4, 4] }, { label: "+ 1 std", width: 1, dash: [4, 4] });
    }
  }
  const best = (r) => r.C === cv.best_C && r.gamma === cv.best_gamma;
  const columns = [
    { label: "", render: (r) => (best(r) ? el("strong", {}, "best") : "") },
    { label: "C", num: true, render: (r) => fmt(r.C) },
    ...(gammas.some((g) => g != null) ? [{ label: "gamma", num: true, render: (r) => fmt(r.gamma) }] : []),
    { label: rankError ? "mean rank error" : label, num: true, render: (r) => fmt(r.mean) },
    { label: "std", num: true, render: (r) => fmt(r.std) },
    { label: "mean objective", num: true, render: (r) => fmt(r.objective, 8) },
    { label: "seconds", num: true, render: (r) => fmt(r.seconds) },
  ];
  const box = el("div", { class: "plot", id: "plot-cv" });
  const bestText = cv.best_C == null ? "no best point (the search stopped before a full table)"
    : `best C = ${fmt(cv.best_C)}${cv.best_gamma == null ? "" : `, gamma = ${fmt(cv.best_gamma)}`}`;
  section.replaceChildren(
    el("h2", {}, "Cross-validation"),
    el("p", { class: "legend-note", id: "cv-note" },
      `${cv.folds} folds scored by ${rankError ? "the mean absolute rank error (lowest is best)" : `${cv.metric} (highest is best)`}, ${bestText}; ${cv.warm_start ? "warm-started C paths" : "every point solved cold"}` +
      `${cv.fit_gap == null ? "" : `, each fit to a certified gap of ${fmt(cv.fit_gap)}`}.` +
      `${cv.status === "stopped" ? ` ${cv.message}` : ""}`),
    box,
    el("div", { id: "cv-table" }, table(columns, cv.table)));
  if (Cs.length) makePlot(box, { xLabel: "C", yLabel: label, logX: true, data, series });
  box.dataset.points = String(Cs.length);
}

function redraw(rebuild) {
  const xs = xAxis === "time" ? runTimes(records) : records.map((r) => r.iteration);
  let best = reference;
  for (const r of records) if (r.objective != null && (best == null || r.objective < best)) best = r.objective;
  const gaps = records.map((r) => relativeGap(r.objective, best));
  const optimality = records.map((r) => (r.optimality != null && r.optimality > 0 ? r.optimality : null));
  const objective = records.map((r) => r.objective);
  document.getElementById("plot-note").textContent = records.length
    ? `${records.length} records${FINISHED.has(job.status) ? "" : " so far (live)"}; f* = ${fmt(best, 12)}, the lowest objective ${reference != null && reference <= best ? "of the finished jobs on this problem" : "of this job"}.`
    : "No record yet.";
  const xLabel = xAxis === "time" ? "time (s)" : "iteration";
  const gapData = [xs, gaps, optimality];
  const objData = [xs, objective];
  if (rebuild || !plots) {
    const gapBox = document.getElementById("plot-gap");
    const objBox = document.getElementById("plot-objective");
    gapBox.replaceChildren();
    objBox.replaceChildren();
    plots = {
      gap: makePlot(gapBox, { xLabel, yLabel: "relative gap / optimality", logY: true, data: gapData,
        series: [{ label: "relative gap" }, { label: "optimality (solver's measure)" }] }),
      objective: makePlot(objBox, { xLabel, yLabel: "objective", data: objData, series: [{ label: "objective" }] }),
    };
  } else {
    plots.gap.setData(gapData);
    plots.objective.setData(objData);
  }
  document.body.dataset.records = String(records.length);
}

start(render);
