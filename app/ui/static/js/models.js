// Models: the list, newest first.
import { apiAll, bytes, content, el, fmt, seconds, shortId, start, table, when } from "./common.js";

async function render() {
  const [models, datasets] = await Promise.all([apiAll("/models"), apiAll("/datasets")]);
  const names = Object.fromEntries(datasets.map((d) => [d.id, d.name]));
  if (!models.length) {
    content(el("p", { class: "muted" }, "No model yet: a job that succeeds stores one. ", el("a", { href: "/ui/train" }, "Train")));
    return;
  }
  content(table([
    { label: "Model", render: (m) => el("a", { href: `/ui/models/${m.id}`, class: "mono" }, shortId(m.id)) },
    { label: "Solver", render: (m) => m.solver },
    { label: "Kind", render: (m) => m.kind },
    { label: "Dataset", render: (m) => names[m.dataset_id] || shortId(m.dataset_id) },
    { label: "Classes", render: (m) => m.classes.join(", ") },
    { label: "C", num: true, render: (m) => fmt(m.params.C) },
    { label: "Objective", num: true, cls: "hide-narrow", render: (m) => fmt(m.objective, 8) },
    { label: "Training", num: true, render: (m) => seconds(m.training_seconds) },
    { label: "Size", num: true, cls: "hide-narrow", render: (m) => bytes(m.size_bytes) },
    { label: "Created", cls: "hide-narrow", render: (m) => when(m.created_at) },
  ], models));
}

start(render);
