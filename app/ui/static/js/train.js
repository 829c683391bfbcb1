// Train: a form generated from GET /solvers (each solver's parameter JSON schema, the API's
// own source of truth), defaults filled in, each parameter's description shown; optionally a
// tuning job (cross-validation over a C grid and, where given, grids of the kernel's gamma, a
// regression's tube width epsilon and nu-SVC's / nu-SVR's nu, scored by one of the API's
// `scoring` choices, read from its OpenAPI schema); "Register as" names the model in the
// registry (its next version).  The task (classification, regression, one-class), epsilon and
// nu are the solver's own parameters, in the form generated from its schema.
import { api, apiAll, apiKey, content, datasetLine, el, notice, start } from "./common.js";

const query = new URLSearchParams(location.search);

async function render() {
  const [solvers, datasets, spec] = await Promise.all([api("/solvers"), apiAll("/datasets"),
    fetch("/openapi.json", { headers: apiKey() ? { "X-API-Key": apiKey() } : {} }).then((r) => r.json())]);
  const tuningSchema = spec.components.schemas.TuningSpec.properties;
  if (!datasets.length) {
    content(el("p", {}, "Upload a dataset first: ", el("a", { href: "/ui/datasets" }, "Datasets")));
    return;
  }
  const dataset = el("select", { id: "train-dataset", name: "dataset_id", required: true },
    datasets.map((d) => el("option", { value: d.id, selected: d.id === query.get("dataset") },
      datasetLine(d))));
  const solver = el("select", { id: "train-solver", name: "solver" },
    solvers.data.map((s) => el("option", { value: s.name, selected: s.name === (query.get("solver") || "mfn") }, s.name)));
  const validation = el("select", { id: "train-validation" }, el("option", { value: "" }, "none"),
    datasets.map((d) => el("option", { value: d.id }, d.name)));
  const timeLimit = el("input", { id: "train-time-limit", type: "number", min: "0", step: "any", placeholder: "none" });
  const modelName = el("input", { id: "train-model-name", type: "text", placeholder: "none (e.g. churn)",
    pattern: "[a-z0-9][a-z0-9_\\-]{0,63}", value: query.get("model_name") || "",
    title: "Register the model as the next version of this name (lowercase letters, digits, _ and -)" });
  const about = el("p", { id: "solver-about" });
  const fields = el("div", { id: "solver-fields", class: "params" });
  const tune = el("input", { id: "tune", type: "checkbox" });
  const grid = el("input", { id: "tune-C", type: "text", size: 30, value: "2^-5 .. 2^5",
    "aria-describedby": "tune-C-help" });
  const folds = el("input", { id: "tune-folds", type: "number", min: String(tuningSchema.folds.minimum),
    max: String(tuningSchema.folds.maximum), step: "1", value: String(tuningSchema.folds.default) });
  const axisInput = (axis) => el("input", { id: `tune-${axis}`, type: "text", size: 16, placeholder: "not searched",
    title: tuningSchema[axis].description || "" });
  const axes = { gamma: axisInput("gamma"), epsilon: axisInput("epsilon"), nu: axisInput("nu") };
  const scoring = el("select", { id: "tune-scoring", "aria-describedby": "tune-scoring-help" },
    tuningSchema.scoring.enum.map((s) => el("option", { value: s, selected: s === tuningSchema.scoring.default }, s)));
  const tuning = el("fieldset", { id: "tuning" }, el("legend", {}, "Tuning"),
    el("div", { class: "check" }, tune, el("label", { for: "tune" }, "Cross-validate over a grid of C, then refit at the best C (a tuning job)")),
    el("div", { class: "toolbar" },
      el("label", {}, "C grid", grid), el("label", {}, "Folds", folds), el("label", {}, "Scoring", scoring)),
    el("div", { class: "toolbar" },
      el("label", {}, "gamma grid (kernel)", axes.gamma), el("label", {}, "epsilon grid (regression)", axes.epsilon),
      el("label", {}, "nu grid (nu_svc, nu_svr)", axes.nu)),
    el("small", { id: "tune-C-help" }, "C values separated by spaces or commas; 2^k is accepted, and 2^a .. 2^b is every power between. " +
      "The gamma, epsilon and nu grids are optional lists of numbers (empty: not searched). "),
    el("small", { id: "tune-scoring-help" }, tuningSchema.scoring.description || ""));
  const form = el("form", { id: "train-form", novalidate: true },
    el("div", { class: "toolbar" }, el("label", {}, "Dataset", dataset), el("label", {}, "Solver", solver),
      el("label", {}, "Validation dataset", validation), el("label", {}, "Time limit (s)", timeLimit),
      el("label", {}, "Register as", modelName)),
    about, el("h2", {}, "Parameters"), fields, tuning,
    el("div", { class: "actions" }, el("button", { type: "submit", class: "primary", id: "train-submit" }, "Queue job")));
  const show = () => {
    const spec = solvers.data.find((s) => s.name === solver.value);
    about.replaceChildren(el("strong", {}, spec.name), `: ${spec.description} `, el("span", { class: "muted" }, spec.reference),
      el("br"), `Losses: ${spec.losses.join(", ")}; bias: ${spec.bias_modes.join(", ")}; tasks: ${spec.tasks.join(", ")}.`);
    fields.replaceChildren(...Object.entries(spec.params_schema.properties || {})
      .filter(([name]) => name !== "solver").map(([name, schema]) => field(name, schema)));
  };
  solver.addEventListener("change", show);
  show();
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const spec = solvers.data.find((s) => s.name === solver.value);
    const params = { solver: spec.name };
    try {
      for (const [name, schema] of Object.entries(spec.params_schema.properties || {})) {
        if (name === "solver") continue;
        const value = read(name, schema);
        if (value !== undefined && JSON.stringify(value) !== JSON.stringify(schema.default)) params[name] = value;
      }
    } catch (error) { notice(error.message); return; }
    const body = { dataset_id: dataset.value, params };
    if (tune.checked) {
      try {
        body.tuning = { C: readGrid(grid.value), folds: Number(folds.value), scoring: scoring.value };
        for (const [axis, input] of Object.entries(axes)) {
          const values = readList(input.value, axis);
          if (values) body.tuning[axis] = values;
        }
      } catch (error) { notice(error.message); return; }
    }
    if (validation.value) body.validation_dataset_id = validation.value;
    if (timeLimit.value) body.time_limit_s = Number(timeLimit.value);
    if (modelName.value.trim()) body.model_name = modelName.value.trim();
    try {
      const job = await api("/jobs", { method: "POST", json: body });
      location.href = `/ui/jobs/${job.id}`;
    } catch (error) {
      notice(`Not queued: ${error.describe ? error.describe() : error}`);
    }
  });
  content(form);
}

// "0.1, 1 10", "2^-3 2^0", "2^-5 .. 2^5" (every power of 2 between): the C grid.
function readGrid(text) {
  const number = (t) => {
    const power = /^2\^(-?\d+)$/.exec(t);
    const value = power ? 2 ** Number(power[1]) : Number(t);
    if (t === "" || !Number.isFinite(value) || value <= 0) throw new Error(`C grid: "${t}" is not a positive number`);
    return value;
  };
  const range = /^\s*2\^(-?\d+)\s*\.\.\s*2\^(-?\d+)\s*$/.exec(text);
  if (range) {
    const [a, b] = [Number(range[1]), Number(range[2])];
    if (b < a) throw new Error("C grid: the range's end is below its start");
    return Array.from({ length: b - a + 1 }, (_, i) => 2 ** (a + i));
  }
  const values = text.split(/[\s,]+/).filter(Boolean).map(number);
  if (!values.length) throw new Error("C grid: give at least one value");
  return values;
}

// "0 0.1 0.5" (spaces or commas): a grid of one of the other axes; empty: not searched.
function readList(text, name) {
  const tokens = text.split(/[\s,]+/).filter(Boolean);
  if (!tokens.length) return null;
  return tokens.map((t) => {
    const value = Number(t);
    if (!Number.isFinite(value)) throw new Error(`${name} grid: "${t}" is not a number`);
    return value;
  });
}

function kinds(schema) {  // the JSON types a field takes (anyOf of a number and null, ...):
  // a constant, or each value of an enum ("auto" | "pair" beside a number), as `const:value`
  const options = schema.anyOf || [schema];
  return options.flatMap((o) => (o.const !== undefined ? [`const:${o.const}`]
    : o.enum ? o.enum.map((v) => `const:${v}`) : [o.type]));
}

function field(name, schema) {
  const id = `param-${name}`;
  const types = kinds(schema);
  const label = el("label", { for: id }, schema.title || name, " ", el("code", {}, name));
  const help = el("small", { id: `${id}-help` }, schema.description || "", schema.default !== undefined
    ? ` Default: ${schema.default === null ? "none" : schema.default}.` : "");
  let input;
  if (schema.enum || schema.const !== undefined) {
    const choices = schema.enum || [schema.const];
    input = el("select", { id, name }, choices.map((c) => el("option", { value: c, selected: c === schema.default }, c)));
  } else if (types.length === 1 && types[0] === "boolean") {
    input = el("input", { id, name, type: "checkbox", checked: schema.default === true });
    return el("div", { class: "field check" }, input, label, help);
  } else if (types.length === 1 && (types[0] === "number" || types[0] === "integer")) {
    input = el("input", { id, name, type: "number", step: types[0] === "integer" ? "1" : "any",
      value: schema.default ?? "", min: schema.minimum ?? schema.exclusiveMinimum, max: schema.maximum ?? schema.exclusiveMaximum });
  } else {  // a union (number or null, number or "auto"): typed as text
    const shown = schema.default === null ? "" : schema.default ?? "";
    input = el("input", { id, name, type: "text", value: String(shown),
      placeholder: types.includes("null") ? "none" : types.filter((t) => t.startsWith("const:")).map((t) => t.slice(6)).join(" | ") });
  }
  input.setAttribute("aria-describedby", `${id}-help`);
  return el("div", { class: "field" }, label, input, help);
}

function read(name, schema) {
  const input = document.getElementById(`param-${name}`);
  const types = kinds(schema);
  if (input.type === "checkbox") return input.checked;
  const text = input.value.trim();
  if (input.tagName === "SELECT") return text;
  if (text === "") {
    if (types.includes("null")) return null;
    return undefined;  // left empty: the default
  }
  const constant = types.find((t) => t === `const:${text}`);
  if (constant) return text;
  if (types.includes("number") || types.includes("integer")) {
    const value = Number(text);
    if (!Number.isFinite(value)) throw new Error(`${name}: "${text}" is not a number`);
    return value;
  }
  return text;
}

start(render);
