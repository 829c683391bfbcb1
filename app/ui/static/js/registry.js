// The model registry: the caller's named models (/ui/registry) and one name
// (/ui/registry/{name}): its versions with their metrics side by side, its aliases with their
// history (who moved each, when, from which version to which), and a form that moves an alias
// (PUT /registry/{name}/aliases/{alias}; the next prediction by name@alias uses the version).
import { api, apiAll, content, el, fmt, notice, seconds, setTitle, shortId, showError, start, table, when } from "./common.js";

const parts = location.pathname.split("/").filter(Boolean);  // ["ui", "registry", name?]
const name = parts.length > 2 ? decodeURIComponent(parts[2]) : null;

async function renderList() {
  const names = await apiAll("/registry");
  if (!names.length) {
    content(el("p", { class: "muted" }, "No registered model yet: a job with a model name (Train, “Register as”) makes its first version. ",
      el("a", { href: "/ui/train" }, "Train")));
    return;
  }
  content(table([
    { label: "Name", render: (r) => el("a", { href: `/ui/registry/${encodeURIComponent(r.name)}`, class: "mono" }, r.name) },
    { label: "Latest version", num: true, render: (r) => fmt(r.latest_version) },
    { label: "Versions", num: true, render: (r) => fmt(r.versions) },
    { label: "Aliases", render: (r) => Object.entries(r.aliases).map(([a, v]) => `${a} → ${v}`).join(", ") || "–" },
    { label: "Updated", cls: "hide-narrow", render: (r) => when(r.updated_at) },
  ], names));
}

function validation(v, key) {
  const value = v.metrics.validation ? v.metrics.validation[key] : null;
  return value == null ? "–" : fmt(value);
}

function versionsTable(versions) {
  return table([
    { label: "Version", num: true, render: (v) => el("strong", {}, String(v.version)) },
    { label: "Aliases", render: (v) => v.aliases.join(", ") || "–" },
    { label: "Model", render: (v) => el("a", { href: `/ui/models/${v.model_id}`, class: "mono" }, shortId(v.model_id)) },
    { label: "Solver", render: (v) => v.solver },
    { label: "C", num: true, render: (v) => fmt(v.params.C) },
    { label: "Objective", num: true, render: (v) => fmt(v.metrics.objective, 8) },
    { label: "Iterations", num: true, cls: "hide-narrow", render: (v) => fmt(v.metrics.iterations) },
    { label: "Training", num: true, render: (v) => seconds(v.metrics.training_seconds) },
    { label: "Val. accuracy", num: true, render: (v) => validation(v, "accuracy") },
    { label: "Val. F1 (macro)", num: true, cls: "hide-narrow", render: (v) => validation(v, "f1_macro") },
    { label: "Val. ROC AUC", num: true, cls: "hide-narrow", render: (v) => validation(v, "roc_auc") },
    { label: "Job", cls: "hide-narrow", render: (v) => (v.job_id ? el("a", { href: `/ui/jobs/${v.job_id}` }, shortId(v.job_id)) : "–") },
    { label: "By", cls: "hide-narrow", render: (v) => v.created_by || "(open)" },
    { label: "Created", cls: "hide-narrow", render: (v) => when(v.created_at) },
  ], versions, { caption: "Versions, newest first; validation metrics when the job had a validation dataset" });
}

function aliasSection(alias) {
  const history = table([
    { label: "When", render: (e) => when(e.moved_at) },
    { label: "By", render: (e) => e.moved_by || "(open)" },
    { label: "From", num: true, render: (e) => (e.from_version == null ? "(created)" : String(e.from_version)) },
    { label: "To", num: true, render: (e) => (e.to_version == null ? "(deleted)" : String(e.to_version)) },
  ], alias.history, { caption: `History of ${alias.alias}, newest first` });
  const remove = alias.version == null ? null : el("button", { type: "button", class: "danger", "data-alias": alias.alias,
    onclick: async () => {
      try {
        await api(`/registry/${encodeURIComponent(name)}/aliases/${encodeURIComponent(alias.alias)}`, { method: "DELETE" });
        notice(`Alias ${alias.alias} deleted.`, true);
        await renderName();
      } catch (error) { showError(error); }
    } }, `Delete ${alias.alias}`);
  return el("section", { class: "alias", "data-alias": alias.alias },
    el("h3", {}, el("span", { class: "mono" }, `${name}@${alias.alias}`), " → ",
      alias.version == null ? el("span", { class: "muted" }, "deleted") : el("span", { "data-version": String(alias.version) }, `version ${alias.version}`)),
    history, remove);
}

function moveForm(registered) {
  const current = registered.aliases.filter((a) => a.version != null).map((a) => a.alias);
  const aliasInput = el("input", { id: "move-alias", list: "alias-names", required: true, placeholder: "production",
    pattern: "[a-z0-9][a-z0-9_\\-]{0,63}", value: current[0] || "production" });
  const names = el("datalist", { id: "alias-names" }, ["production", "staging", ...current]
    .filter((a, i, all) => all.indexOf(a) === i).map((a) => el("option", { value: a })));
  const versionSelect = el("select", { id: "move-version" },
    registered.versions.map((v) => el("option", { value: v.version }, `version ${v.version}`)));
  const form = el("form", { class: "toolbar", id: "move-form" },
    el("label", {}, "Alias", aliasInput, names), el("label", {}, "Version", versionSelect),
    el("button", { type: "submit", class: "primary" }, "Move alias"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const moved = await api(`/registry/${encodeURIComponent(name)}/aliases/${encodeURIComponent(aliasInput.value)}`,
        { method: "PUT", json: { version: Number(versionSelect.value) } });
      notice(`${name}@${moved.alias} now points at version ${moved.version}.`, true);
      await renderName();
    } catch (error) { showError(error); }
  });
  return form;
}

async function renderName() {
  const registered = await api(`/registry/${encodeURIComponent(name)}`);
  setTitle(`Registered model ${registered.name}`);
  content(
    el("p", {}, `Latest version ${registered.latest_version}; predict with `,
      el("code", {}, `GET /api/v1/registry/${registered.name}@<alias>/predict?x=…`), " or ",
      el("code", {}, `/api/v1/registry/${registered.name}/<version>/predict`), "."),
    el("h2", {}, "Versions"), versionsTable(registered.versions),
    el("h2", {}, "Aliases"),
    registered.versions.length ? moveForm(registered) : el("p", { class: "muted" }, "No version to point an alias at."),
    registered.aliases.length ? registered.aliases.map(aliasSection) : el("p", { class: "muted" }, "No alias yet."));
}

start(name ? renderName : renderList);
