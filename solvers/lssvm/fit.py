"""Training with the least-squares family: the kernel system built once for every one-vs-rest
class, and the model (kernel, or linear for the linear kernel)."""

from __future__ import annotations

import numpy as np

from solvers import config
from solvers.base import Fit, SolverSpec
from solvers.core.kernels import Kernel
from solvers.core.sparse import csr_rmatvec
from solvers.lssvm.params import KernelSolverParams
from solvers.lssvm.smo import RelaxedSMO
from solvers.lssvm.systems import LSSVMDirect, LSSVMIterative, ProximalDirect, ProximalIterative
from solvers.models import KernelModel, LinearModel
from solvers.monitor import Monitor
from solvers.multiclass import fit_linear_one_vs_rest, n_score_rows, run_binary_subproblems


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


def _build_system(params, X, kernel: Kernel, cost):
    if params.solver == "relaxed_lssvm":
        return RelaxedSMO(X, kernel, cost, params.cache_mb)
    method = _resolve_method(params, X.shape[0])
    if params.solver == "lssvm":
        if method == "direct":
            return LSSVMDirect(X, kernel, cost)
        return LSSVMIterative(X, kernel, cost, params.cache_mb)
    if method == "direct":
        return ProximalDirect(X, kernel, cost, params.bias_scale)
    return ProximalIterative(X, kernel, cost, params.bias_scale, params.cache_mb)


def fit_kernel(dataset, spec: SolverSpec, params: KernelSolverParams, monitor: Monitor) -> Fit:
    """Classification with the solver's kernel problem, one-vs-rest for more classes.

    The kernel matrix, its factorization or its row cache is built once and shared by the
    binary problems.  A KernelModel keeps the rows with a nonzero coefficient in some class;
    with the linear kernel the weights w = sum_j coef_j x_j make a LinearModel instead.
    """
    if params.solver != "relaxed_lssvm" and params.kernel == "linear" and \
            _resolve_method(params, dataset.n_samples) == "iterative":
        return fit_linear_one_vs_rest(dataset, spec, params, monitor)
    X = dataset.X
    kernel = params.kernel_function()
    cost = _kernel_costs(dataset, params.C)
    system = _build_system(params, X, kernel, cost)

    def solve_one(y, sub_monitor):
        solution = system.solve(y, cost, params, sub_monitor)
        return solution, (solution.coef, solution.intercept)

    results = run_binary_subproblems(dataset, spec, monitor, solve_one)
    classes = dataset.classes
    n_rows = n_score_rows(dataset)
    coef = np.zeros((n_rows, dataset.n_samples))
    intercept = np.zeros(n_rows)
    for k, (_, (c, b)) in enumerate(results):
        coef[k], intercept[k] = c, b
    if kernel.name == "linear":
        weights = np.vstack([csr_rmatvec(X, row) for row in coef])
        model = LinearModel(weights, intercept, classes)
    else:
        keep = np.flatnonzero(np.any(coef != 0.0, axis=0))
        model = KernelModel(X[keep], coef[:, keep], intercept, classes, kernel)
    return Fit(model, [summary for summary, _ in results])
