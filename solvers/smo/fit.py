"""Training with ``smo``: binary, one-vs-rest (one cache for every class) and one-vs-one
(LIBSVM's: one C-SVC per pair of classes on their rows, each with its own cache)."""

from __future__ import annotations

import numba
import numpy as np

from solvers.base import Fit, SolverSpec, SubproblemResult, Termination
from solvers.core.kernels import KernelCache
from solvers.core.sparse import threadsafe_threading_layer
from solvers.data.dataset import label_key
from solvers.models import KernelModel
from solvers.monitor import Monitor
from solvers.multiclass import (
    SubproblemMonitor,
    binary_targets,
    kernel_expansion_model,
    run_binary_subproblems,
    solve_subproblems,
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
    rows of a (+1) and b (-1), each with its own kernel-row cache; the model votes.
    gamma="scale" is computed once on the whole training set (as scikit-learn).

    The pairs are independent: with t > 1 Numba threads (and a threading layer that lets
    threads run kernels at once) t of them are solved at a time, one per thread
    (:func:`solvers.multiclass.solve_subproblems`), each with a cache of ``cache_mb`` / t, so
    that the caches together stay within ``cache_mb``.  LIBSVM solves them one after another
    (each with the whole ``cache_size``); every pair's solution is the same either way."""
    X = dataset.X
    classes = dataset.classes
    k = classes.shape[0]
    kernel = params.kernel_function(X)
    cost = _costs(dataset, params.C)
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    threads = numba.get_num_threads()
    if threads > 1 and not threadsafe_threading_layer():
        threads = 1
    at_once = max(1, min(threads, len(pairs)))
    coef = np.zeros((len(pairs), dataset.n_samples))
    intercept = np.zeros(len(pairs))
    counter = [0]
    pair_rows: list[np.ndarray | None] = [None] * len(pairs)  # filled by each pair's solve

    def tag(p: int) -> str:
        a, b = pairs[p]
        return f"{label_key(classes[a])}-{label_key(classes[b])}"

    def solve_pair(p: int, pair_monitor: Monitor):
        a, b = pairs[p]
        rows = pair_rows[p] = np.flatnonzero((dataset.y == classes[a]) |
                                             (dataset.y == classes[b]))
        y = np.where(dataset.y[rows] == classes[a], 1.0, -1.0)
        cache = KernelCache(X[rows], kernel, params.cache_mb / at_once, min_rows=2)
        return CSVC(cache).solve(y, cost[rows], params, pair_monitor)

    def tagged(p: int, clock) -> SubproblemMonitor:
        return SubproblemMonitor(monitor, counter, p, tag(p), len(pairs), clock, kind="pair")

    solutions = solve_subproblems(len(pairs), solve_pair, monitor, tagged, at_once)
    summaries = []
    for p, solution in enumerate(solutions):
        coef[p, pair_rows[p]] = solution.coef
        intercept[p] = solution.intercept
        summaries.append(SubproblemResult(tag(p), solution.objective,
                                          Termination(solution.status), solution.message,
                                          solution.iterations, solution.extras))
    model = _model(X, coef, intercept, classes, kernel, "ovo")
    return Fit(model, summaries)
