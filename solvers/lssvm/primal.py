"""The linear-kernel problems of ``lssvm`` and ``proximal_svm`` in the primal, by CGLS."""

from __future__ import annotations

import numpy as np

from solvers.base import Solution, Termination, WarmStart, warm_start_argument
from solvers.core.linalg import cgls
from solvers.core.sparse import use_parallel
from solvers.lssvm.params import SystemParams
from solvers.monitor import Monitor, Reporter
from solvers.problems import BinaryProblem


def _eps_schedule(tol: float) -> list[float]:
    """0.1, 0.01, ... down to ``tol`` (the last round at exactly ``tol``)."""
    schedule = []
    eps = 0.1
    while eps > tol * (1.0 + 1e-12):
        schedule.append(eps)
        eps /= 10.0
    schedule.append(tol)
    return schedule


def run_linear(problem: BinaryProblem, params: SystemParams,
               monitor: Monitor | None = None, start: WarmStart | None = None) -> Solution:
    """The linear-kernel problem of ``lssvm`` (free bias) or ``proximal_svm`` (regularized
    bias) in the primal, by CGLS warm-started across tolerance rounds (never forming X'X);
    the registry's ``run`` for linear binary problems.  ``start``: a
    :class:`~solvers.base.WarmStart` whose ``beta`` (a nearby problem's solution) CGLS starts
    from, at the final eps; the rest of it is ignored.

    In CGLS's scaling the objective is divided by 2C: lambda = 1/(2C), row weights c_i.
    """
    solves = type(params).solves
    if not solves.allows("binary", problem.loss, params.bias, problem.p):
        raise ValueError(f"{params.solver} solves the {' or '.join(solves.losses)} loss, not "
                         f"{problem.loss!r}")
    if problem.bias != params.bias:
        raise ValueError(f"{params.solver} solves the {params.bias!r} bias mode, not "
                         f"{problem.bias!r}")
    if params.kernel != "linear":
        raise ValueError("the primal solver handles the linear kernel only; other kernels "
                         "train through solvers.train")
    report = Reporter(monitor, "relative_gradient_norm")
    X = problem.X
    weights = problem.cost / problem.C
    sqrt_c = np.sqrt(weights)
    rows = np.arange(problem.n_samples, dtype=np.int64)
    parallel = use_parallel(X.nnz, problem.n_features)
    beta = problem.zeros()
    grad0 = max(float(np.linalg.norm(problem.gradient(beta))), 1e-300)
    schedule = _eps_schedule(params.cg_tol)
    start = warm_start_argument(start)
    if start is not None and start.beta is not None:
        # a nearby problem's solution: CGLS from there, at the final eps
        beta = np.array(start.beta, dtype=np.float64)
        if problem.bias == "none":
            beta[-1] = 0.0
        schedule = schedule[-1:]
    used = 0
    status, message = Termination.MAX_ITER, f"max_iter={params.max_iter} CGLS iterations reached"
    for round_number, eps in enumerate(schedule, start=1):
        iterations, optimal = cgls(X, rows, sqrt_c, problem.y, beta,
                                   bias_scale=problem.effective_bias_scale,
                                   lam=1.0 / (2.0 * problem.C),
                                   reg_bias=problem.bias_regularization, eps=eps,
                                   max_iter=params.max_iter - used, parallel=parallel)
        used += iterations
        gradient_norm = float(np.linalg.norm(problem.gradient(beta)))
        if report(round_number, problem.objective(beta), gradient_norm / grad0,
                  cg_iterations=int(iterations), epsilon=float(eps)):
            status, message = Termination.STOPPED, report.stop_message
            break
        if not optimal:
            break
        if eps == params.cg_tol:
            status, message = Termination.CONVERGED, (
                f"converged: CGLS rule (13) met at eps={eps:g} after {used} iterations")
    return Solution(beta, problem.objective(beta), status, message, used,
                    {"cg_iterations": used, "method": "cgls"})
