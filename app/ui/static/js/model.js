// One model: parameters, training job, evaluation on a stored dataset (the metrics of
// solvers.evaluate: accuracy, balanced accuracy, F1 macro, ROC AUC, average precision, log
// loss when calibrated; the ROC curve of a binary model; the confusion matrix; a regression's
// errors with its predicted-vs-true and residual plots; a one-class model's outlier fraction,
// AUC and the histogram of its decision values), one example predicted, downloads (npz,
// LIBLINEAR, ONNX).
import { api, apiAll, content, download, el, fmt, seconds, setTitle, shortId, showError, start, table, tagList } from "./common.js";
import { makePlot } from "./plot.js";

const modelId = location.pathname.split("/").filter(Boolean).pop();

async function render() {
  const [model, datasets] = await Promise.all([api(`/models/${modelId}`), apiAll("/datasets")]);
  setTitle(`Model ${shortId(model.id)} · ${model.solver}`);
  const names = Object.fromEntries(datasets.map((d) => [d.id, d.name]));
  const facts = [
    ["Solver", model.solver], ["Kind", model.kind], ["Task", model.task],
    ...(model.task === "regression" ? [] : [["Classes", model.classes.join(", ")]]),
    ["Features", fmt(model.n_features)], ["Objective", fmt(model.objective, 12)],
    ["Solver status", model.solver_status], ["Message", model.message], ["Iterations", fmt(model.iterations)],
    ["Training time", seconds(model.training_seconds)],
    ["Dataset", names[model.dataset_id] || model.dataset_id],
    ["Training job", model.job_id ? el("a", { href: `/ui/jobs/${model.job_id}` }, shortId(model.job_id)) : "– (deleted)"],
    ["Tags", tagList(model.tags)],
  ];
  const links = el("div", { class: "actions" },
    downloadLink("Download (.npz)", `/models/${model.id}/download?format=npz`, `model-${model.id}.npz`),
    model.kind.startsWith("kernel") ? null
      : downloadLink("Export for LIBLINEAR", `/models/${model.id}/download?format=liblinear`, `model-${model.id}.txt`),
    downloadLink("Export as ONNX", `/models/${model.id}/download?format=onnx`, `model-${model.id}.onnx`));
  const evaluation = el("div", { id: "evaluation" });
  const evalSelect = el("select", { id: "evaluate-dataset" },
    datasets.filter((d) => d.n_features <= model.n_features).map((d) => el("option", { value: d.id, selected: d.id === model.dataset_id }, d.name)));
  const evalForm = el("form", { class: "toolbar" }, el("label", {}, "Dataset", evalSelect),
    el("button", { type: "submit", class: "primary" }, "Evaluate"));
  evalForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    evaluation.replaceChildren(el("p", { class: "muted" }, "Evaluating…"));
    try {
      const result = await api(`/models/${model.id}/evaluate`, { method: "POST", json: { dataset_id: evalSelect.value } });
      evaluation.replaceChildren(showEvaluation(result, "evaluation"));
      drawPlots(result, "evaluation");
    } catch (error) { evaluation.replaceChildren(el("p", { class: "error" }, error.describe ? error.describe() : String(error))); }
  });
  const predicted = el("div", { id: "prediction", role: "status" });
  const x = el("input", { id: "predict-x", placeholder: "3:0.5 7:1", size: 40, required: true });
  const predictForm = el("form", { class: "toolbar" },
    el("label", {}, "Features (index:value, space-separated)", x),
    el("button", { type: "submit", class: "primary" }, "Predict"));
  predictForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const p = await api(`/models/${model.id}/predict?x=${encodeURIComponent(x.value)}`);
      const head = p.value != null ? `Value ${fmt(p.value, 8)}`
        : p.outlier != null ? (p.outlier ? "Outlier (label -1)" : "Inlier (label +1)") : `Label ${p.label}`;
      predicted.replaceChildren(el("p", {}, el("strong", {}, head),
        p.value != null ? "" : [` — decision value${p.decision_values.length > 1 ? "s" : ""}: `,
          p.decision_values.map((v) => fmt(v, 6)).join(", ")]));
    } catch (error) { predicted.replaceChildren(el("p", { class: "error" }, error.describe ? error.describe() : String(error))); }
  });
  content(
    el("div", { class: "columns" },
      el("section", {}, el("h2", {}, "Model"), el("dl", { class: "facts" }, facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])), links),
      el("section", {}, el("h2", {}, "Parameters"), el("dl", { class: "facts", id: "model-params" },
        Object.entries(model.shown_params).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v == null ? "none" : String(v))])))),
    model.details ? [el("h2", {}, "Details"), el("dl", { class: "facts", id: "model-details" },
      Object.entries(model.details).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, detailNode(v))]))] : null,
    model.validation ? [el("h2", {}, "Validation (at training)"), showEvaluation(model.validation, "validation")] : null,
    el("h2", { id: "evaluation-heading" }, "Evaluate on a stored dataset"), evalForm, evaluation,
    el("h2", {}, "Predict one example"), predictForm, predicted);
  if (model.validation) drawPlots(model.validation, "validation");
}

// A detail of the model's metadata as a person reads it (auto's choice, the low-rank factor,
// the scaling...): an object as a nested list, a list of records as a table (auto's runs and
// neighbours), a list of pairs as "a: b, ..." (the rank search's landmarks: residual), numbers
// formatted; never a raw JSON blob.
function detailNode(value) {
  if (value == null) return "none";
  const number = (v) => fmt(v, 4).replace(/\.?0+e/, "e");  // 1e-6, not 1.000e-6
  if (typeof value === "number") return number(value);
  if (typeof value !== "object") return String(value);
  const scalar = (v) => (typeof v === "number" ? number(v) : v !== null && typeof v === "object" ? JSON.stringify(v) : String(v));
  if (Array.isArray(value)) {
    if (value.length === 0) return "none";
    if (value.every((v) => v !== null && typeof v === "object" && !Array.isArray(v))) {
      const keys = [...new Set(value.flatMap((v) => Object.keys(v)))];
      return table(keys.map((k) => ({ label: k, num: value.every((row) => row[k] == null || typeof row[k] === "number"),
        render: (row) => detailNode(row[k]) })), value);
    }
    if (value.every((v) => Array.isArray(v))) return value.map((v) => v.map(scalar).join(": ")).join(", ");
    return value.map(scalar).join(", ");
  }
  return el("dl", { class: "facts nested" },
    Object.entries(value).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, detailNode(v))]));
}

function downloadLink(label, path, filename) {
  return el("a", { class: "button", href: `/api/v1${path}`, onclick: (e) => {
    e.preventDefault();  // the key goes in a header, which a plain link cannot send
    download(path, filename).catch(showError);
  } }, label);
}

// The metrics (null ones, e.g. AUC of a class-less fold or log loss of an uncalibrated model,
// say why they are missing), the ROC curve's box (drawn by drawRoc once in the page) and the
// confusion matrix.  `prefix` keeps the validation's and the evaluation's ids apart.
const METRICS = [
  ["accuracy", "Accuracy", percent],
  ["balanced_accuracy", "Balanced accuracy", percent],
  ["f1_macro", "F1 (macro)", (v) => fmt(v)],
  ["roc_auc", "ROC AUC", (v) => fmt(v), "needs both labels in the data"],
  ["average_precision", "Average precision", (v) => fmt(v), "binary models only"],
  ["log_loss", "Log loss", (v) => fmt(v), "no probabilities: train with probability on"],
];

function percent(v) { return `${(100 * v).toFixed(2)} %`; }

// A regression's errors and the boxes of its two plots (drawn by drawPlots).
const REGRESSION_METRICS = [
  ["mean_squared_error", "Mean squared error", (v) => fmt(v, 6)],
  ["mean_absolute_error", "Mean absolute error", (v) => fmt(v, 6)],
  ["r2", "R²", (v) => fmt(v, 6), "constant labels"],
  ["squared_correlation", "Squared correlation", (v) => fmt(v, 6), "constant labels or predictions"],
];

function showRegression(result, prefix) {
  const metrics = el("dl", { class: "facts metrics", id: `${prefix}-metrics` }, REGRESSION_METRICS.flatMap(([key, name, show, missing]) => [
    el("dt", {}, name),
    el("dd", { "data-metric": key }, result[key] == null ? el("span", { class: "muted" }, `– (${missing})`) : show(result[key]))]));
  const shown = result.predicted_vs_true ? result.predicted_vs_true.true.length : 0;
  return el("div", {},
    el("p", {}, el("strong", { id: `${prefix}-headline` }, `Mean squared error ${fmt(result.mean_squared_error, 6)}`), ` on ${fmt(result.n_samples)} examples.`),
    el("section", {}, metrics),
    shown ? el("div", { class: "columns" },
      el("section", {}, el("h3", {}, "Predicted against true"), el("div", { class: "plot", id: `${prefix}-pvt` }),
        el("p", { class: "legend-note" }, `${shown} of the ${fmt(result.n_samples)} examples (evenly spaced); the dashed diagonal is a perfect prediction.`)),
      el("section", {}, el("h3", {}, "Residuals"), el("div", { class: "plot", id: `${prefix}-residuals` }),
        el("p", { class: "legend-note" }, "True minus predicted value against the prediction; the dashed line is zero."))) : null);
}

function showOneClass(result, prefix) {
  const auc = result.roc_auc == null
    ? el("span", { class: "muted" }, "– (needs labels of two values)")
    : `${fmt(result.roc_auc)} (inliers: label ${result.inlier_label})`;
  return el("div", {},
    el("p", {}, el("strong", { id: `${prefix}-headline` }, `Outliers ${percent(result.outlier_fraction)}`), ` of ${fmt(result.n_samples)} examples (decision value ≤ 0).`),
    el("dl", { class: "facts metrics", id: `${prefix}-metrics` },
      el("dt", {}, "Outlier fraction"), el("dd", { "data-metric": "outlier_fraction" }, percent(result.outlier_fraction)),
      el("dt", {}, "ROC AUC"), el("dd", { "data-metric": "roc_auc" }, auc)),
    result.decision_histogram ? el("section", {}, el("h3", {}, "Decision values"), el("div", { class: "plot", id: `${prefix}-histogram` }),
      el("p", { class: "legend-note" }, `The decision values w·φ(x) − ρ counted in ${result.decision_histogram.counts.length} bins; below 0 an example is an outlier.` +
        (result.decision_histogram.by_label ? " One curve per label." : ""))) : null);
}

function showEvaluation(result, prefix) {
  if (result.task === "regression") return showRegression(result, prefix);
  if (result.task === "one_class") return showOneClass(result, prefix);
  const labels = result.labels;
  const matrix = result.confusion_matrix;
  const metrics = el("dl", { class: "facts metrics", id: `${prefix}-metrics` }, METRICS.flatMap(([key, name, show, missing]) => [
    el("dt", {}, name),
    el("dd", { "data-metric": key }, result[key] == null ? el("span", { class: "muted" }, `– (${missing})`) : show(result[key]))]));
  const roc = result.roc_curve
    ? el("div", { class: "roc" }, el("div", { class: "plot", id: `${prefix}-roc` }),
      el("p", { class: "legend-note" }, `ROC curve from the decision values: ${result.roc_curve.fpr.length} points ` +
        `(at most 200, scikit-learn's roc_curve points); AUC ${fmt(result.roc_auc)}. The dashed diagonal is chance.`))
    : null;
  return el("div", {},
    el("p", {}, el("strong", { id: prefix === "evaluation" ? "accuracy" : `${prefix}-accuracy` }, `Accuracy ${percent(result.accuracy)}`), ` on ${fmt(result.n_samples)} examples.`),
    el("div", { class: "columns" }, el("section", {}, metrics), roc ? el("section", {}, roc) : null),
    table([{ label: "true \\ predicted", render: (i) => el("strong", {}, String(labels[i])) },
      ...labels.map((l, j) => ({ label: String(l), num: true, render: (i) => (i === j ? el("strong", {}, fmt(matrix[i][j])) : fmt(matrix[i][j])) }))],
    labels.map((_, i) => i), { caption: "Confusion matrix: rows are the true labels, columns the predicted ones (diagonal in bold)" }));
}

// The plots of an evaluation, drawn once their boxes are in the page (uPlot measures them).
function drawPlots(result, prefix) {
  if (result.task === "regression") drawRegression(result, prefix);
  else if (result.task === "one_class") drawHistogram(result, prefix);
  else drawRoc(result, prefix);
}

const DOTS = { width: 0, paths: () => null, points: { show: true, size: 4 } };

// Predicted against true (x: the true value, sorted) and the residuals against the prediction.
function drawRegression(result, prefix) {
  const pvt = document.getElementById(`${prefix}-pvt`);
  const residuals = document.getElementById(`${prefix}-residuals`);
  if (!pvt || !residuals || !result.predicted_vs_true) return;
  const pairs = result.predicted_vs_true.true.map((t, i) => [t, result.predicted_vs_true.predicted[i]]);
  const byTrue = [...pairs].sort((a, b) => a[0] - b[0]);
  makePlot(pvt, { xLabel: "true value", yLabel: "predicted value", height: 300,
    data: [byTrue.map((p) => p[0]), byTrue.map((p) => p[1]), byTrue.map((p) => p[0])],
    series: [{ label: "predicted", ...DOTS }, { label: "perfect", width: 1, dash: [4, 4], stroke: "#777", points: { show: false } }] });
  const byPrediction = [...pairs].sort((a, b) => a[1] - b[1]);
  makePlot(residuals, { xLabel: "predicted value", yLabel: "residual (true − predicted)", height: 300,
    data: [byPrediction.map((p) => p[1]), byPrediction.map((p) => p[0] - p[1]), byPrediction.map(() => 0)],
    series: [{ label: "residual", ...DOTS }, { label: "zero", width: 1, dash: [4, 4], stroke: "#777", points: { show: false } }] });
  pvt.dataset.points = residuals.dataset.points = String(pairs.length);
}

// A one-class model's decision values: counts per bin (bars), and per label when there are two.
function drawHistogram(result, prefix) {
  const box = document.getElementById(`${prefix}-histogram`);
  const histogram = result.decision_histogram;
  if (!box || !histogram) return;
  const centers = histogram.counts.map((_, i) => (histogram.edges[i] + histogram.edges[i + 1]) / 2);
  const width = histogram.edges[1] - histogram.edges[0];
  const bars = { paths: uPlot.paths.bars({ size: [0.9, Infinity] }), points: { show: false }, fill: "rgba(0, 114, 178, 0.35)" };
  const series = [{ label: "examples", ...bars }];
  const data = [centers, histogram.counts];
  for (const [label, counts] of Object.entries(histogram.by_label || {})) {
    series.push({ label: `label ${label}` });
    data.push(counts);
  }
  makePlot(box, { xLabel: `decision value (bins of ${fmt(width)})`, yLabel: "examples", height: 300, data, series });
  box.dataset.bins = String(centers.length);
}

// The ROC curve (true positive rate against false positive rate), drawn once its box is in
// the page (uPlot measures the box's width).
function drawRoc(result, prefix) {
  const box = document.getElementById(`${prefix}-roc`);
  if (!box || !result.roc_curve) return;
  const { fpr, tpr } = result.roc_curve;
  makePlot(box, { xLabel: "false positive rate", yLabel: "true positive rate", height: 300,
    xRange: [0, 1], yRange: [0, 1], data: [fpr, tpr, fpr],
    series: [{ label: "ROC", points: { show: false } }, { label: "chance", width: 1, dash: [4, 4], stroke: "#777", points: { show: false } }] });
  box.dataset.points = String(fpr.length);
}

start(render);
