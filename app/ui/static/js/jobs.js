// Jobs: the list (status, solver, dataset, C, elapsed time), filtered by state (server side),
// by solver and text (in the page) or by problem; pick finished jobs to compare.
import { FINISHED, api, apiAll, content, el, fmt, jobElapsed, seconds, shortId, start, statusBadge, table, when } from "./common.js";

const params = new URLSearchParams(location.search);
let datasets = {};
let timer = null;

async function render() {
  datasets = Object.fromEntries((await apiAll("/datasets")).map((d) => [d.id, d.name]));
  const status = el("select", { id: "filter-status" },
    ["", "queued", "running", "succeeded", "failed", "cancelled"].map((s) =>
      el("option", { value: s, selected: params.get("status") === s }, s || "any")));
  const solver = el("select", { id: "filter-solver" }, el("option", { value: "" }, "any"));
  const text = el("input", { id: "filter-text", type: "search", placeholder: "dataset, loss, message…", value: params.get("q") || "" });
  const compare = el("button", { type: "button", id: "compare-selected", class: "primary", disabled: true }, "Compare selected");
  const key = params.get("problem_key");
  const list = el("div", { id: "job-list" });
  content(
    el("div", { class: "toolbar" },
      el("label", {}, "Status", status), el("label", {}, "Solver", solver),
      el("label", {}, "Filter", text), compare,
      el("a", { href: "/ui/train", class: "button" }, "New job")),
    key ? el("p", {}, "Jobs of one problem: ", el("code", {}, key), " ", el("a", { href: "/ui/jobs" }, "(all jobs)")) : null,
    list);
  const load = async () => {
    const query = new URLSearchParams();
    if (status.value) query.set("status", status.value);
    if (key) query.set("problem_key", key);
    const page = await api(`/jobs?${query}&limit=500`);
    const solvers = [...new Set(page.data.map((j) => j.solver))].sort();
    const chosen = solver.value;
    solver.replaceChildren(el("option", { value: "" }, "any"),
      ...solvers.map((s) => el("option", { value: s, selected: s === chosen }, s)));
    const needle = text.value.trim().toLowerCase();
    const shown = page.data.filter((j) => (!solver.value || j.solver === solver.value) &&
      (!needle || searchable(j).includes(needle)));
    fill(list, shown, page.count, compare);
    clearTimeout(timer);
    if (page.data.some((j) => !FINISHED.has(j.status))) timer = setTimeout(load, 2000);
  };
  status.addEventListener("change", load);
  solver.addEventListener("change", load);
  text.addEventListener("input", load);
  compare.addEventListener("click", () => {
    const ids = [...list.querySelectorAll("input[name=pick]:checked")].map((c) => c.value);
    location.href = `/ui/compare?jobs=${ids.join(",")}`;
  });
  await load();
}

function searchable(job) {
  return [job.id, job.solver, datasets[job.dataset_id], job.params.loss, job.status, job.message,
    job.error, job.problem_key].join(" ").toLowerCase();
}

function fill(list, jobs, count, compare) {
  if (!jobs.length) {
    list.replaceChildren(el("p", { class: "muted" }, "No job matches."));
    return;
  }
  const picked = new Set([...list.querySelectorAll("input[name=pick]:checked")].map((c) => c.value));
  list.replaceChildren(table([
    { label: "Compare", render: (j) => el("input", { type: "checkbox", name: "pick", value: j.id,
        checked: picked.has(j.id), "aria-label": `compare job ${shortId(j.id)}`,
        onchange: () => { compare.disabled = list.querySelectorAll("input[name=pick]:checked").length < 1; } }) },
    { label: "Job", render: (j) => el("a", { href: `/ui/jobs/${j.id}`, class: "mono" }, shortId(j.id)) },
    { label: "Status", render: (j) => statusBadge(j.status) },
    { label: "Solver", render: (j) => j.solver },
    { label: "Dataset", render: (j) => datasets[j.dataset_id] || shortId(j.dataset_id) },
    { label: "Loss", cls: "hide-narrow", render: (j) => j.params.loss },
    { label: "C", num: true, render: (j) => (j.tuning ? "grid" : fmt(j.params.C)) },
    { label: "Iterations", num: true, cls: "hide-narrow", render: (j) => (j.progress ? fmt(j.progress.iteration) : "–") },
    { label: "Elapsed", num: true, render: (j) => seconds(jobElapsed(j)) },
    { label: "Created", cls: "hide-narrow", render: (j) => when(j.created_at) },
    { label: "Problem", cls: "hide-narrow", render: (j) => (j.problem_key
        ? el("a", { href: `/ui/jobs?problem_key=${encodeURIComponent(j.problem_key)}` }, "same problem") : "–") },
  ], jobs, { caption: `${jobs.length} shown of ${count}` }));
  compare.disabled = picked.size < 1;
}

start(render);
