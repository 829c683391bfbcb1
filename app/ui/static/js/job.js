// One job: parameters, status and message, the convergence plot updating live from the SSE
// stream (relative gap on a log scale with the solver's own optimality measure, and the
// objective, against time or iterations), cancel, race; for a tuning job, once it has run,
// the cross-validation curve (mean fold score against C, one curve per gamma, +- one
// standard deviation) and its table.
//
// A job whose log has parts is plotted one part at a time, chosen in the "View" selector
// (default: the part of the latest record, followed live until another is picked): a
// one-vs-rest job's classes ("class 3 of 26"), a one-vs-one job's pairs, a tuning job's grid
// points (C, gamma: the fold fits' scores and training objectives against the fold) and its
// refit (a convergence, per class for several labels).
//
// A batch prediction job (kind "predict") shows its rows done of the total as they stream in,
// and once it has succeeded a button that downloads its result.
import { FINISHED, api, bytes, content, download, datasetLine, el, fmt, jobElapsed, notice, seconds, setTitle, shortId, showError, start, statusBadge, streamLog, table, tagList, when } from "./common.js";
import { makePlot, partOf, relativeGap, runTimes } from "./plot.js";
import { race } from "./race.js";

const jobId = location.pathname.split("/").filter(Boolean).pop();
const records = [];
let job = null;
let reference = null;  // the lowest objective known for the problem (other finished jobs too)
let plots = null;
let xAxis = "time";
let pending = false;
let picked = null;  // the view chosen in the selector (null: follow the latest record's part)
let shownKind = null;  // the kind of plots drawn ("run" or "grid"), rebuilt when it changes

async function render() {
  job = await api(`/jobs/${jobId}`);
  setTitle(`Job ${shortId(job.id)} · ${job.solver}`);
  const dataset = await api(`/datasets/${job.dataset_id}`).catch(() => null);
  const facts = el("dl", { class: "facts", id: "job-facts" });
  const params = el("dl", { class: "facts", id: "job-params" },
    Object.entries(job.shown_params || job.params).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v == null ? "none" : String(v))]));
  const actions = el("div", { class: "actions" });
  const axis = el("fieldset", { class: "toolbar", id: "x-axis" }, el("legend", {}, "Against"),
    ["time", "iterations"].map((value) => el("label", { style: "flex-direction:row;gap:.3rem" },
      el("input", { type: "radio", name: "x", value, checked: value === xAxis,
        onchange: () => { xAxis = value; redraw(true); } }), value === "time" ? "time (s)" : "iterations")));
  const view = el("label", { id: "view", hidden: true }, "View",
    el("select", { id: "view-select", onchange: (e) => { picked = e.target.value; redraw(true); } }));
  const gapBox = el("div", { class: "plot", id: "plot-gap" });
  const objBox = el("div", { class: "plot", id: "plot-objective" });
  facts.classList.add("wide");
  content(
    el("section", {}, facts, actions),
    el("h2", { id: "convergence" }, "Convergence"),
    el("p", { class: "legend-note", id: "plot-note" }),
    el("p", { class: "legend-note", id: "communication", hidden: true }),
    el("div", { class: "toolbar" }, view, axis),
    el("div", { class: "columns" },
      el("div", {}, el("p", { class: "plot-title", id: "plot-gap-title" }), gapBox),
      el("div", {}, el("p", { class: "plot-title", id: "plot-objective-title" }), objBox)),
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
        // the stream sends the job on a change of state only: its progress follows the records
        job.progress = { iteration: data.iteration, elapsed: data.elapsed, objective: data.objective,
          optimality: data.optimality, stage: data.stage };
        if (data.extras && data.extras.rows_done != null) {  // a prediction job's chunk
          job.rows_done = data.extras.rows_done;
          job.rows_total = data.extras.rows_total;
        }
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
  setTimeout(() => { pending = false; showProgress(); redraw(false); }, 200);
}

function showProgress() {  // the facts a record changes, in place (the buttons stay)
  const p = job.progress;
  const set = (name, text) => {
    const dd = document.querySelector(`[data-fact=${name}]`);
    if (dd) dd.textContent = text;
  };
  if (!p) return;
  set("rows", rowsText());
  set("iterations", fmt(p.iteration));
  set("objective", fmt(p.objective, 10));
  set("optimality", fmt(p.optimality));
  set("stage", p.stage || "–");
}

function rowsText() {  // a prediction job's progress
  if (job.rows_done == null) return "–";
  const total = job.rows_total == null ? "?" : fmt(job.rows_total);
  return `${fmt(job.rows_done)} of ${total}`;
}

function showFacts(facts, actions, dataset) {
  const rows = [
    ["Status", statusBadge(job.status)],
    ["Solver status", job.solver_status || "–"],
    ["Message", job.message || "–"],
    ["Error", job.error ? el("span", { class: "error" }, job.error) : "–"],
    ["Dataset", dataset ? datasetLine(dataset) : job.dataset_id],
    ...(job.kind === "predict" ? [["Rows", rowsText()]] : []),
    ["Iterations", job.progress ? fmt(job.progress.iteration) : "–"],
    ["Objective", job.progress ? fmt(job.progress.objective, 10) : "–"],
    ["Optimality", job.progress ? fmt(job.progress.optimality) : "–"],
    ["Stage", (job.progress && job.progress.stage) || "–"],
    ["Elapsed", seconds(jobElapsed(job))],
    ["Created", when(job.created_at)],
    ["Problem", job.problem_key ? el("code", {}, job.problem_key) : "– (tuning job)"],
    ["Tags", tagList(job.tags)],
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
  if (job.result) {
    const extension = job.result.format === "parquet" ? "parquet" : "csv";
    buttons.push(el("a", { class: "button", id: "download-predictions", href: job.result.download,
      onclick: (e) => {
        e.preventDefault();  // the key goes in a header, which a plain link cannot send
        download(`/jobs/${job.id}/predictions`, `predictions-${job.id}.${extension}`).catch(showError);
      } }, `Download predictions (.${extension})`));
  }
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
// against C (log scale), one per setting of the other axes (gamma of a kernel grid, a
// regression's epsilon, nu), with mean +- std dashed, and the rows with the best point marked.
const AXES = ["gamma", "epsilon", "nu"];
let cvShown = null;
function showCrossValidation() {
  const section = document.getElementById("cross-validation");
  const cv = job.cross_validation;
  if (!section || !cv || cvShown === cv) return;
  cvShown = cv;
  const rankError = cv.metric === "mean_absolute_rank_error";
  const lowest = rankError || cv.metric === "mean_squared_error";
  const label = rankError ? "mean absolute rank error"
    : `${cv.metric.startsWith("mean_") ? "" : "mean "}${cv.metric.replaceAll("_", " ")}`;
  const Cs = [...new Set(cv.table.map((r) => r.C))].sort((a, b) => a - b);
  const axes = AXES.filter((a) => cv.table.some((r) => r[a] != null));
  const settingOf = (r) => axes.map((a) => r[a]).join(",");
  const settings = [...new Map(cv.table.map((r) => [settingOf(r), r])).values()];
  const series = [];
  const data = [Cs];
  for (const setting of settings) {
    const rows = Cs.map((C) => cv.table.find((r) => r.C === C && settingOf(r) === settingOf(setting)));
    const name = axes.length ? ` (${axes.map((a) => `${a} ${fmt(setting[a])}`).join(", ")})` : "";
    data.push(rows.map((r) => (r ? r.mean : null)));
    series.push({ label: label + name });
    if (settings.length === 1) {
      data.push(rows.map((r) => (r ? r.mean - r.std : null)), rows.map((r) => (r ? r.mean + r.std : null)));
      series.push({ label: "− 1 std", width: 1, dash: [4, 4] }, { label: "+ 1 std", width: 1, dash: [4, 4] });
    }
  }
  const best = (r) => r.C === cv.best_C && axes.every((a) => r[a] === cv[`best_${a}`]);
  const columns = [
    { label: "", render: (r) => (best(r) ? el("strong", {}, "best") : "") },
    { label: "C", num: true, render: (r) => fmt(r.C) },
    ...axes.map((a) => ({ label: a, num: true, render: (r) => fmt(r[a]) })),
    { label: rankError ? "mean rank error" : label, num: true, render: (r) => fmt(r.mean) },
    { label: "std", num: true, render: (r) => fmt(r.std) },
    { label: "mean objective", num: true, render: (r) => fmt(r.objective, 8) },
    { label: "seconds", num: true, render: (r) => fmt(r.seconds) },
  ];
  const box = el("div", { class: "plot", id: "plot-cv" });
  const bestText = cv.best_C == null ? "no best point (the search stopped before a full table)"
    : `best C = ${fmt(cv.best_C)}${axes.map((a) => `, ${a} = ${fmt(cv[`best_${a}`])}`).join("")}`;
  section.replaceChildren(
    el("h2", {}, "Cross-validation"),
    el("p", { class: "legend-note", id: "cv-note" },
      `${cv.folds} folds scored by ${rankError ? "the mean absolute rank error (lowest is best)" : `${cv.metric} (${lowest ? "lowest" : "highest"} is best)`}, ${bestText}; ${cv.warm_start ? "warm-started C paths" : "every point solved cold"}` +
      `${cv.fit_gap == null ? "" : `, each fit to a certified gap of ${fmt(cv.fit_gap)}`}.` +
      `${cv.status === "stopped" ? ` ${cv.message}` : ""}`),
    box,
    el("div", { id: "cv-table" }, table(columns, cv.table)));
  if (Cs.length) makePlot(box, { xLabel: "C", yLabel: label, logX: true, data, series });
  box.dataset.points = String(Cs.length);
}

function parts() {  // key -> {key, kind, label, records}, in the order the log met them
  const out = new Map();
  for (const r of records) {
    const part = partOf(r);
    if (!out.has(part.key)) out.set(part.key, { ...part, records: [] });
    out.get(part.key).records.push(r);
  }
  return out;
}

function showViews(all, chosen) {
  const view = document.getElementById("view");
  const select = document.getElementById("view-select");
  view.hidden = all.size < 2 && chosen.kind !== "grid";
  const keys = [...all.keys()];
  if (select.options.length !== keys.length || [...select.options].some((o, i) => o.value !== keys[i])) {
    select.replaceChildren(...keys.map((key) => el("option", { value: key }, all.get(key).label)));
  }
  select.value = chosen.key;
}

function redraw(rebuild) {
  const all = parts();
  const last = records.length ? partOf(records[records.length - 1]).key : null;
  const chosen = all.get(picked) || all.get(last) || { key: "run", kind: "run", label: "the whole run", records: [] };
  const part = chosen.records;
  const whole = all.size < 2 && chosen.kind === "run";  // one binary problem: as it always was
  showViews(all, chosen);
  document.getElementById("x-axis").hidden = chosen.kind === "grid";
  if (chosen.kind !== shownKind) rebuild = true;
  shownKind = chosen.kind;
  const live = FINISHED.has(job.status) ? "" : " so far (live)";
  const gapBox = document.getElementById("plot-gap");
  const objBox = document.getElementById("plot-objective");
  let gapData, objData, gapOptions, objOptions;
  if (chosen.kind === "grid") {  // a grid point: its fold fits' scores and objectives
    const xs = part.map((r) => r.extras.fold + 1);
    const metric = (part[0] && part[0].extras.metric || "score").replaceAll("_", " ");
    const folds = part[0] && part[0].extras.n_folds;
    document.getElementById("plot-gap-title").textContent = `Fold scores (${metric}) at ${chosen.label}`;
    document.getElementById("plot-objective-title").textContent = "Training objective of each fold's fit";
    document.getElementById("plot-note").textContent =
      `${chosen.label}: ${part.length}${folds ? ` of ${folds}` : ""} fold fits${live}; ${records.length} records in all.`;
    gapData = [xs, part.map((r) => r.optimality)];
    objData = [xs, part.map((r) => r.objective)];
    const foldAxis = { xLabel: "fold", xWhole: true, xRange: [0.8, Math.max(folds || xs.length, 1) + 0.2] };
    gapOptions = { ...foldAxis, yLabel: metric, series: [{ label: `fold ${metric}` }] };
    objOptions = { ...foldAxis, yLabel: "objective", series: [{ label: "training objective" }] };
  } else {
    const subproblem = part.length && part[0].extras && part[0].extras.solver_iteration != null;
    const xs = xAxis === "time" ? runTimes(part)
      : part.map((r, i) => (subproblem ? r.extras.solver_iteration : whole ? r.iteration : i + 1));
    let best = whole ? reference : null;
    for (const r of part) if (r.objective != null && (best == null || r.objective < best)) best = r.objective;
    document.getElementById("plot-gap-title").textContent =
      "Relative gap (f − f*) / |f*| and the solver's optimality measure (log scale)";
    document.getElementById("plot-objective-title").textContent = "Primal objective f";
    document.getElementById("plot-note").textContent = !records.length ? "No record yet."
      : whole ? `${records.length} records${live}; f* = ${fmt(best, 12)}, the lowest objective ${reference != null && reference <= best ? "of the finished jobs on this problem" : "of this job"}.`
        : `${chosen.label}: ${part.length} of ${records.length} records${live}; f* = ${fmt(best, 12)}, the lowest objective of this part; time is the job's.`;
    gapData = [xs, part.map((r) => relativeGap(r.objective, best)),
      part.map((r) => (r.optimality != null && r.optimality > 0 ? r.optimality : null))];
    objData = [xs, part.map((r) => r.objective)];
    const xLabel = xAxis === "time" ? "time (s)" : "iteration";
    gapOptions = { xLabel, yLabel: "relative gap / optimality", logY: true,
      series: [{ label: "relative gap" }, { label: "optimality (solver's measure)" }] };
    objOptions = { xLabel, yLabel: "objective", series: [{ label: "objective" }] };
  }
  if (rebuild || !plots) {
    gapBox.replaceChildren();
    objBox.replaceChildren();
    plots = { gap: makePlot(gapBox, { ...gapOptions, data: gapData }),
      objective: makePlot(objBox, { ...objOptions, data: objData }) };
  } else {
    plots.gap.setData(gapData);
    plots.objective.setData(objData);
  }
  gapBox.dataset.points = String(part.length);
  showCommunication();
  document.body.dataset.view = chosen.key;
  document.body.dataset.records = String(records.length);
}

// A data-parallel job (a sharded dataset, on the Dask cluster): what its iterations cost in
// communication, from the records' extras (reductions, bytes moved, seconds beyond the
// partitions' own work), as means per record: a long finished log is down-sampled.
function showCommunication() {
  const box = document.getElementById("communication");
  const rounds = records.filter((r) => r.extras && r.extras.reductions != null);
  if (!box || !rounds.length) return;
  const mean = (key) => rounds.reduce((sum, r) => sum + (r.extras[key] || 0), 0) / rounds.length;
  box.hidden = false;
  box.textContent = `Data-parallel on the Dask cluster: per iteration ${fmt(mean("reductions"), 3)} ` +
    `reductions, ${bytes(Math.round(mean("bytes_moved")))} moved, ${seconds(mean("communication_seconds"))} ` +
    `in communication (means over ${rounds.length} records).`;
}

start(render);
