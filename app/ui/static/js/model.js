// One model: parameters, training job, evaluation on a stored dataset (accuracy, confusion
// matrix), one example predicted, downloads (npz, LIBLINEAR).
import { api, apiAll, content, download, el, fmt, seconds, setTitle, shortId, showError, start, table } from "./common.js";

const modelId = location.pathname.split("/").filter(Boolean).pop();

async function render() {
  const [model, datasets] = await Promise.all([api(`/models/${modelId}`), apiAll("/datasets")]);
  setTitle(`Model ${shortId(model.id)} · ${model.solver}`);
  const names = Object.fromEntries(datasets.map((d) => [d.id, d.name]));
  const facts = [
    ["Solver", model.solver], ["Kind", model.kind], ["Classes", model.classes.join(", ")],
    ["Features", fmt(model.n_features)], ["Objective", fmt(model.objective, 12)],
    ["Solver status", model.solver_status], ["Message", model.message], ["Iterations", fmt(model.iterations)],
    ["Training time", seconds(model.training_seconds)],
    ["Dataset", names[model.dataset_id] || model.dataset_id],
    ["Training job", model.job_id ? el("a", { href: `/ui/jobs/${model.job_id}` }, shortId(model.job_id)) : "– (deleted)"],
  ];
  const links = el("div", { class: "actions" },
    downloadLink("Download (.npz)", `/models/${model.id}/download?format=npz`, `model-${model.id}.npz`),
    model.kind === "kernel" ? null
      : downloadLink("Export for LIBLINEAR", `/models/${model.id}/download?format=liblinear`, `model-${model.id}.txt`));
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
      evaluation.replaceChildren(showEvaluation(result));
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
      predicted.replaceChildren(el("p", {}, el("strong", {}, `Label ${p.label}`), ` — decision value${p.decision_values.length > 1 ? "s" : ""}: `,
        p.decision_values.map((v) => fmt(v, 6)).join(", ")));
    } catch (error) { predicted.replaceChildren(el("p", { class: "error" }, error.describe ? error.describe() : String(error))); }
  });
  content(
    el("div", { class: "columns" },
      el("section", {}, el("h2", {}, "Model"), el("dl", { class: "facts" }, facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])), links),
      el("section", {}, el("h2", {}, "Parameters"), el("dl", { class: "facts" },
        Object.entries(model.params).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v == null ? "none" : String(v))])))),
    model.validation ? [el("h2", {}, "Validation (at training)"), showEvaluation(model.validation)] : null,
    el("h2", { id: "evaluation-heading" }, "Evaluate on a stored dataset"), evalForm, evaluation,
    el("h2", {}, "Predict one example"), predictForm, predicted);
}

function downloadLink(label, path, filename) {
  return el("a", { class: "button", href: `/api/v1${path}`, onclick: (e) => {
    e.preventDefault();  // the key goes in a header, which a plain link cannot send
    download(path, filename).catch(showError);
  } }, label);
}

function showEvaluation(result) {
  const labels = result.labels;
  const matrix = result.confusion_matrix;
  return el("div", {},
    el("p", {}, el("strong", { id: "accuracy" }, `Accuracy ${(100 * result.accuracy).toFixed(2)} %`), ` on ${fmt(result.n_samples)} examples.`),
    table([{ label: "true \\ predicted", render: (i) => el("strong", {}, String(labels[i])) },
      ...labels.map((l, j) => ({ label: String(l), num: true, render: (i) => (i === j ? el("strong", {}, fmt(matrix[i][j])) : fmt(matrix[i][j])) }))],
    labels.map((_, i) => i), { caption: "Confusion matrix: rows are the true labels, columns the predicted ones (diagonal in bold)" }));
}

start(render);
