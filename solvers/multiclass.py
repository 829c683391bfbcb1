"""From a dataset's labels to binary problems and back to one model.

Two labels: one binary problem, ``classes[1]`` the positive class (+1).  More: one-vs-rest,
one binary problem per class, its records tagged with the class and numbered consecutively
across the problems; the weights of every problem make one :class:`LinearModel`.  A natively
multi-class method (Crammer-Singer) is a fit handler of its declared task
(``SolverSpec.fit_handlers``, task ``"crammer_singer"``), chosen by ``params.multiclass``;
``train`` dispatches to it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers.base import (
    Fit,
    InvalidParametersError,
    SolverParams,
    SolverSpec,
    SubproblemResult,
    Termination,
)
from solvers.class_weights import subproblem_weight
from solvers.data.dataset import Dataset, label_key
from solvers.models import LinearModel
from solvers.monitor import IterationRecord, Monitor, NullMonitor, Stopwatch


class SubproblemMonitor:
    """Numbers records consecutively across subproblems (``counter`` is shared by all the
    subproblems of a run) and tags them with the subproblem's class."""

    def __init__(self, target: Monitor, counter: list[int], subproblem: int, label: str | None):
        self.target = target
        self.counter = counter
        self.subproblem = subproblem
        self.label = label

    def report(self, record: IterationRecord) -> None:
        self.counter[0] += 1
        extras = dict(record.extras)
        extras["solver_iteration"] = record.iteration
        if self.label is not None:
            extras["subproblem"] = self.subproblem
            extras["class"] = self.label
        self.target.report(
            IterationRecord(self.counter[0], record.elapsed, record.objective,
                            record.optimality, extras)
        )

    def stop_reason(self) -> str | None:
        return self.target.stop_reason()


def binary_targets(dataset: Dataset, spec: SolverSpec) -> list[tuple[str | None, float]]:
    """(tag, positive label) per binary subproblem: one for two classes (``classes[1]`` is
    +1), one per class for more (one-vs-rest; tag = the class as text)."""
    classes = dataset.classes
    if classes.shape[0] < 2:
        raise ValueError("training needs at least two distinct labels in the dataset")
    if classes.shape[0] == 2:
        return [(None, classes[1])]
    if "ovr" not in spec.tasks:
        raise ValueError(f"solver {spec.name!r} does not solve one-vs-rest multi-class "
                         f"problems")
    return [(label_key(c), c) for c in classes]


def run_binary_subproblems(dataset: Dataset, spec: SolverSpec, monitor: Monitor,
                           solve_one, weighted: bool = False
                           ) -> list[tuple[SubproblemResult, Any]]:
    """Run ``solve_one(y_pm, sub_monitor) -> (Solution-like, payload)`` for each binary
    subproblem; stops early when one is stopped.  Returns (summary, payload) pairs.
    ``weighted``: ``solve_one`` builds each problem's costs from
    :func:`solvers.class_weights.subproblem_weight` (one-vs-rest class weights); a caller
    that does not is refused data that carry them."""
    results = []
    counter = [0]
    for k, (tag, positive) in enumerate(binary_targets(dataset, spec)):
        y = np.where(dataset.y == positive, 1.0, -1.0)
        if dataset.class_weight is not None and not weighted:
            raise InvalidParametersError(
                f"solver {spec.name!r} does not take one-vs-rest class weights (its "
                f"one-vs-rest problems share one cost vector)")
        sub_monitor = SubproblemMonitor(monitor, counter, k, tag)
        solution, payload = solve_one(y, sub_monitor)
        summary = SubproblemResult(tag or label_key(positive), solution.objective,
                                   Termination(solution.status), solution.message,
                                   solution.iterations, solution.extras)
        results.append((summary, payload))
        if solution.status == Termination.STOPPED:
            break
    return results


def n_score_rows(dataset: Dataset) -> int:
    """Rows of a model's coefficients: 1 for two classes, one per class otherwise."""
    return 1 if dataset.classes.shape[0] == 2 else dataset.classes.shape[0]


def fit_linear_one_vs_rest(dataset: Dataset, spec: SolverSpec, params: SolverParams,
                           monitor: Monitor, start_model: LinearModel | None = None) -> Fit:
    """The default task: linear binary problems through ``spec.run``, one per class.
    ``start_model`` (a linear model of the same classes and features, e.g. another solver's
    point on the same problem) starts each binary problem from its row, for a solver that
    warm-starts (``spec.warm_start``)."""
    rows = iter(range(n_score_rows(dataset)))
    targets = [positive for _, positive in binary_targets(dataset, spec)]
    order = iter(range(len(targets)))

    def solve_one(y, sub_monitor):
        positive = targets[next(order)]
        problem = params.binary_problem(dataset.X, y, subproblem_weight(dataset, positive))
        k = next(rows)
        if start_model is None:
            solution = spec.run(problem, params, sub_monitor)
        else:
            start = problem.join(start_model.coef_[k],
                                 float(start_model.intercept_[k]) if problem.bias != "none"
                                 else 0.0)
            solution = spec.run(problem, params, sub_monitor, start=start)
        return solution, problem.split(solution.beta)

    results = run_binary_subproblems(dataset, spec, monitor, solve_one, weighted=True)
    n_rows = n_score_rows(dataset)
    weights = np.zeros((n_rows, dataset.n_features))
    intercepts = np.zeros(n_rows)
    for k, (_, (w, intercept)) in enumerate(results):
        weights[k], intercepts[k] = w, intercept
    return Fit(LinearModel(weights, intercepts, dataset.classes), [s for s, _ in results])


def timed_path(points: list[SolverParams], fit_point) -> list[tuple[Any, float, float]]:
    """The loop of a C path: ``fit_point(params) -> (fit, objective)`` at each point in order
    (it carries from one point to the next what it needs), timed.  Returns (fit, objective,
    seconds) per point."""
    fits = []
    for params in points:
        clock = Stopwatch()
        fit, objective = fit_point(params)
        fits.append((fit, float(objective), clock()))
    return fits


def _binary_path(spec: SolverSpec, problem, points: list[SolverParams]) -> list[
        tuple[np.ndarray, float, float]]:
    """One binary problem along the points' C values, each from the last solution: through
    the spec's ``path`` (one engine for the whole path) when it has one, else ``spec.run(...,
    start=previous)``.  (beta, objective, seconds) per point."""
    if spec.path is not None:
        solutions = spec.path(problem, [p.C for p in points], points[0])
        return [(s.beta, s.objective, s.extras["seconds"]) for s in solutions]
    start = None

    def fit_point(point):
        nonlocal start
        solution = spec.run(problem.with_C(point.C), point, NullMonitor(), start=start)
        start = solution.beta
        return solution.beta, solution.objective

    return timed_path(points, fit_point)


def fit_linear_path(dataset: Dataset, spec: SolverSpec,
                    points: list[SolverParams]) -> list[tuple[LinearModel, float, float]]:
    """The one-vs-rest binary problems of ``dataset``, each solved along the points' C values
    (in order) from the last C's solution, for a spec that can warm-start.  Returns, per
    point, the linear model, the training objective (summed over the binary problems) and the
    seconds: the C path of cross-validation and of families whose fit handler comes back to
    one-vs-rest."""
    rows = n_score_rows(dataset)
    weights = np.zeros((len(points), rows, dataset.n_features))
    intercepts = np.zeros((len(points), rows))
    objectives = np.zeros(len(points))
    seconds = np.zeros(len(points))
    for k, (_, positive) in enumerate(binary_targets(dataset, spec)):
        y = np.where(dataset.y == positive, 1.0, -1.0)
        problem = points[0].binary_problem(dataset.X, y, subproblem_weight(dataset, positive))
        for j, (beta, objective, elapsed) in enumerate(_binary_path(spec, problem, points)):
            weights[j, k], intercepts[j, k] = problem.split(beta)
            objectives[j] += objective
            seconds[j] += elapsed
    return [(LinearModel(weights[j], intercepts[j], dataset.classes), float(objectives[j]),
             float(seconds[j])) for j in range(len(points))]
