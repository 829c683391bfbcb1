// Datasets: the list (sizes, class counts, density; a sharded dataset's kind and shards, its
// statistics once a job read them), upload by drag and drop (the error of a malformed file
// with its line), delete.
import { API, ApiError, api, apiAll, apiKey, bytes, content, el, fmt, notice, showError, start, table, when } from "./common.js";

async function upload(file, status) {
  const form = new FormData();
  form.append("file", file, file.name);
  status.replaceChildren(el("span", {}, `Uploading ${file.name}…`));
  const response = await fetch(`${API}/datasets`, {
    method: "POST", body: form, headers: apiKey() ? { "X-API-Key": apiKey() } : {} });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(response.status, data);
  return { dataset: data, created: response.status === 201 };
}

function classCounts(counts) {
  if (counts == null) return el("span", { class: "muted" }, "not read yet (a job reads the shards)");
  return Object.entries(counts).map(([label, n]) => `${label}: ${n.toLocaleString("en-US")}`).join(", ");
}

async function render() {
  const datasets = await apiAll("/datasets");
  const status = el("div", { id: "upload-status", role: "status", "aria-live": "polite" });
  const input = el("input", { type: "file", id: "upload-file", class: "visually-hidden" });
  const zone = el("div", { class: "dropzone", id: "dropzone" },
    el("p", {}, "Drop an SVMlight / LIBSVM file here (gzip, bzip2, xz too), or "),
    el("label", { for: "upload-file", class: "button" }, "choose a file"), " ", input, status);
  const send = async (file) => {
    try {
      const { dataset, created } = await upload(file, status);
      status.replaceChildren(el("span", { class: "ok" },
        created ? `✔ Stored ${dataset.name}: ${dataset.n_samples} examples, ${dataset.n_features} features.`
                : `✔ The same content is already stored as ${dataset.name}.`));
      await refresh();
    } catch (error) {
      const text = error instanceof ApiError ? error.describe() : String(error);
      const line = error.problem && error.problem.line != null ? error.problem.line : null;
      status.replaceChildren(el("p", { class: "error", id: "upload-error", "data-line": line }, `Upload refused: ${text}`));
    }
  };
  input.addEventListener("change", () => { if (input.files[0]) send(input.files[0]); input.value = ""; });
  zone.addEventListener("dragover", (e) => { e.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    if (e.dataTransfer.files[0]) send(e.dataTransfer.files[0]);
  });
  const list = el("div", { id: "dataset-list" });
  content(zone, el("h2", {}, "Stored datasets"), list);
  fill(list, datasets);
}

function fill(list, datasets) {
  if (!datasets.length) {
    list.replaceChildren(el("p", { class: "muted" }, "No dataset yet: upload one above."));
    return;
  }
  list.replaceChildren(table([
    { label: "Name", render: (d) => el("span", { class: "dataset-name" }, d.name) },
    { label: "Kind", render: (d) => (d.kind === "sharded"
      ? el("span", { class: "dataset-kind", title: "its shards: GET /api/v1/datasets/" + d.id }, `sharded (${d.n_shards} shard${d.n_shards === 1 ? "" : "s"})`)
      : el("span", { class: "dataset-kind" }, "uploaded")) },
    { label: "Examples", num: true, render: (d) => fmt(d.n_samples) },
    { label: "Features", num: true, render: (d) => fmt(d.n_features) },
    { label: "Non-zeros", num: true, cls: "hide-narrow", render: (d) => fmt(d.nnz) },
    { label: "Density", num: true, render: (d) => fmt(d.density, 3) },
    { label: "Classes (examples each)", render: (d) => classCounts(d.class_counts) },
    { label: "Stored", num: true, cls: "hide-narrow", render: (d) => (d.kind === "sharded" ? "on the workers" : bytes(d.stored_bytes)) },
    { label: "Uploaded", cls: "hide-narrow", render: (d) => when(d.created_at) },
    { label: "", render: (d) => el("span", {},
        el("a", { href: `/ui/train?dataset=${d.id}` }, "train"), " ",
        deleteButton(d)) },
  ], datasets));
}

function deleteButton(dataset) {
  const button = el("button", { class: "danger", type: "button", "aria-label": `Delete ${dataset.name}` }, "Delete");
  button.addEventListener("click", async () => {
    if (button.dataset.armed !== "yes") {  // two clicks: no blocking dialog
      button.dataset.armed = "yes";
      button.textContent = "Confirm delete";
      return;
    }
    try {
      await api(`/datasets/${dataset.id}`, { method: "DELETE" });
      notice(`Deleted ${dataset.name}.`, true);
      await refresh();
    } catch (error) { showError(error); }
  });
  return button;
}

async function refresh() {
  fill(document.getElementById("dataset-list"), await apiAll("/datasets"));
}

start(render);
