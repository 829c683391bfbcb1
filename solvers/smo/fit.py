"""Training with ``smo``: the classifiers (C-SVC, nu-SVC) binary, one-vs-rest (one cache for
every class) and one-vs-one (LIBSVM's: one problem per pair of classes on their rows, each with
its own cache); one-class and the regressions (epsilon-SVR, nu-SVR), one problem each."""

from __future__ import annotations

import threading

import numba
import numpy as np

from solvers.base import Fit, SolverSpec, SubproblemResult, Termination
from solvers.core.kernels import KernelCache, column_operand, row_operand, take_operands
from solvers.core.sparse import threadsafe_threading_layer
from solvers.data.dataset import label_key
from solvers.models import KernelModel
from solvers.models.kernel import KernelRegressionModel, OneClassKernelModel
from solvers.monitor import Monitor
from solvers.multiclass import (
    SubproblemMonitor,
    binary_targets,
    kernel_expansion_model,
    run_binary_subproblems,
    solve_subproblems,
    subproblem_weight,
)
from solvers.problems.libsvm import LibsvmProblem
from solvers.smo.params import SMOParams
from solvers.smo.solver import SMOSolver


def _costs(dataset, C: float, weights=None) -> np.ndarray:
    """C_i = C * weight_i, the weights ``dataset.sample_weight`` unless given (a zero weight
    leaves the example out: alpha_i = 0)."""
    weights = dataset.sample_weight if weights is None else weights
    if weights is None:
        return np.full(dataset.n_samples, float(C))
    if np.any(weights < 0):
        raise ValueError("sample weights must be non-negative")
    return float(C) * np.asarray(weights, dtype=np.float64)


def _classifier_cost(params: SMOParams, dataset, weights=None) -> np.ndarray:
    """The bounds of the classifier ``params.svm_type`` poses: C-SVC's C_i = C weight_i,
    nu-SVC's weight_i (1 in LIBSVM's scaling: nu-SVC reads no C)."""
    return _costs(dataset, 1.0 if params.svm_type == "nu_svc" else params.C, weights)


def _classifier(params: SMOParams, y: np.ndarray, cost: np.ndarray) -> LibsvmProblem:
    """The binary problem of ``params.svm_type`` on labels ``y`` (+-1) with bounds ``cost``
    (:func:`_classifier_cost`)."""
    return LibsvmProblem(params.svm_type, y, cost, nu=params.nu)


def _expansion(X, pair_rows: list[np.ndarray], solutions, classes, kernel,
               multiclass: str) -> KernelModel:
    """The model of problems posed on subsets of the rows (``pair_rows[p]``, increasing):
    coef[p, j] = problem p's coefficient of training row keep[j], keep the rows some problem
    uses, in order; a problem without a solution (a stopped run) keeps zeros."""
    used = [rows[solution.coef != 0.0]
            for rows, solution in zip(pair_rows[:len(solutions)], solutions, strict=True)]
    keep = np.unique(np.concatenate(used)) if used else np.empty(0, np.int64)
    coef = np.zeros((len(pair_rows), keep.shape[0]))
    intercept = np.zeros(len(pair_rows))
    for p, (rows, solution) in enumerate(zip(used, solutions, strict=True)):
        coef[p, np.searchsorted(keep, rows)] = solution.coef[solution.coef != 0.0]
        intercept[p] = solution.intercept
    return KernelModel(X[keep], coef, intercept, classes, kernel, multiclass=multiclass)


def fit_csvc(dataset, spec: SolverSpec, params: SMOParams, monitor: Monitor) -> Fit:
    """Binary C-SVC (``classes[1]`` is +1), or one-vs-rest for more classes; one kernel-row
    cache serves every class.  With the linear kernel the model is a LinearModel,
    w = sum_j coef_j x_j (as the least-squares family's): the same function, predicted by one
    product per row."""
    X = dataset.X
    kernel = params.kernel_function(X)
    cache = KernelCache(X, kernel, params.cache_mb, min_rows=2)
    system = SMOSolver(cache)
    targets = iter([positive for _, positive in binary_targets(dataset, spec)])

    def solve_one(y, sub_monitor):
        # each problem's own costs: one-vs-rest class weights scale its positive class only
        # (LIBLINEAR's rule, solvers.multiclass.subproblem_weight)
        weights = subproblem_weight(dataset, next(targets))
        problem = _classifier(params, y, _classifier_cost(params, dataset, weights))
        solution = system.solve(problem, params, sub_monitor)
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
    (each with the whole ``cache_size``); every pair's solution is the same either way.

    What a pair costs besides its SMO is kept small (letter's 325 pairs multiply it): the
    kernel operands of the whole set are built once and each pair's taken from them
    (:func:`solvers.core.kernels.take_operands`, not a submatrix and its conversions), each
    thread stores its caches' rows in one buffer reused from pair to pair, and the model is
    assembled over the support rows only."""
    X = dataset.X
    classes = dataset.classes
    k = classes.shape[0]
    kernel = params.kernel_function(X)
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    threads = numba.get_num_threads()
    if threads > 1 and not threadsafe_threading_layer():
        threads = 1
    at_once = max(1, min(threads, len(pairs)))
    counter = [0]
    members = [np.flatnonzero(dataset.y == c) for c in classes]
    pair_rows = [np.sort(np.concatenate([members[a], members[b]])) for a, b in pairs]
    # every pair posed (and nu-SVC's feasibility checked) before any is solved
    cost = _classifier_cost(params, dataset)
    problems = [_classifier(params, np.where(dataset.y[rows] == classes[a], 1.0, -1.0),
                            cost[rows])
                for (a, _), rows in zip(pairs, pair_rows, strict=True)]
    operands = (row_operand(X), column_operand(X))
    cache_mb = params.cache_mb / at_once
    largest = max(rows.shape[0] * KernelCache.rows_for(rows.shape[0], cache_mb, 2)
                  for rows in pair_rows)
    buffers = threading.local()  # each thread's row store, for the largest pair's cache

    def tag(p: int) -> str:
        a, b = pairs[p]
        return f"{label_key(classes[a])}-{label_key(classes[b])}"

    def solve_pair(p: int, pair_monitor: Monitor):
        if getattr(buffers, "rows", None) is None:
            buffers.rows = np.empty(largest)
        cache = KernelCache(take_operands(*operands, pair_rows[p]), kernel, cache_mb,
                            min_rows=2, buffer=buffers.rows)
        return SMOSolver(cache).solve(problems[p], params, pair_monitor)

    def tagged(p: int, clock) -> SubproblemMonitor:
        return SubproblemMonitor(monitor, counter, p, tag(p), len(pairs), clock, kind="pair")

    solutions = solve_subproblems(len(pairs), solve_pair, monitor, tagged, at_once)
    summaries = [SubproblemResult(tag(p), solution.objective, Termination(solution.status),
                                  solution.message, solution.iterations, solution.extras)
                 for p, solution in enumerate(solutions)]
    model = _expansion(X, pair_rows, solutions, classes, kernel, "ovo")
    return Fit(model, summaries)


def _single(dataset, params: SMOParams, monitor: Monitor, problem: LibsvmProblem, tag: str):
    """Solve one problem on every row (one-class, a regression): (kernel, solution, summary)."""
    X = dataset.X
    kernel = params.kernel_function(X)
    cache = KernelCache(X, kernel, params.cache_mb, min_rows=2)
    solution = SMOSolver(cache).solve(problem, params, monitor)
    summary = SubproblemResult(tag, solution.objective, Termination(solution.status),
                               solution.message, solution.iterations, solution.extras)
    return kernel, solution, summary


def fit_one_class(dataset, spec: SolverSpec, params: SMOParams, monitor: Monitor) -> Fit:
    """One-class SVM (``svm_type="one_class"``, LIBSVM's ``solve_one_class``): the labels are
    not read; the bounds are the rows' weights (1 in LIBSVM's scaling) and e'alpha = nu l."""
    cost = _costs(dataset, 1.0)
    problem = LibsvmProblem("one_class", np.ones(dataset.n_samples), cost, nu=params.nu)
    kernel, solution, summary = _single(dataset, params, monitor, problem, "one_class")
    keep = np.flatnonzero(solution.coef)
    model = OneClassKernelModel(dataset.X[keep], solution.coef[keep], solution.intercept,
                                kernel)
    return Fit(model, [summary])


def fit_regression(dataset, spec: SolverSpec, params: SMOParams, monitor: Monitor) -> Fit:
    """epsilon-SVR or nu-SVR (``svm_type``; LIBSVM's ``solve_epsilon_svr`` and
    ``solve_nu_svr``) on the real-valued labels, C_i = C weight_i."""
    targets = np.asarray(dataset.y, dtype=np.float64)
    problem = LibsvmProblem(params.svm_type, targets, _costs(dataset, params.C),
                            epsilon=params.epsilon, nu=params.nu)
    kernel, solution, summary = _single(dataset, params, monitor, problem, "regression")
    keep = np.flatnonzero(solution.coef)
    model = KernelRegressionModel(dataset.X[keep], solution.coef[keep], solution.intercept,
                                  kernel)
    return Fit(model, [summary])
