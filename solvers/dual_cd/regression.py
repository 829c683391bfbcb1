"""dual_cd on linear support vector regression: Ho & Lin's dual coordinate descent (JMLR 2012,
Algorithm 4; LIBLINEAR's ``solve_l2r_l1l2_svr``, ``-s 13`` L1 loss, ``-s 12`` L2 loss).

The problem is :class:`solvers.problems.RegressionProblem` (LIBLINEAR's objective and C):
minimize 1/2 ||w~||^2 + sum_i C_i L(y_i - w~ . x~_i), L = max(0, |r| - eps) or its square.
Ho & Lin's dual (their eq. (4) with beta, here b)::

    minimize f(b) = 1/2 b' (Q + diag(lam)) b - y'b + eps ||b||_1,  -U_i <= b_i <= U_i

with Q_ij = x~_i . x~_j, U_i = C_i and lam_i = 0 (L1), U_i = inf and lam_i = 1/(2 C_i) (L2):
-D(b) of the problem layer, the box and lam from the loss layer (the residual loss's dual
bounds and ``dual_quadratic``: C_i l*(v / C_i) = v^2 / (4 C_i) is 1/2 lam_i v^2).  The loop is
:func:`solvers.dual_cd.kernels.svr_epochs` (random permutations, Algorithm 4's one-variable
Newton step on the non-smooth eps |b_i|, LIBLINEAR's shrinking and relative stop).

Stopping: the certified relative duality gap (``tol``, every solver's rule), checked as the
classification driver checks it (after a pass's worth of steps, then whenever the descent ran
``gap_check_work`` times as long as the last check); ``eps`` (LIBLINEAR's -e, 0.1 for these
types) is then only the first threshold of LIBLINEAR's rule Gnorm1 <= eps Gnorm1_init, divided
by 10 each time the full set meets it with the gap above ``tol``.  ``stop_rule=
"projected_gradient"`` stops on LIBLINEAR's rule itself (uncertified).  There is no Newton
switch (LIBLINEAR has none for -s 12/13).

The solution is the w of lowest objective among the gap checks (P(w(b)) is not monotone along
the dual descent), certified against D at the last b.

Warm starts: ``WarmStart(dual=b)`` clipped into the box, or ``WarmStart(beta=...)`` through the
KKT map b_i = C_i L'(r_i) (:meth:`RegressionProblem.dual_from_primal`), w recomputed from b.
"""

from __future__ import annotations

import numpy as np

from solvers.base import Fit, Solution, SubproblemResult, WarmStart, warm_start_argument
from solvers.core.sparse import csr_matvec, row_norms_squared
from solvers.dual_cd.kernels import svr_epochs
from solvers.dual_cd.params import DUAL_CD_SOLVES, DualCDParams
from solvers.dual_cd.solver import (
    NewtonMethod,
    _generator,
    descend_with_gap_checks,
    newton_switch_at,
)
from solvers.models.regression import RegressionModel
from solvers.monitor import Continued, Monitor, NullMonitor, Reporter, Stopwatch
from solvers.problems import RegressionProblem
from solvers.termination import Termination


def _certificate(problem: RegressionProblem, b: np.ndarray, beta: np.ndarray
                 ) -> tuple[float, float, float]:
    """(P(w), D(b), relative gap): one pass over the data for the residuals."""
    w, intercept = problem.split(beta)
    primal = problem.objective_from_residuals(beta, problem.y - csr_matvec(problem.X, w,
                                                                           intercept))
    dual = problem.dual_objective(b, beta_b=beta)
    return primal, dual, (primal - dual) / max(abs(primal), 1e-300)


def solve_regression(problem: RegressionProblem, params: DualCDParams | None = None,
                     monitor: Monitor | None = None, start: WarmStart | None = None,
                     newton: NewtonMethod | None = None) -> Solution:
    """Solve ``problem`` (either residual loss; regularized bias or none) by Ho & Lin's dual
    coordinate descent from b = 0 or from ``start`` (the module docstring); returns the
    solution, ``extras["dual"]`` the final b.  ``newton``: the primal Newton method an L2-loss
    run hands w to at ``newton_switch_iter`` without a stop (LIBLINEAR's -s 12 -> -s 11;
    the registered spec's is mfn's; None: no switch)."""
    DUAL_CD_SOLVES.require("regression", problem.loss, problem.bias, solver="dual_cd")
    params = params or DualCDParams(C=problem.C, task="regression", loss=problem.loss,
                                    epsilon=problem.epsilon, bias=problem.bias,
                                    bias_scale=problem.bias_scale)
    start = warm_start_argument(start)
    reporter = Reporter(monitor, "relative_duality_gap")
    X = problem.X
    n = problem.n_samples
    s = problem.effective_bias_scale
    lower, upper = problem.dual_bounds()
    if start is not None and start.dual is not None:
        b = np.clip(np.asarray(start.dual, dtype=np.float64), lower, upper)
    elif start is not None and start.beta is not None:
        b = np.clip(problem.dual_from_primal(np.asarray(start.beta, dtype=np.float64)),
                    lower, upper)
    else:
        b = np.zeros(n)
    beta = problem.primal_from_dual(b)
    quadratic = problem.loss_function.dual_quadratic  # k: C_i l*(v / C_i) = k v^2 / C_i
    lam = np.ascontiguousarray(2.0 * quadratic / problem.cost) if quadratic else np.zeros(n)
    qd = np.empty(n)
    row_norms_squared(X.indptr, X.indices, X.data, qd)
    qd += s * s
    index = np.arange(n, dtype=np.int64)
    istate = np.array([n], dtype=np.int64)
    fstate = np.array([np.inf, -1.0])
    rng = _generator(params.permutation_seed)
    switch_at = newton_switch_at(params, problem) if newton is not None else None
    limit = params.max_iter if switch_at is None else switch_at
    upper = np.ascontiguousarray(upper)

    def descend(max_epochs, eps, budget):
        ran, met, relative, work = svr_epochs(
            X.indptr, X.indices, X.data, problem.y, s, qd, lam, upper, problem.epsilon, b,
            beta, index, istate, fstate, rng, max_epochs, eps, budget, params.shrinking)
        record = {"relative_violation": float(relative), "active_size": int(istate[0])}
        return ran, met, f"Gnorm1 {relative:.3g} of its first pass's", work, record

    best = {"primal": np.inf, "beta": beta.copy()}

    def certify():
        # P at the best w of the checks so far against D at the current b: a valid pair
        # (weak duality holds for any w and any b in the box), and P(w(b)) is not monotone
        # along the dual descent (the L1 loss's wanders by ~1e-5 relative near its optimum)
        primal, dual, _ = _certificate(problem, b, beta)
        if primal < best["primal"]:
            best["primal"], best["beta"][:] = primal, beta
        primal = best["primal"]
        return primal, dual, (primal - dual) / max(abs(primal), 1e-300)

    status, message, epochs, eps, total_work, checks, primal = descend_with_gap_checks(
        params, reporter, limit, max(X.nnz + n, 1), descend, certify)
    beta = best["beta"]
    # the certificate against D(b) at w(b) recomputed from b (the w kept by the steps
    # accumulates round-off)
    exact_dual = problem.dual_objective(b)
    gap = (primal - exact_dual) / max(abs(primal), 1e-300)
    extras = {"epochs": epochs, "gap_checks": checks, "relative_duality_gap": float(gap),
              "active_size": int(istate[0]), "final_eps": eps,
              "work_passes": total_work / max(X.nnz + n, 1),
              "nnz_dual": int(np.count_nonzero(b)), "dual": b}
    if status is None:
        return _switch_to_newton(problem, params, monitor, reporter, epochs, extras, beta,
                                 newton)
    return Solution(beta.copy(), float(primal), status, message, epochs, extras)


def _switch_to_newton(problem: RegressionProblem, params: DualCDParams, monitor, reporter,
                      epochs: int, extras: dict, beta: np.ndarray,
                      newton: NewtonMethod) -> Solution:
    """LIBLINEAR's train_one for ``-s 12``: dual CD that reaches its limit without the stop
    hands w to the primal Newton method (``-s 11``) from that point, here ``newton`` to the
    certified gap ``tol``; its records continue the run's (numbered after the epochs, tagged
    ``stage="newton"``), as the classification switch's (:mod:`solvers.dual_cd.solver`)."""
    continued = Continued(monitor if monitor is not None else NullMonitor(), epochs,
                          reporter.clock(), {"stage": "newton"})
    clock = Stopwatch()
    solution = newton(problem, beta.copy(), params.tol, continued)
    gap_at_switch = extras["relative_duality_gap"]
    extras = {**extras, "relative_duality_gap": float(problem.relative_duality_gap(
        solution.beta)), "dual": problem.dual_from_primal(solution.beta),
        "newton_switch": {"at_epoch": epochs, "gap_at_switch": gap_at_switch,
                          "newton_iterations": solution.iterations,
                          "seconds": clock(), "status": str(solution.status)}}
    message = (f"no stop after {epochs} outer iterations (newton_switch_iter; relative "
               f"duality gap {gap_at_switch:.3g}): switched to the Newton method from w, as "
               f"LIBLINEAR -s 12 switches to -s 11; {solution.message}")
    return Solution(solution.beta.copy(), float(solution.objective), solution.status,
                    message, epochs + solution.iterations, extras)


def fit_regression(dataset, spec, params: DualCDParams, monitor: Monitor,
                   newton: NewtonMethod | None = None) -> Fit:
    """``train`` handler of ``task="regression"``: the labels as real values, a
    :class:`~solvers.models.RegressionModel` (``newton``: as :func:`solve_regression`)."""
    problem = params.regression_problem(dataset.X, dataset.y, dataset.sample_weight)
    solution = solve_regression(problem, params, monitor, newton=newton)
    extras = {k: v for k, v in solution.extras.items() if k != "dual"}
    summary = SubproblemResult("regression", solution.objective, Termination(solution.status),
                               solution.message, solution.iterations, extras)
    return Fit(RegressionModel(*problem.split(solution.beta)), [summary])
