// The race: queue every solver that supports a job's problem (from GET /solvers: its losses,
// bias modes, tasks and parameter schema), all on the same problem, then compare them.
import { api } from "./common.js";

// The parameters that pose `problem` (a job's `problem` fields) to `solver`, or null when the
// solver does not solve it.
export function paramsFor(solver, problem) {
  const props = solver.params_schema.properties || {};
  const task = problem.task === "ordinal" ? "ordinal" : "binary";
  if (!solver.tasks.includes(task)) return null;
  const params = { solver: solver.name, C: problem.C, task: problem.task };
  if (problem.multiclass !== "ovr") params.multiclass = problem.multiclass;
  if (solver.losses.includes(problem.loss)) params.loss = problem.loss;
  else if (solver.losses.includes("lp") && (problem.loss === "hinge" || problem.loss === "squared_hinge")) {
    params.loss = "lp";
    params.p = problem.loss === "hinge" ? 1 : 2;
  } else return null;
  if (problem.p != null) params.p = problem.p;
  if (props.A) {  // relaxed LS-SVM: A/2 b^2 is a regularized bias of scale 1/sqrt(A)
    params.bias = "regularized";
    if (problem.bias === "free") params.sumt = true;  // its rounds drive A to 0
    else if (problem.bias === "regularized") params.A = 1 / (problem.bias_scale * problem.bias_scale);
    else return null;
  } else {
    if (!solver.bias_modes.includes(problem.bias)) return null;
    params.bias = problem.bias;
    if (problem.bias_scale != null) params.bias_scale = problem.bias_scale;
  }
  if (problem.kernel) {
    for (const name of ["kernel", "gamma", "degree", "coef0"]) if (problem[name] != null) params[name] = problem[name];
  } else if (props.kernel) {
    params.kernel = "linear";
  }
  for (const name of Object.keys(params)) if (!(name in props)) return null;
  return params;
}

// Queue the race for `job` (every solver but those in `skip`, the job's own by default);
// returns {queued: [job], refused: [{solver, message}]}.
export async function race(job, skip = [job.solver]) {
  const solvers = (await api("/solvers")).data;
  const queued = [];
  const refused = [];
  for (const solver of solvers) {
    if (skip.includes(solver.name)) continue;
    const params = paramsFor(solver, job.problem);
    if (!params) continue;
    try {
      const created = await api("/jobs", { method: "POST", json: {
        dataset_id: job.dataset_id, params, time_limit_s: job.time_limit_s } });
      if (created.problem_key === job.problem_key) queued.push(created);
      else refused.push({ solver: solver.name, message: "posed another problem" });
    } catch (error) {
      refused.push({ solver: solver.name, message: error.describe ? error.describe() : String(error) });
    }
  }
  return { queued, refused };
}
