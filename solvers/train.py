"""The one entry point: ``train(dataset, solver=..., **params) -> TrainResult``.

It validates the parameters against the solver's model, maps labels (binary: ``classes[1]`` is
+1, the other -1; more classes: one binary problem per class, one-vs-rest), runs the solver
with a monitor, and wraps the solution in a model.  The service, the CLI and the tests all
train through here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import ValidationError

from solvers.data.dataset import Dataset, label_key
from solvers.models import LinearModel, Model
from solvers.monitor import IterationRecord, ListMonitor, Monitor, NullMonitor, Stopwatch, Tee
from solvers.problem import BinaryProblem
from solvers.registry import SolverParams, SolverSpec, get_solver

STATUS_ORDER = ("converged", "max_iter", "failed", "stopped")


class InvalidParametersError(ValueError):
    """Parameters a solver does not accept; the message lists every problem."""


@dataclass
class SubproblemResult:
    """One binary problem of a training run (one class against the rest, or the only one)."""

    label: str
    objective: float
    status: str
    message: str
    iterations: int
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass
class Fit:
    """What a training procedure produces before it is wrapped in a :class:`TrainResult`."""

    model: Model
    subproblems: list[SubproblemResult]


@dataclass
class TrainResult:
    model: Model
    objective: float
    log: list[IterationRecord]
    status: str
    message: str
    elapsed: float
    params: SolverParams
    subproblems: list[SubproblemResult]

    @property
    def iterations(self) -> int:
        return sum(s.iterations for s in self.subproblems)


class _SubproblemMonitor:
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


def validate_params(solver: str, params: SolverParams | dict | None = None,
                    **kwargs) -> tuple[SolverSpec, SolverParams]:
    """The solver's spec and validated parameters (raises :class:`InvalidParametersError`)."""
    spec = get_solver(solver)
    if isinstance(params, SolverParams):
        if kwargs:
            params = params.model_copy(update=kwargs)
            params = spec.params_model.model_validate(params.model_dump())
        if not isinstance(params, spec.params_model):
            raise InvalidParametersError(
                f"parameters of type {type(params).__name__} do not belong to solver {solver!r}"
            )
        return spec, params
    values = dict(params or {})
    values.update(kwargs)
    values["solver"] = solver
    try:
        return spec, spec.params_model.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidParametersError(f"invalid parameters for solver {solver!r}: {problems}") \
            from None


def train(dataset: Dataset, solver: str = "mfn", params: SolverParams | dict | None = None,
          monitor: Monitor | None = None, **kwargs) -> TrainResult:
    """Train a model on ``dataset`` with the named solver.

    ``params`` (a parameter model or a dict) and keyword arguments are merged and validated by
    the solver's parameter model.  ``monitor`` receives every iteration record (numbered
    consecutively across the binary subproblems of a one-vs-rest run) and may stop the run.
    """
    if not isinstance(dataset, Dataset):
        raise TypeError("dataset must be a solvers.Dataset")
    spec, params = validate_params(solver, params, **kwargs)
    collector = ListMonitor()
    sink = Tee(collector, monitor if monitor is not None else NullMonitor())
    clock = Stopwatch()

    task = getattr(params, "task", "classification")
    handler = spec.fit_handlers.get(task)
    if handler is None:
        if task != "classification" or spec.run is None:
            raise ValueError(f"solver {spec.name!r} does not support task {task!r}")
        handler = fit_linear_one_vs_rest
    fit = handler(dataset, spec, params, sink)
    subproblems = fit.subproblems
    status = max((s.status for s in subproblems), key=STATUS_ORDER.index)
    if len(subproblems) == 1:
        message = subproblems[0].message
    else:
        message = "; ".join(f"class {s.label}: {s.message}" for s in subproblems)
    objective = float(sum(s.objective for s in subproblems))
    elapsed = clock()
    model = fit.model
    model.metadata = training_metadata(spec, params, dataset, objective, status, elapsed)
    return TrainResult(model, objective, collector.records, status, message, elapsed, params,
                       subproblems)


def binary_targets(dataset: Dataset, spec: SolverSpec) -> list[tuple[str | None, float]]:
    """(tag, positive label) per binary subproblem: one for two classes (``classes[1]`` is
    +1), one per class for more (one-vs-rest; tag = the class as text)."""
    classes = dataset.classes
    if classes.shape[0] < 2:
        raise ValueError("training needs at least two distinct labels in the dataset")
    if classes.shape[0] == 2:
        return [(None, classes[1])]
    if "multiclass" not in spec.tasks:
        raise ValueError(f"solver {spec.name!r} does not support multi-class problems")
    return [(label_key(c), c) for c in classes]


def run_binary_subproblems(dataset: Dataset, spec: SolverSpec, params: SolverParams,
                           monitor: Monitor, solve_one) -> list[tuple[SubproblemResult, Any]]:
    """Run ``solve_one(y_pm, sub_monitor) -> (Solution-like, payload)`` for each binary
    subproblem; stops early when one is stopped.  Returns (summary, payload) pairs."""
    results = []
    counter = [0]
    for k, (tag, positive) in enumerate(binary_targets(dataset, spec)):
        y = np.where(dataset.y == positive, 1.0, -1.0)
        sub_monitor = _SubproblemMonitor(monitor, counter, k, tag)
        solution, payload = solve_one(y, sub_monitor)
        summary = SubproblemResult(tag or label_key(positive), solution.objective,
                                   solution.status, solution.message, solution.iterations,
                                   solution.extras)
        results.append((summary, payload))
        if solution.status == "stopped":
            break
    return results


def fit_linear_one_vs_rest(dataset: Dataset, spec: SolverSpec, params: SolverParams,
                           monitor: Monitor) -> Fit:
    """The default task: linear binary problems through ``spec.run``, one per class."""

    def solve_one(y, sub_monitor):
        problem = BinaryProblem(
            dataset.X, y, C=params.C, loss=params.loss, bias=params.bias,
            bias_scale=params.bias_scale, p=getattr(params, "p", 2.0),
            sample_weight=dataset.sample_weight,
        )
        solution = spec.run(problem, params, sub_monitor)
        return solution, problem.split(solution.beta)

    results = run_binary_subproblems(dataset, spec, params, monitor, solve_one)
    n_rows = 1 if dataset.classes.shape[0] == 2 else dataset.classes.shape[0]
    weights = np.zeros((n_rows, dataset.n_features))
    intercepts = np.zeros(n_rows)
    for k, (_, (w, intercept)) in enumerate(results):
        weights[k], intercepts[k] = w, intercept
    return Fit(LinearModel(weights, intercepts, dataset.classes), [s for s, _ in results])


def training_metadata(spec: SolverSpec, params: SolverParams, dataset: Dataset,
                      objective: float, status: str, elapsed: float) -> dict[str, Any]:
    return {
        "solver": spec.name,
        "params": params.model_dump(mode="json"),
        "objective": objective,
        "status": status,
        "training_seconds": elapsed,
        "training_data": dataset.stats().as_dict(),
    }
