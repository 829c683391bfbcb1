"""The engine of ``newton``: LIBLINEAR's truncated Newton method with the certified gap (the
package docstring states the problem, the method and the mapping)."""

from __future__ import annotations

import math

import numpy as np

from solvers.base import Solution, WarmStart, warm_start_argument
from solvers.core.linalg import conjugate_gradient, dot
from solvers.core.sparse import csr_matvec
from solvers.monitor import Monitor, Reporter
from solvers.newton.compiled import (
    CG_ITERATIONS,
    CONVERGED_GAP,
    CONVERGED_GRADIENT,
    DUAL,
    GAP,
    GRADIENT_NORM,
    ITERATION,
    LINE_SEARCH_FAILED,
    MAX_ITER,
    OBJECTIVE,
    STEP_SIZE,
    TRIALS,
    compiled_applies,
    newton_loop,
)
from solvers.newton.params import NEWTON_SOLVES, NewtonParams
from solvers.problems import BinaryProblem
from solvers.termination import Termination

#: LIBLINEAR's line search (``function::linesearch_and_update``): sufficient decrease
#: f(w + a s) - f(w) <= eta a g's, a halved from 1 at most 20 times
ARMIJO_ETA = 0.01
MAX_LINE_SEARCH = 20


class _Point:
    """An iterate and what one pass over the rows gives at it: the outputs X~beta, the slacks,
    the objective, the KKT map's alpha, its image and the gradient, and the Hessian's weights."""

    def __init__(self, problem: BinaryProblem, beta: np.ndarray, outputs: np.ndarray,
                 objective: float | None = None):
        self.beta = beta
        self.outputs = outputs
        self.xi = 1.0 - problem.y * outputs
        self.objective = problem.objective_from_slacks(beta, self.xi) if objective is None \
            else objective
        self.alpha, self.image, self.gradient = problem.first_order(beta, self.xi)

    def certificate(self, problem: BinaryProblem) -> tuple[float, float]:
        """(D(alpha), the relative gap (P - D)/P) at this point: the KKT map's alpha (balanced
        for the free bias, :meth:`BinaryProblem.balance`: one more pass)."""
        if problem.bias == "free":
            dual = problem.dual_objective(problem.balance(self.alpha))
        else:
            dual = problem.dual_objective(self.alpha, beta_alpha=self.image)
        return dual, (self.objective - dual) / max(abs(self.objective), 1e-300)


def _outputs(problem: BinaryProblem, v: np.ndarray) -> np.ndarray:
    """X~ v (one pass)."""
    w, intercept = problem.split(v)
    return csr_matvec(problem.X, w, intercept)


def _line_search(problem: BinaryProblem, point: _Point, step: np.ndarray
                 ) -> tuple[_Point | None, float, int]:
    """LIBLINEAR's backtracking from a = 1 along ``step``: the first a = 2^-k with f(w + a s)
    - f(w) <= eta a g's (k < 20), from X~s computed once (each trial's outputs are X~w + a
    X~s: no pass over the rows).  Returns (the new point, a, trials), or (None, 0, trials)
    when no trial decreases f enough."""
    direction = _outputs(problem, step)
    slope = dot(point.gradient, step)
    a = 1.0
    for trial in range(1, MAX_LINE_SEARCH + 1):
        beta = point.beta + a * step
        outputs = point.outputs + a * direction
        value = problem.objective_from_slacks(beta, 1.0 - problem.y * outputs)
        if value - point.objective <= ARMIJO_ETA * a * slope:
            return _Point(problem, beta, outputs, value), a, trial
        a *= 0.5
    return None, 0.0, MAX_LINE_SEARCH


def _newton_step(problem: BinaryProblem, params: NewtonParams, point: _Point, cg_tol: float,
                 max_cg: int) -> tuple[np.ndarray, int]:
    """The truncated Newton step: PCG on H s = -g, H = I_r + X~'DX~ at the point, with M =
    (1 - alpha) I + alpha diag(H) (alpha = ``preconditioning``), stopped by Nash & Sofer's
    rule at min(cg_tol, sqrt(||g||_M^-1)) (LIBLINEAR's ``NEWTON::pcg``)."""
    curvature = problem.curvature(point.xi)
    a = params.preconditioning
    M = (1.0 - a) + a * problem.hessian_diagonal(curvature) if a > 0.0 else \
        np.ones(problem.n_features + 1)
    g = point.gradient
    g_norm_m = math.sqrt(max(dot(g, g / M), 0.0))
    result = conjugate_gradient(lambda v: problem.hessian_product(curvature, v), -g,
                                precondition=lambda r: r / M, rtol=0.0, max_iter=max_cg,
                                quadratic_tol=min(cg_tol, math.sqrt(g_norm_m)), inner=dot)
    step = result.x
    if problem.bias == "none":
        step[-1] = 0.0
    return step, result.iterations


def solve(problem: BinaryProblem, params: NewtonParams | None = None,
          monitor: Monitor | None = None, start: WarmStart | None = None, *,
          driver: str | None = None) -> Solution:
    """Solve the binary ``problem`` (logistic or squared hinge) by the truncated Newton method
    from beta = 0 or from ``start.beta`` (a :class:`~solvers.base.WarmStart`; its other fields
    are ignored), to the certified gap ``tol`` (or LIBLINEAR's gradient rule).  ``driver``:
    "compiled" (:mod:`solvers.newton.compiled`, the loop as one Numba function) or "python"
    (this module's loop); None: compiled where :func:`~solvers.newton.compiled.
    compiled_applies` (a small problem), else Python.  Same method, stops and certificate."""
    NEWTON_SOLVES.require_problem(problem, "newton")
    params = params or NewtonParams(C=problem.C, loss=problem.loss, bias=problem.bias,
                                    bias_scale=problem.bias_scale)
    start = warm_start_argument(start)
    reporter = Reporter(monitor, "relative_duality_gap")
    warm = start is not None and start.beta is not None
    beta = np.array(start.beta, dtype=np.float64) if warm else problem.zeros()
    if problem.bias == "none":
        beta[-1] = 0.0
    cg_tol = params.cg_tol if params.cg_tol is not None else (0.5 if warm else 0.1)
    max_cg = params.max_cg_iter or max(problem.n_features + 1, 5)
    gap_rule = params.stop_rule == "gap"
    gradient_bound = 0.0
    if not gap_rule:  # LIBLINEAR's: relative to the gradient at w = 0
        zero = problem.zeros()
        positives = int(np.count_nonzero(problem.y > 0))
        share = max(min(positives, problem.n_samples - positives), 1) / problem.n_samples
        g0 = _Point(problem, zero, np.zeros(problem.n_samples)).gradient
        gradient_bound = params.eps * share * math.sqrt(dot(g0, g0))
    if driver is None:
        driver = "compiled" if compiled_applies(problem, params.max_iter) else "python"
    if driver == "compiled":
        return _solve_compiled(problem, params, reporter, beta, gap_rule, gradient_bound,
                               cg_tol, max_cg)
    point = _Point(problem, beta, _outputs(problem, beta))
    dual, gap = point.certificate(problem)
    iteration = cg_total = 0
    status = message = None
    extras_last: dict = {}
    while True:
        g_norm = math.sqrt(dot(point.gradient, point.gradient))
        if gap_rule and gap <= params.tol:
            status, message = Termination.CONVERGED, (f"converged: relative duality gap "
                                                      f"{gap:.3g} <= tol={params.tol:g}")
        elif not gap_rule and g_norm <= gradient_bound:
            status, message = Termination.CONVERGED, (
                f"converged: gradient norm {g_norm:.3g} <= eps max(min(#pos, #neg), 1) / n "
                f"||g(0)|| = {gradient_bound:.3g} (LIBLINEAR's rule)")
        elif iteration >= params.max_iter:
            status, message = Termination.MAX_ITER, (f"max_iter={params.max_iter} Newton "
                                                     f"iterations reached (relative duality "
                                                     f"gap {gap:.3g})")
        if iteration > 0 or status is not None:
            stop = reporter(iteration, point.objective, gap, dual_objective=dual,
                            gradient_norm=g_norm, **extras_last)
            if status is None and stop:
                status, message = Termination.STOPPED, reporter.stop_message
        if status is not None:
            break
        step, cg_iterations = _newton_step(problem, params, point, cg_tol, max_cg)
        cg_total += cg_iterations
        iteration += 1
        new, step_size, trials = _line_search(problem, point, step)
        if new is None:
            status, message = Termination.NUMERICAL_ERROR, (
                f"the line search found no sufficient decrease along the Newton step in "
                f"{MAX_LINE_SEARCH} halvings (round-off at this accuracy; LIBLINEAR stops "
                f"there too): relative duality gap {gap:.3g}")
            reporter(iteration, point.objective, gap, dual_objective=dual,
                     gradient_norm=g_norm, cg_iterations=cg_iterations, step_size=0.0)
            break
        point = new
        dual, gap = point.certificate(problem)
        extras_last = {"cg_iterations": cg_iterations, "step_size": step_size,
                       "line_search_trials": trials}
    extras = {"relative_duality_gap": float(gap), "newton_iterations": iteration,
              "cg_iterations": cg_total, "dual_objective": float(dual), "driver": "python"}
    return Solution(point.beta.copy(), float(point.objective), status, message, iteration,
                    extras)


_STATUS = {CONVERGED_GAP: Termination.CONVERGED, CONVERGED_GRADIENT: Termination.CONVERGED,
           MAX_ITER: Termination.MAX_ITER, LINE_SEARCH_FAILED: Termination.NUMERICAL_ERROR}


def _run_loop(problem: BinaryProblem, params: NewtonParams, beta: np.ndarray, gap_rule: bool,
              gradient_bound: float, cg_tol: float, max_cg: int, max_iter: int):
    """:func:`~solvers.newton.compiled.newton_loop` on ``problem`` from ``beta`` (updated in
    place) for at most ``max_iter`` iterations: (status code, iterations, records, CG
    iterations, P, D, gap)."""
    X = problem.X
    records = np.empty((max_iter + 2, 8))
    loss = problem.loss_function
    result = newton_loop(X.indptr, X.indices, X.data, problem.squared_values(), problem.y,
                         problem.cost, loss.code, loss.p, problem.effective_bias_scale,
                         problem.bias_regularization, problem.bias == "none", beta, gap_rule,
                         params.tol, gradient_bound, max_iter, cg_tol, params.preconditioning,
                         max_cg, ARMIJO_ETA, MAX_LINE_SEARCH, records)
    status, iterations, written, cg_total, objective, dual, gap = result
    return int(status), int(iterations), records[:written], int(cg_total), objective, dual, gap


def _solve_compiled(problem: BinaryProblem, params: NewtonParams, reporter: Reporter,
                    beta: np.ndarray, gap_rule: bool, gradient_bound: float, cg_tol: float,
                    max_cg: int) -> Solution:
    """:func:`solve` by the compiled loop: the loop runs to its stop, then its records go to
    the monitor as the Python loop reports them; a stop asked at a record returns that
    record's point (the loop run again to its iteration) with status ``stopped``."""
    start = beta.copy()
    status, iterations, records, cg_total, objective, dual, gap = _run_loop(
        problem, params, beta, gap_rule, gradient_bound, cg_tol, max_cg, params.max_iter)
    for k, row in enumerate(records):
        extras = {"dual_objective": float(row[DUAL]), "gradient_norm": float(row[GRADIENT_NORM])}
        if row[CG_ITERATIONS] >= 0:
            extras["cg_iterations"] = int(row[CG_ITERATIONS])
            extras["step_size"] = float(row[STEP_SIZE])
            if row[TRIALS] >= 0:
                extras["line_search_trials"] = int(row[TRIALS])
        stop = reporter(int(row[ITERATION]), row[OBJECTIVE], row[GAP], **extras)
        if stop and k < len(records) - 1:
            # the point of this record: the loop again, to its iteration (deterministic)
            at = int(row[ITERATION])
            beta = start.copy()
            _, iterations, _, cg_total, objective, dual, gap = _run_loop(
                problem, params, beta, gap_rule, gradient_bound, cg_tol, max_cg, at)
            extras = {"relative_duality_gap": float(gap), "newton_iterations": iterations,
                      "cg_iterations": cg_total, "dual_objective": float(dual),
                      "driver": "compiled"}
            return Solution(beta, float(objective), Termination.STOPPED, reporter.stop_message,
                            iterations, extras)
    code = _STATUS[status]
    if status == CONVERGED_GAP:
        message = f"converged: relative duality gap {gap:.3g} <= tol={params.tol:g}"
    elif status == CONVERGED_GRADIENT:
        g_norm = float(records[-1][GRADIENT_NORM])
        message = (f"converged: gradient norm {g_norm:.3g} <= eps max(min(#pos, #neg), 1) / n "
                   f"||g(0)|| = {gradient_bound:.3g} (LIBLINEAR's rule)")
    elif status == MAX_ITER:
        message = (f"max_iter={params.max_iter} Newton iterations reached (relative duality "
                   f"gap {gap:.3g})")
    else:
        message = (f"the line search found no sufficient decrease along the Newton step in "
                   f"{MAX_LINE_SEARCH} halvings (round-off at this accuracy; LIBLINEAR stops "
                   f"there too): relative duality gap {gap:.3g}")
    extras = {"relative_duality_gap": float(gap), "newton_iterations": iterations,
              "cg_iterations": cg_total, "dual_objective": float(dual), "driver": "compiled"}
    return Solution(beta, float(objective), code, message, iterations, extras)


def run(problem: BinaryProblem, params: NewtonParams, monitor: Monitor,
        start: WarmStart | None = None) -> Solution:
    """The spec's entry point (binary problems; one-vs-rest through the multiclass layer);
    ``start``: a :class:`~solvers.base.WarmStart` whose ``beta`` it starts from."""
    return solve(problem, params, monitor, start=warm_start_argument(start))
