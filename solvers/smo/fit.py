"""Training with ``smo``: binary, one-vs-rest (one cache for every class) and one-vs-one
(LIBSVM's: one C-SVC per pair of classes on their rows, each with its own cache)."""

from __future__ import annotations

import numpy as np

from solvers.base import Fit, SolverSpec, SubproblemResult, Termination
from solvers.core.kernels import KernelCache
from solvers.data.dataset import label_key
from solvers.models import KernelModel
from solvers.monitor import Monitor, Stopwatch
from solvers.multiclass import (
    SubproblemMonitor,
    binary_targets,
    kernel_expansion_model,
    run_binary_subproblems,
    subproblem_weight,
)
from solvers.smo.params import SMOParams
from solvers.smo.solver import CSVC


def _costs(dataset, C: float, weights=None) -> np.ndarray:
    """C_i = C * weight_i, the weights ``dataset.sample_weight`` unless given (a zero weight
    leaves the example out: alpha_i = 0)."""
    weights = dataset.sample_weight if weights is None else weights
    if weights is None:
        return np.full(dataset.n_samples, float(C))
    if np.any(weights < 0):
        raise ValueError("sample weights must be non-negative")
    return float(C) * np.asarray(weights, dtype=np.float64)


def _model(X, coef: np.ndarray, intercept: np.ndarray, classes, kernel,
           multiclass: str) -> KernelModel:
    keep = np.flatnonzero(np.any(coef != 0.0, axis=0))
    return KernelModel(X[keep], coef[:, keep], intercept, classes, kernel,
                       multiclass=multiclass)


def fit_csvc(dataset, spec: SolverSpec, params: SMOParams, monitor: Monitor) -> Fit:
    """Binary C-SVC (``classes[1]`` is +1), or one-vs-rest for more classes; one kernel-row
    cache serves every class.  With the linear kernel the model is a LinearModel,
    w = sum_j coef_j x_j (as the least-squares family's): the same function, predicted by one
    product per row."""
    X = dataset.X
    kernel = params.kernel_function(X)
    cache = KernelCache(X, kernel, params.cache_mb, min_rows=2)
    system = CSVC(cache)
    targets = iter([positive for _, positive in binary_targets(dataset, spec)])

    def solve_one(y, sub_monitor):
        # each problem's own costs: one-vs-rest class weights scale its positive class only
        # (LIBLINEAR's rule, solvers.multiclass.subproblem_weight)
        weights = subproblem_weight(dataset, next(targets))
        cost = _costs(dataset, params.C, weights)
        solution = system.solve(y, cost, params, sub_monitor)
        return solution, (solution.coef, solution.intercept)

    results = run_binary_subproblems(dataset, spec, monitor, solve_one, weighted=True)
    return Fit(kernel_expansion_model(X, results, dataset, kernel),
               [summary for summary, _ in results])


def fit_one_vs_one(dataset, spec: SolverSpec, params: SMOParams, monitor: Monitor) -> Fit:
    """LIBSVM's one-vs-one: for every pair of classes a < b (in sorted order) a C-SVC on the
    rows of a (+1) and b (-1), each with its own kernel-row cache of ``cache_mb``; the model
    votes.  gamma="scale" is computed once on the whole training set (as scikit-learn)."""
    X = dataset.X
    classes = dataset.classes
    k = classes.shape[0]
    kernel = params.kernel_function(X)
    cost = _costs(dataset, params.C)
    coef = np.zeros((k * (k - 1) // 2, dataset.n_samples))
    intercept = np.zeros(k * (k - 1) // 2)
    counter = [0]
    clock = Stopwatch()  # the run's time: records' elapsed is monotonic across the pairs
    summaries = []
    p = 0
    for a in range(k):
        for b in range(a + 1, k):
            rows = np.flatnonzero((dataset.y == classes[a]) | (dataset.y == classes[b]))
            y = np.where(dataset.y[rows] == classes[a], 1.0, -1.0)
            tag = f"{label_key(classes[a])}-{label_key(classes[b])}"
            cache = KernelCache(X[rows], kernel, params.cache_mb, min_rows=2)
            pair_monitor = SubproblemMonitor(monitor, counter, p, tag, k * (k - 1) // 2, clock,
                                             kind="pair")
            solution = CSVC(cache).solve(y, cost[rows], params, pair_monitor)
            coef[p, rows] = solution.coef
            intercept[p] = solution.intercept
            summaries.append(SubproblemResult(tag, solution.objective,
                                              Termination(solution.status), solution.message,
                                              solution.iterations, solution.extras))
            p += 1
            if solution.status == Termination.STOPPED:
                break
        else:
            continue
        break
    model = _model(X, coef, intercept, classes, kernel, "ovo")
    return Fit(model, summaries)
