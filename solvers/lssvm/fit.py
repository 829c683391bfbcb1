"""Training with the least-squares family: the kernel system built once for every one-vs-rest
class, and the model (kernel, or linear for the linear kernel)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from solvers import config
from solvers.base import Fit, InvalidParametersError, SolverSpec
from solvers.lssvm.params import KernelSolverParams
from solvers.lssvm.smo import RelaxedSMO
from solvers.lssvm.systems import (
    KernelWork,
    LSSVMDirect,
    LSSVMIterative,
    ProximalDirect,
    ProximalIterative,
)
from solvers.models import Model
from solvers.monitor import Monitor, NullMonitor
from solvers.multiclass import (
    fit_linear_one_vs_rest,
    fit_linear_path,
    kernel_expansion_model,
    run_binary_subproblems,
    timed_path,
)


def _kernel_costs(dataset, C: float) -> np.ndarray:
    weights = dataset.sample_weight
    if weights is None:
        return np.full(dataset.n_samples, float(C))
    if np.any(weights <= 0):
        raise ValueError("the kernel LS-SVM solvers need positive sample weights (a zero weight "
                         "makes 1/C_i infinite); drop those examples first")
    return float(C) * weights


def _resolve_method(params, n: int) -> str:
    if params.method != "auto":
        return params.method
    if params.kernel == "linear":
        return "iterative"
    limit = config.LSSVM_DIRECT_MAX_ROWS if params.solver == "lssvm" else \
        config.PROXIMAL_DIRECT_MAX_ROWS
    return "direct" if n <= limit else "iterative"


def dense_system(params, n_samples: int, n_features: int) -> tuple[str, int] | None:
    """The spec's ``dense_system``: a direct solve of lssvm or proximal_svm (chosen, or by
    ``method="auto"`` for small n) factorizes an n_samples x n_samples kernel system, for
    the linear kernel too (its primal CGLS is the iterative method)."""
    if params.solver == "relaxed_lssvm" or _resolve_method(params, n_samples) != "direct":
        return None
    return ("a direct solve of the kernel system (a dense n_samples x n_samples matrix)",
            n_samples)


def uses_row_cache(params, n_samples: int) -> bool:
    """Whether a run with these parameters (those the solver runs with: on a low-rank factor,
    the linear kernel's) computes kernel rows through the row cache, where
    :func:`check_kernel_size` applies: the relaxed LS-SVM's SMO and the iterative kernel
    systems; not the linear kernel's primal CGLS, nor a direct solve (one dense matrix,
    bounded by the size of the direct solve)."""
    if params.solver == "relaxed_lssvm":
        return True
    return not _primal(params, n_samples) and _resolve_method(params, n_samples) != "direct"


def kernel_rows_limit(cache_mb: float) -> int:
    """The most training rows whose n x n kernel matrix fits in ``cache_mb`` MiB of float64:
    the practical limit of the family's kernel path (package docstring, "Practical size")."""
    return int(math.isqrt(int(cache_mb * 2**20) // 8))


def check_kernel_size(params, n_samples: int) -> None:
    """Refuse, before any kernel row is computed, a kernel problem whose kernel matrix does
    not fit the row cache: every CG iteration (SMO epoch) would recompute most rows, and the
    run takes minutes instead of seconds (ijcnn1, RBF: 5,000 rows 4.5 s, 10,000 rows 249 s)."""
    limit = kernel_rows_limit(params.cache_mb)
    if n_samples > limit:
        raise InvalidParametersError(
            f"{params.solver} with kernel={params.kernel!r}: {n_samples} training rows exceed "
            f"the kernel path's practical limit of {limit} rows at cache_mb={params.cache_mb:g} "
            f"(the rows whose {limit} x {limit} kernel matrix fits the cache; beyond it every "
            f"iteration recomputes most kernel rows and a run takes minutes).  Use "
            f"approximation='nystrom' (or 'icf') with a rank, which trains on a low-rank "
            f"factor, or raise cache_mb to about {8 * n_samples**2 / 2**20:.0f} MiB")


def _build_system(params, work: KernelWork, cost):
    if params.solver == "relaxed_lssvm":
        return RelaxedSMO(work)
    method = _resolve_method(params, work.X.shape[0])
    if params.solver == "lssvm":
        if method == "direct":
            return LSSVMDirect(work, cost)
        return LSSVMIterative(work, cost)
    if method == "direct":
        return ProximalDirect(work, cost, params.bias_scale)
    return ProximalIterative(work, cost, params.bias_scale)


def _primal(params, n_samples: int) -> bool:
    """The linear kernel solved iteratively goes to the primal CGLS (one-vs-rest over
    ``run_linear``), except for the relaxed LS-SVM."""
    return params.solver != "relaxed_lssvm" and params.kernel == "linear" and \
        _resolve_method(params, n_samples) == "iterative"


def fit_kernel(dataset, spec: SolverSpec, params: KernelSolverParams, monitor: Monitor,
               work: KernelWork | None = None) -> Fit:
    """Classification with the solver's kernel problem, one-vs-rest for more classes.

    The kernel matrix, its factorization or its row cache is built once and shared by the
    binary problems (and, given ``work``, the kernel matrix and row cache by every C of a
    path, whose iterative solves start from the last C's).  A KernelModel keeps the rows
    with a nonzero coefficient in some class; with the linear kernel the weights w = sum_j
    coef_j x_j make a LinearModel instead.
    """
    if _primal(params, dataset.n_samples):
        return fit_linear_one_vs_rest(dataset, spec, params, monitor)
    X = dataset.X
    if work is None:
        if uses_row_cache(params, dataset.n_samples):
            check_kernel_size(params, dataset.n_samples)
        work = KernelWork(X, params.kernel_function(), params.cache_mb)
    kernel = work.kernel
    starts = work.starts  # a path's last C's solutions (empty for a fresh work)
    cost = _kernel_costs(dataset, params.C)
    system = _build_system(params, work, cost)
    position = itertools.count()

    def solve_one(y, sub_monitor):
        k = next(position)  # the one-vs-rest subproblems come in the same order at every C
        solution = system.solve(y, cost, params, sub_monitor, start=starts.get(k))
        if solution.unknown is not None:
            starts[k] = solution.unknown
        return solution, (solution.coef, solution.intercept)

    results = run_binary_subproblems(dataset, spec, monitor, solve_one)
    return Fit(kernel_expansion_model(X, results, dataset, kernel),
               [summary for summary, _ in results])


def fit_kernel_path(dataset, spec: SolverSpec,
                    points: list[KernelSolverParams]) -> list[tuple[Model, float, float]]:
    """Path handler of task ``classification`` (cross-validation's C path; the points differ
    in C only): the primal CGLS of the linear kernel warm-started from the last C's solution
    (:func:`solvers.multiclass.fit_linear_path` over ``run_linear``), otherwise the kernel
    matrix, its square and the row cache built once (:class:`KernelWork`) and each C's system
    solved on them, the iterative ones by CG from the last C's solution.  Returns (model,
    objective, seconds) per point."""
    if _primal(points[0], dataset.n_samples):
        return fit_linear_path(dataset, spec, points)
    if uses_row_cache(points[0], dataset.n_samples):
        check_kernel_size(points[0], dataset.n_samples)
    work = KernelWork(dataset.X, points[0].kernel_function(), points[0].cache_mb)

    def fit_point(params):
        fit = fit_kernel(dataset, spec, params, NullMonitor(), work)
        return fit.model, sum(s.objective for s in fit.subproblems)

    return timed_path(points, fit_point)
