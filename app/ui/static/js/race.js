// The race: queue every solver that solves a job's problem, all on that problem and at one
// tol (the certified gap every solver that has one stops at), then compare them.  Which
// parameters pose the problem to which solver is the library's rule (POST /solvers/pose, the
// one auto uses), not restated here.
import { api } from "./common.js";

// Queue the race for `job` (every solver but those in `skip`, the job's own by default) at the
// job's tol (or every solver's default when its solver has none); returns {queued: [job],
// refused: [{solver, message}]}.
export async function race(job, skip = [job.solver]) {
  const tol = job.params && typeof job.params.tol === "number" ? job.params.tol : null;
  const posed = (await api("/solvers/pose", { method: "POST", json: { problem: job.problem, tol } })).data;
  const queued = [];
  const refused = [];
  for (const { solver, params } of posed) {
    if (skip.includes(solver) || !params) continue;
    try {
      const created = await api("/jobs", { method: "POST", json: {
        dataset_id: job.dataset_id, params, time_limit_s: job.time_limit_s } });
      if (created.problem_key === job.problem_key) queued.push(created);
      else refused.push({ solver, message: "posed another problem" });
    } catch (error) {
      refused.push({ solver, message: error.describe ? error.describe() : String(error) });
    }
  }
  return { queued, refused };
}
