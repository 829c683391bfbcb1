"""Cross-validation over a grid of C (and the kernel's gamma), warm-started along C.

LIBLINEAR's ``-C`` solves a C path per fold, each C started from the last solution; scikit-
learn's grid search starts every fit from scratch.  :func:`cross_validate` does the former for
every solver that can start from a given point (``SolverSpec.warm_start``: mfn by beta-seeding,
section 4.1 of Keerthi & DeCoste; the least-squares family's primal CGLS) and solves the
others cold, saying which in the result.  Folds are stratified and seeded; every fold solves
the grid from the smallest C up.  Multi-class data are scored on one-vs-rest models built from
the warm-started binary problems; ordinal regression is scored by the mean absolute rank error
(lower is better), classification by accuracy.

The folds run one after another: the solvers' own kernels already use the cores (Numba threads
over rows), and worker processes would each pay a warm-up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers.base import SolverParams, SolverSpec
from solvers.data.dataset import Dataset
from solvers.models import LinearModel, Model
from solvers.monitor import NullMonitor
from solvers.multiclass import binary_targets, fit_linear_one_vs_rest, n_score_rows
from solvers.train import TrainResult, fit_handler, train, validate_params


@dataclass(frozen=True)
class GridPoint:
    """One row of the cross-validation table."""

    C: float
    gamma: float | None
    mean: float  # mean fold score (accuracy, or mean absolute rank error for ordinal)
    std: float
    fold_scores: tuple[float, ...]
    objective: float  # mean over folds of the training objective
    seconds: float  # summed over folds


@dataclass
class CrossValidationResult:
    solver: str
    metric: str  # "accuracy" (higher is better) or "mean_absolute_rank_error" (lower)
    folds: int
    warm_start: bool
    scores: list[GridPoint]
    best_C: float
    best_gamma: float | None
    params: dict[str, Any]
    model: Model | None = None
    refit: TrainResult | None = field(default=None, repr=False)

    def table(self) -> list[dict[str, Any]]:
        return [{"C": row.C, "gamma": row.gamma, "mean": row.mean, "std": row.std,
                 "objective": row.objective, "seconds": row.seconds} for row in self.scores]


def stratified_folds(y: np.ndarray, folds: int, seed: int = 0) -> np.ndarray:
    """Fold index (0..folds-1) of every example: each label's examples shuffled (seeded) and
    dealt round-robin, the next label continuing where the last stopped, so every fold gets
    its share of every label."""
    if folds < 2:
        raise ValueError("cross-validation needs at least 2 folds")
    if folds > y.shape[0]:
        raise ValueError(f"{folds} folds need at least {folds} examples, got {y.shape[0]}")
    rng = np.random.default_rng(seed)
    assignment = np.empty(y.shape[0], dtype=np.int64)
    offset = 0
    for label in np.unique(y):
        members = rng.permutation(np.flatnonzero(y == label))
        assignment[members] = (offset + np.arange(members.shape[0])) % folds
        offset += members.shape[0]
    return assignment


def _score(model: Model, test: Dataset, ordinal: bool) -> float:
    predicted = model.predict(test.X)
    if ordinal:
        classes = model.classes_
        rank = np.searchsorted(classes, predicted)
        truth = np.searchsorted(classes, test.y)
        return float(np.mean(np.abs(rank - truth)))
    return float(np.mean(predicted == test.y))


class _WarmPath:
    """One fold's one-vs-rest binary problems solved along increasing C, each from the last
    C's solution (``spec.run(..., start=...)``)."""

    def __init__(self, spec: SolverSpec, train_set: Dataset):
        self.spec = spec
        self.train_set = train_set
        self.targets = binary_targets(train_set, spec)
        self.starts: list[np.ndarray | None] = [None] * len(self.targets)

    def fit(self, params: SolverParams) -> tuple[Model, float]:
        data = self.train_set
        rows = n_score_rows(data)
        weights = np.zeros((rows, data.n_features))
        intercepts = np.zeros(rows)
        objective = 0.0
        for k, (_, positive) in enumerate(self.targets):
            y = np.where(data.y == positive, 1.0, -1.0)
            problem = params.binary_problem(data.X, y, data.sample_weight)
            solution = self.spec.run(problem, params, NullMonitor(), start=self.starts[k])
            self.starts[k] = solution.beta
            weights[k], intercepts[k] = problem.split(solution.beta)
            objective += solution.objective
        return LinearModel(weights, intercepts, data.classes), objective


def _grid(values, name: str) -> list[float]:
    grid = sorted({float(v) for v in values})
    if not grid or grid[0] <= 0:
        raise ValueError(f"the {name} grid must hold positive values")
    return grid


def cross_validate(dataset: Dataset, solver: str = "mfn", C: Sequence[float] | None = None,
                   folds: int = 5, seed: int = 0, gamma: Sequence[float] | None = None,
                   refit: bool = False,
                   progress: Callable[[int, float, float | None, float], None] | None = None,
                   **params) -> CrossValidationResult:
    """k-fold cross-validation of ``solver`` over the grid ``C`` (default 2^-5 .. 2^5) and, for
    kernel solvers, ``gamma``; other keyword arguments are the solver's parameters.

    Returns the table (one row per grid point: mean and std of the fold scores, the mean
    training objective and the time), the best point (highest accuracy, or lowest rank error
    for ordinal; ties go to the smaller C, then the smaller gamma) and, with ``refit``, the
    model trained on all the data there.  ``progress(fold, C, gamma, score)`` is called after
    every fit.
    """
    C_grid = _grid(C if C is not None else 2.0 ** np.arange(-5, 6), "C")
    spec, base = validate_params(solver, params, C=C_grid[0])
    has_gamma = "gamma" in spec.params_model.model_fields
    if gamma is not None and not has_gamma:
        raise ValueError(f"solver {solver!r} has no kernel gamma to search")
    gamma_grid: list[float | None] = _grid(gamma, "gamma") if gamma is not None else [None]
    ordinal = base.task == "ordinal"
    assignment = stratified_folds(dataset.y, folds, seed)
    warm = spec.warm_start and spec.run is not None and \
        fit_handler(spec, base, dataset) is fit_linear_one_vs_rest
    scores = {(c, g): [] for c in C_grid for g in gamma_grid}
    objectives = {key: [] for key in scores}
    seconds = dict.fromkeys(scores, 0.0)
    for fold in range(folds):
        train_set = dataset.subset(np.flatnonzero(assignment != fold))
        test_set = dataset.subset(np.flatnonzero(assignment == fold))
        for g in gamma_grid:
            path = _WarmPath(spec, train_set) if warm else None
            for c in C_grid:
                update = {"C": c} if g is None else {"C": c, "gamma": g}
                _, point = validate_params(solver, base.model_dump(), **update)
                start = time.perf_counter()
                if path is not None:
                    model, objective = path.fit(point)
                else:
                    result = train(train_set, solver=solver, params=point)
                    model, objective = result.model, result.objective
                seconds[(c, g)] += time.perf_counter() - start
                score = _score(model, test_set, ordinal)
                scores[(c, g)].append(score)
                objectives[(c, g)].append(objective)
                if progress is not None:
                    progress(fold, c, g, score)
    rows = [GridPoint(c, g, float(np.mean(scores[(c, g)])), float(np.std(scores[(c, g)])),
                      tuple(scores[(c, g)]), float(np.mean(objectives[(c, g)])),
                      seconds[(c, g)])
            for g in gamma_grid for c in C_grid]
    sign = 1.0 if ordinal else -1.0
    best = min(rows, key=lambda r: (sign * r.mean, r.C, r.gamma or 0.0))
    result = CrossValidationResult(
        solver=spec.name, metric="mean_absolute_rank_error" if ordinal else "accuracy",
        folds=folds, warm_start=warm, scores=rows, best_C=best.C, best_gamma=best.gamma,
        params=base.model_dump(mode="json"))
    if refit:
        update = {"C": best.C} if best.gamma is None else {"C": best.C, "gamma": best.gamma}
        result.refit = train(dataset, solver=solver, params=base.model_dump(), **update)
        result.model = result.refit.model
    return result
