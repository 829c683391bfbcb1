"""Cross-validation over a grid of C (and the kernel's gamma), warm-started along C.

LIBLINEAR's ``-C`` solves a C path per fold, each C started from the last solution; scikit-
learn's grid search starts every fit from scratch.  :func:`cross_validate` does the former for
every solver and task that can share work along C (``SolverSpec.warm_start_tasks``: mfn by
beta-seeding, section 4.1 of Keerthi & DeCoste, binary and ordinal; alm from the last point
and its KKT multipliers; the cutting planes from the last point and all their cuts, rescaled
to the new C, binary and Crammer-Singer; the least-squares family from the last point of its
CGs, or on one kernel matrix and row cache for every C; the interior-point method from an
interior point near the last solution; the tasks with their own fit handler through
``SolverSpec.path_handlers``) and solves the others cold, saying which in the result.
Folds are stratified and seeded (a regression's are seeded, not stratified: real labels have
no classes); every fold solves the grid from the smallest C up.  Multi-class data are scored on
one-vs-rest models built from the warm-started binary problems (or on the Crammer-Singer models
of its path); ordinal regression is scored by the mean absolute rank error (lower is better),
support vector regression by the mean squared error (lower is better; or R^2, higher, with
``scoring="r2"``), classification by accuracy.  Beside C the grid may hold the kernel's
``gamma``, a regression's tube width ``epsilon`` (LIBLINEAR's ``-p``) and the nu of smo's
nu-SVC and nu-SVR (:data:`GRID_AXES`).  A one-class SVM is not cross-validated: its rows have
no labels to score held-out predictions by (:func:`check_search` says so).

Folds run in parallel, one thread each, as many at once as the caller has Numba threads
(``n_jobs``), each fold's kernels on its share of them: the kernels release the GIL, and the
threading layer (OpenMP or TBB; never Numba's workqueue, which aborts on concurrent use, and
then the folds run one after another) lets several Python threads start parallel regions.  It
pays most on text, where the row-parallel CG kernels do not scale: news20 made binary's search
took the same time on one Numba thread as on two, and 0.58-0.59 of it with two folds at once
(bench/history/notebook.md, section Cross-validation).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np

from solvers.approximation import approximate
from solvers.base import InvalidParametersError, SolverParams, SolverSpec
from solvers.core.sparse import thread_count, threadsafe_threading_layer
from solvers.data.dataset import Dataset
from solvers.evaluate import SCORES, regression_scores
from solvers.evaluate import score as metric_score
from solvers.models import Model
from solvers.monitor import Monitor, Reporter
from solvers.multiclass import fit_linear_path
from solvers.scaling import FeatureScaler
from solvers.termination import Termination
from solvers.train import (
    TrainResult,
    fit_task,
    resolve,
    train,
    validate_params,
    weighted,
    with_labels,
)

#: the grid's axes beside C, in the order a grid point names them: the kernel's gamma, a
#: regression's tube width epsilon (LIBLINEAR's -p), smo's nu (nu-SVC, nu-SVR)
GRID_AXES = ("gamma", "epsilon", "nu")

#: the fold scores of a regression (``scoring=``): the mean squared error (lower is better;
#: what ``scoring="accuracy"``, the default, means for a regression) and R^2 (higher)
REGRESSION_SCORES = ("mean_squared_error", "r2")

#: the metrics whose best value is the lowest
LOWER_IS_BETTER = ("mean_absolute_rank_error", "mean_squared_error")


@dataclass(frozen=True)
class GridPoint:
    """One row of the cross-validation table."""

    C: float
    gamma: float | None
    mean: float  # mean fold score (accuracy, ..., mean absolute rank error, mean squared error)
    std: float
    fold_scores: tuple[float, ...]
    objective: float  # mean over folds of the training objective
    seconds: float  # summed over folds
    epsilon: float | None = None
    nu: float | None = None


@dataclass
class CrossValidationResult:
    solver: str
    metric: str  # "accuracy" (higher is better) or "mean_absolute_rank_error" (lower)
    folds: int
    warm_start: bool
    #: the certified relative duality gap every grid point was solved to, and the solver's
    #: parameter that set it (None: the solver's own stopping rule)
    fit_gap: float | None
    fit_gap_parameter: str | None
    scores: list[GridPoint]
    #: how many folds ran at once (1: one after another)
    parallel_folds: int
    best_C: float
    best_gamma: float | None
    params: dict[str, Any]
    best_epsilon: float | None = None
    best_nu: float | None = None
    #: the solver's parameters at the best point (C, and gamma, the tube width under the
    #: solver's name for it, nu where searched): what the refit sets
    best_params: dict[str, float] = field(default_factory=dict)
    status: Termination = Termination.CONVERGED  # stopped: the monitor asked
    message: str = ""
    model: Model | None = None
    refit: TrainResult | None = field(default=None, repr=False)
    choice: dict[str, Any] | None = None  # solver="auto": what it chose and why

    def table(self) -> list[dict[str, Any]]:
        return [{"C": row.C, "gamma": row.gamma, "epsilon": row.epsilon, "nu": row.nu,
                 "mean": row.mean, "std": row.std,
                 "fold_scores": list(row.fold_scores), "objective": row.objective,
                 "seconds": row.seconds} for row in self.scores]

    def summary(self) -> dict[str, Any]:
        """The result as JSON-ready data (the service stores it with a tuning job)."""
        return {"solver": self.solver, "metric": self.metric, "folds": self.folds,
                "warm_start": self.warm_start, "fit_gap": self.fit_gap,
                "fit_gap_parameter": self.fit_gap_parameter,
                "parallel_folds": self.parallel_folds, "best_C": self.best_C,
                "best_gamma": self.best_gamma, "best_epsilon": self.best_epsilon,
                "best_nu": self.best_nu, "status": str(self.status),
                "message": self.message, "table": self.table(),
                **({"auto": self.choice} if self.choice is not None else {})}


def _score(model: Model, test: Dataset, ordinal: bool, scoring: str = "accuracy") -> float:
    if scoring in REGRESSION_SCORES:
        value = regression_scores(test.y, model.predict(test.X))[scoring]
        return float("nan") if value is None else float(value)  # R^2 of constant labels
    if ordinal:
        predicted = model.predict(test.X)
        classes = model.classes_
        rank = np.searchsorted(classes, predicted)
        truth = np.searchsorted(classes, test.labels)
        return float(np.mean(np.abs(rank - truth)))
    decision = model.decision_function(test.X)
    return metric_score(scoring, test.labels, model.labels_from_scores(decision), decision,
                        model.classes_)


@dataclass
class _FoldFits:
    """One fold's fits at one setting of the other axes ((gamma, epsilon, nu), None where an
    axis is not searched): (C, test score, training objective, seconds) in grid order, fewer
    than the grid when a stop was asked for between two fits."""

    setting: tuple
    fits: list[tuple[float, float, float, float]]


#: How often (seconds) the waiting thread asks the monitor whether to stop while folds run in
#: parallel; the fold threads then end at their next fit.
_MONITOR_POLL_S = 0.25

def parallel_folds(folds: int, n_jobs: int | None = None) -> int:
    """How many folds :func:`cross_validate` runs at once: ``n_jobs`` (None: the calling
    thread's Numba threads), at most ``folds``, and 1 where the threading layer cannot take
    several threads."""
    if n_jobs is not None and n_jobs < 1:
        raise ValueError(f"n_jobs must be at least 1, got {n_jobs}")
    wanted = numba.get_num_threads() if n_jobs is None else n_jobs
    wanted = min(wanted, folds)
    if wanted <= 1 or not threadsafe_threading_layer():
        return 1
    return wanted


def _grid(values, name: str) -> list[float]:
    """The sorted distinct values of a grid: positive ones (a tube width epsilon may be 0)."""
    grid = sorted({float(v) for v in values})
    if not grid or grid[0] < 0 or (grid[0] == 0 and name != "epsilon"):
        raise ValueError(f"the {name} grid must hold positive values")
    return grid


#: The certified relative duality gap of every grid point by default: a score needs the fold
#: models' predictions, not optima to 1e-10.  On the benchmark searches (mfn, 5 folds, C =
#: 2^-5..2^5; bench/history/notebook.md, section Cross-validation) the best C was the same as
#: with every point exact and the mean accuracies within 0.02 percentage points on a9a, w8a,
#: ijcnn1 and news20 made binary, in 1.4-1.5x less time.
CV_FIT_GAP = 1e-3


def tube_field(params_model) -> str | None:
    """The field of a solver's parameters that is a regression's tube width epsilon (mfn's
    ``insensitivity``, whose ``epsilon`` is its CGLS tolerance; dual_cd's and smo's
    ``epsilon``), None for a solver without one."""
    fields = params_model.model_fields
    if "insensitivity" in fields:
        return "insensitivity"
    if "epsilon" in fields and "epsilon" not in params_model.relative_fields:
        return "epsilon"
    return None


def fold_scoring(params, scoring: str) -> str:
    """The score a search of ``params`` ranks its points by: a regression's ``accuracy``
    (the default) is its mean squared error."""
    if params.task == "regression" and scoring == "accuracy":
        return "mean_squared_error"
    return scoring


def check_search(spec, params, *, n_samples: int, n_labels: int, folds: int,
                 gamma, scoring: str, epsilon=None, nu=None) -> None:
    """Refuse, before any fit, a search that cannot run (the service checks a tuning job with
    it when the job is created): :class:`InvalidParametersError` naming the field at fault
    (``gamma``, ``epsilon``, ``nu``, ``scoring``, ``folds``, ``task``)."""
    if gamma is not None and not spec.params_model.own_kernel and \
            params.approximation == "none":
        raise InvalidParametersError(
            f"gamma: solver {spec.name!r} has no kernel gamma of its own: its gamma is the "
            f"kernel of approximation='nystrom' or 'icf', and none is asked for")
    if params.task == "one_class":
        raise InvalidParametersError(
            "task: a one-class SVM is not cross-validated: its rows carry no labels to score "
            "held-out predictions by, and its nu is the share of outliers it is asked to "
            "allow (an upper bound on the training rows outside its support, Schölkopf et "
            "al. 2001), a choice rather than a fit; train it at the nu wanted and evaluate "
            "it on labelled rows (outlier fraction, AUC)")
    svm_type = getattr(params, "svm_type", None)
    if epsilon is not None:
        if params.task != "regression":
            raise InvalidParametersError("epsilon: the tube width is a regression's; this "
                                         f"search's task is {params.task!r}")
        if tube_field(type(params)) is None or svm_type == "nu_svr":
            raise InvalidParametersError(
                f"epsilon: solver {spec.name!r}"
                + (" with svm_type='nu_svr' finds its tube width from nu: search nu"
                   if svm_type == "nu_svr" else " has no tube width epsilon"))
    if nu is not None and svm_type not in ("nu_svc", "nu_svr"):
        raise InvalidParametersError(
            "nu: only smo's nu-SVC and nu-SVR (svm_type 'nu_svc', 'nu_svr') take nu in a "
            "search" + ("" if svm_type is None else f"; svm_type is {svm_type!r}"))
    if params.task == "regression":
        if scoring not in ("accuracy", *REGRESSION_SCORES):
            raise InvalidParametersError(
                f"scoring: a regression is scored by {' or '.join(REGRESSION_SCORES)} "
                f"(the default scores it by mean_squared_error), not {scoring}")
    elif scoring in REGRESSION_SCORES:
        raise InvalidParametersError(
            f"scoring: {scoring} scores a regression; this search's task is {params.task!r}")
    if params.task == "ordinal" and scoring != "accuracy":
        raise InvalidParametersError(
            f"scoring: ordinal regression is scored by the mean absolute rank error, not "
            f"{scoring}; leave scoring at its default")
    if scoring == "average_precision" and n_labels != 2:
        raise InvalidParametersError(
            f"scoring: average_precision is defined for two labels; the data have {n_labels} "
            f"(roc_auc, f1_macro or balanced_accuracy score several)")
    if folds > n_samples:
        raise InvalidParametersError(f"folds: {folds} folds need at least {folds} examples; "
                                     f"the data have {n_samples}")


def cross_validate(dataset: Dataset, solver: str = "mfn", C: Sequence[float] | None = None,
                   folds: int = 5, seed: int = 0, gamma: Sequence[float] | None = None,
                   refit: bool = False, fit_gap: float | None = CV_FIT_GAP,
                   progress: Callable[[int, float, float | None, float], None] | None = None,
                   monitor: Monitor | None = None, n_jobs: int | None = None,
                   warm_start: bool = True, scoring: str = "accuracy",
                   epsilon_grid: Sequence[float] | None = None,
                   nu_grid: Sequence[float] | None = None,
                   **params) -> CrossValidationResult:
    """k-fold cross-validation of ``solver`` over the grid ``C`` (default 2^-5 .. 2^5) and, for
    kernel solvers, ``gamma``; for a regression, ``epsilon_grid`` (the tube width: LIBLINEAR's
    ``-p``, dual_cd's and smo's ``epsilon``, mfn's ``insensitivity``); for smo's nu-SVC and
    nu-SVR, ``nu_grid`` (named apart from the solvers' own ``epsilon`` and ``nu``, which stay
    keyword parameters: mfn's ``epsilon`` is its CGLS tolerance).  Other keyword arguments are
    the solver's parameters.

    ``fit_gap``: every grid point's fit stops at this certified relative duality gap (P - D)/P,
    through ``tol``, the gap every certifying solver stops on (``SolverSpec.certifies_gap``; it
    replaces ``tol`` for the grid points); None, or a solver without one (the least-squares
    family), leaves each fit to the solver's own rule with the parameters as given.  The result
    says which applied.  The refit is trained with the parameters as given.

    Returns the table (one row per grid point: mean and std of the fold scores, the mean
    training objective and the time), the best point (highest accuracy, or lowest rank error
    for ordinal; ties go to the smaller C, then the smaller gamma) and, with ``refit``, the
    model trained on all the data there.  ``progress(fold, C, gamma, score)`` is called after
    every fit.  ``monitor`` gets one record per fit (fold, C, gamma: the fold's score as the
    optimality, the training objective as the objective) and may stop the search: the result
    then has status ``stopped`` and the table of the folds done (no refit).

    ``n_jobs``: folds fitted at once, each in its own thread on its share of the Numba
    threads (None: as many as the calling thread has Numba threads; 1: one after another;
    always 1 under Numba's workqueue threading layer, see :func:`parallel_folds`).  The table
    and the records are the same either way, in fold order; the monitor is then asked from
    the calling thread only, between fits and while the folds run, and a stop ends the folds
    still running at their next fit.  The result's ``parallel_folds`` says what applied.

    ``scoring``: the fold score of a classification, one of :data:`solvers.evaluate.SCORES`
    (accuracy, balanced_accuracy, f1_macro, precision_macro, recall_macro, roc_auc,
    average_precision; higher is better); ordinal regression scores the mean absolute rank
    error; a regression (``task="regression"``, on folds seeded but not stratified) the mean
    squared error (the default; lower is better) or ``"r2"`` (:data:`REGRESSION_SCORES`).

    ``warm_start=False`` solves every point cold even where the solver could start from the
    last one (to measure what the warm start buys); the result's ``warm_start`` says which.
    """
    search = _plan_search(dataset, solver, C, folds, seed,
                          {"gamma": gamma, "epsilon": epsilon_grid, "nu": nu_grid},
                          fit_gap, warm_start, scoring, params)
    n_jobs = parallel_folds(folds, n_jobs)
    tally = _Tally(search, progress, monitor)
    if n_jobs == 1:
        status = _fit_folds_one_after_another(search, tally, monitor)
    else:
        status = _fit_folds_at_once(search, tally, monitor, n_jobs)
    result = _search_result(search, tally, status, n_jobs)
    if refit and result.scores and status != Termination.STOPPED:
        result.refit = train(dataset, solver=search.solver, params=search.base.model_dump(),
                             **result.best_params)
        result.model = result.refit.model
    return result


@dataclass(frozen=True)
class _Search:
    """A search resolved before any fit: the solver (``auto``'s choice made), its parameters
    at the grid's first C, the grids, each example's fold, and how a fold's C path is fitted
    (``warm_path``; None: every point cold)."""

    dataset: Dataset
    spec: SolverSpec
    solver: str
    base: SolverParams
    C_grid: list[float]
    #: every setting of the other axes, (gamma, epsilon, nu), None where not searched
    settings: list[tuple]
    #: each axis's grid (None: not searched)
    axes: dict[str, list[float] | None]
    folds: int
    assignment: np.ndarray
    ordinal: bool
    scoring: str
    fit_gap: float | None
    fit_gap_parameter: str | None
    warm_path: Callable | None
    choice: dict[str, Any] | None

    @property
    def metric(self) -> str:
        return "mean_absolute_rank_error" if self.ordinal else self.scoring

    def axis_update(self, setting: tuple) -> dict[str, float]:
        """The parameters a setting (gamma, epsilon, nu) sets: the epsilon axis under the
        solver's name of the tube width (:func:`tube_field`)."""
        names = {"gamma": "gamma", "epsilon": tube_field(type(self.base)), "nu": "nu"}
        return {names[axis]: value for axis, value in zip(GRID_AXES, setting, strict=True)
                if value is not None}

    def grid_points(self, setting: tuple) -> list[SolverParams]:
        """The validated parameters of every C of the grid at ``setting`` (the fit gap as the
        solver's tolerance where it applies)."""
        points = []
        for c in self.C_grid:
            update = {"C": c, **self.axis_update(setting)}
            if self.fit_gap_parameter is not None:
                update[self.fit_gap_parameter] = self.fit_gap
            points.append(validate_params(self.solver, self.base.model_dump(), **update)[1])
        return points

    def split(self, fold: int) -> tuple[Dataset, Dataset]:
        """The fold's training and test parts, scaled by a scaler fitted on the training part
        alone."""
        train_set = self.dataset.subset(np.flatnonzero(self.assignment != fold))
        test_set = self.dataset.subset(np.flatnonzero(self.assignment == fold))
        if self.base.scale != "none":
            scaler = FeatureScaler.fit(train_set.X, self.base.scale)
            train_set = scaler.transform_dataset(train_set)
            test_set = scaler.transform_dataset(test_set)
        return train_set, test_set

    def fit_fold(self, fold: int, should_stop: Callable[[], bool]) -> list[_FoldFits]:
        """The fold's fits over the grid and their test scores, one entry per gamma (the
        last one short of the grid when a stop was asked for between two fits)."""
        train_set, test_set = self.split(fold)
        out = []
        for setting in self.settings:
            points = self.grid_points(setting)
            if self.warm_path is not None:
                fits = self._fit_warm_path(train_set, points, should_stop)
                if fits is None:  # stopped while factorizing
                    out.append(_FoldFits(setting, []))
                    break
            else:
                fits = _fit_cold(train_set, self.solver, points, should_stop)
            out.append(_FoldFits(setting, [
                (c, _score(model, test_set, self.ordinal, self.scoring), objective, elapsed)
                for c, (model, objective, elapsed) in zip(self.C_grid, fits, strict=False)]))
            if len(fits) < len(points) or should_stop():
                break
        return out

    def _fit_warm_path(self, train_set: Dataset, points: list[SolverParams],
                       should_stop: Callable[[], bool]) -> list[tuple] | None:
        """(model, objective, seconds) of every point along the warm C path; with a low-rank
        approximation, one factor of the fold's rows for the whole path.  None when a stop
        ended the factorization."""
        step = approximate(train_set, points[0], should_stop=should_stop)
        if step is not None and step.factor is None:
            return None
        fit_set, solver_points = train_set, points
        if step is not None:
            fit_set = step.dataset(train_set)
            solver_points = [step.solver_params(p) for p in points]
        return [(with_labels(model if step is None else step.kernel_model(model), train_set),
                 objective, elapsed)
                for model, objective, elapsed in
                self.warm_path(weighted(fit_set, self.base), self.spec, solver_points)]


def _fit_cold(train_set: Dataset, solver: str, points: list[SolverParams],
              should_stop: Callable[[], bool]) -> list[tuple]:
    """(model, objective, seconds) of each point trained from scratch, until a stop is asked
    (reported, and the search stopped, by the caller)."""
    fits = []
    for point in points:
        if should_stop():
            break
        result = train(train_set, solver=solver, params=point)
        fits.append((result.model, result.objective, result.elapsed))
    return fits


def _plan_search(dataset: Dataset, solver: str, C, folds: int, seed: int, axes: dict,
                 fit_gap: float | None, warm_start: bool, scoring: str,
                 params: dict) -> _Search:
    """Validate the search and resolve what it fits (``auto`` chooses once, at the grid's
    middle C); refuses before any fit what cannot run (:func:`check_search`)."""
    C_grid = _grid(C if C is not None else 2.0 ** np.arange(-5, 6), "C")
    if scoring not in (*SCORES, *REGRESSION_SCORES):
        raise InvalidParametersError(f"scoring: {scoring!r} is not one of "
                                     f"{', '.join((*SCORES, *REGRESSION_SCORES))}")
    spec, base = validate_params(solver, params, C=C_grid[0])
    choice = None
    if spec.name == "auto":  # one choice for the whole search, made at the grid's middle C
        middle = float(np.exp(np.mean(np.log(C_grid))))
        spec, chosen, auto_choice = resolve(spec, base.model_copy(update={"C": middle}),
                                            dataset)
        choice = auto_choice.as_dict()
        solver, base = spec.name, chosen.model_copy(update={"C": C_grid[0]})
    fit_gap_parameter = "tol" if fit_gap is not None and spec.certifies_gap else None
    if fit_gap_parameter is None:
        fit_gap = None
    check_search(spec, base, n_samples=dataset.n_samples,
                 n_labels=int(dataset.classes.shape[0]), folds=folds, gamma=axes["gamma"],
                 scoring=scoring, epsilon=axes["epsilon"], nu=axes["nu"])
    scoring = fold_scoring(base, scoring)
    grids = {axis: None if axes[axis] is None else _grid(axes[axis], axis)
             for axis in GRID_AXES}
    settings = list(itertools.product(*[grids[axis] or [None] for axis in GRID_AXES]))
    # real-valued labels have no classes to stratify by: seeded, shuffled folds
    assignment = dataset.shuffled_folds(folds, seed) if base.task == "regression" \
        else dataset.stratified_folds(folds, seed)
    # the path of a warm task: its own path handler, or one-vs-rest over the binary solver's
    # warm start (None: every point cold)
    task = fit_task(base, int(dataset.classes.shape[0]))
    warm_path = spec.path_handlers.get(task, fit_linear_path) \
        if warm_start and task in spec.warm_start_tasks() else None
    return _Search(dataset=dataset, spec=spec, solver=solver, base=base, C_grid=C_grid,
                   settings=settings, axes=grids, folds=folds, assignment=assignment,
                   ordinal=base.task == "ordinal", scoring=scoring, fit_gap=fit_gap,
                   fit_gap_parameter=fit_gap_parameter, warm_path=warm_path, choice=choice)


class _Tally:
    """The fold scores, objectives and times of every grid point as the folds are recorded,
    in fold order; each fit goes to ``progress`` and, as a record, to the monitor."""

    def __init__(self, search: _Search, progress, monitor: Monitor | None):
        self.search = search
        self.progress = progress
        self.monitor = monitor
        keys = [(c, g) for c in search.C_grid for g in search.settings]
        self.scores: dict[tuple, list[float]] = {key: [] for key in keys}
        self.objectives: dict[tuple, list[float]] = {key: [] for key in keys}
        self.seconds = dict.fromkeys(keys, 0.0)
        self.reporter = Reporter(monitor, "fold_score")

    def note_stop_reason(self) -> None:
        """Keep the monitor's reason for a stop it asked for outside a record."""
        self.reporter.stop_reason = self.monitor.stop_reason() \
            if self.monitor is not None else None

    def record(self, fold: int, fold_fits: list[_FoldFits]) -> bool:
        """Tally and report one fold's fits in grid order; True once the search must stop."""
        search, reporter = self.search, self.reporter
        for entry in fold_fits:
            gamma, epsilon, nu = entry.setting
            gammas = search.axes["gamma"] or [None]
            others = {axis: value for axis, value in (("epsilon", epsilon), ("nu", nu))
                      if value is not None}
            for c, score, objective, elapsed in entry.fits:
                self.scores[(c, entry.setting)].append(score)
                self.objectives[(c, entry.setting)].append(objective)
                self.seconds[(c, entry.setting)] += elapsed
                if self.progress is not None:
                    self.progress(fold, c, gamma, score)
                # where the fit sits in the search ("C 3 of 11, fold 2 of 5")
                if reporter(reporter.records + 1, objective, score, fold=fold, C=c,
                            gamma=gamma, n_folds=search.folds,
                            C_index=search.C_grid.index(c), n_C=len(search.C_grid),
                            gamma_index=gammas.index(gamma), n_gamma=len(gammas),
                            setting_index=search.settings.index(entry.setting),
                            n_settings=len(search.settings), metric=search.metric,
                            **others):
                    return True
            if len(entry.fits) < len(search.C_grid):  # the monitor asked between two fits
                self.note_stop_reason()
                return True
        return False

    def rows(self) -> list[GridPoint]:
        """The table: the grid points with at least one fold scored, gamma by gamma."""
        return [GridPoint(c, g[0], float(np.mean(self.scores[(c, g)])),
                          float(np.std(self.scores[(c, g)])), tuple(self.scores[(c, g)]),
                          float(np.mean(self.objectives[(c, g)])), self.seconds[(c, g)],
                          epsilon=g[1], nu=g[2])
                for g in self.search.settings for c in self.search.C_grid
                if self.scores[(c, g)]]


def _fit_folds_one_after_another(search: _Search, tally: _Tally,
                                 monitor: Monitor | None) -> Termination:
    """Fit and record the folds in order in this thread, asking the monitor between fits."""
    def should_stop() -> bool:
        return monitor is not None and monitor.stop_reason() is not None

    for fold in range(search.folds):
        if tally.record(fold, search.fit_fold(fold, should_stop)):
            return Termination.STOPPED
    return Termination.CONVERGED


def _fit_folds_at_once(search: _Search, tally: _Tally, monitor: Monitor | None,
                       n_jobs: int) -> Termination:
    """Fit the folds ``n_jobs`` at a time, each thread on its share of the Numba threads, and
    record them in fold order as they finish.  The monitor is asked from this thread only,
    while it waits; a stop (or a fold's error) ends the folds still running at their next
    fit."""
    stop_asked = threading.Event()  # set by this thread: the monitor asked, or a fold failed
    threads_each = max(1, numba.get_num_threads() // n_jobs)

    def fit_fold_in_thread(fold: int) -> list[_FoldFits]:
        if stop_asked.is_set():
            return []  # stopped before this fold began
        with thread_count(threads_each):  # this thread's share (Numba's mask is per thread)
            return search.fit_fold(fold, stop_asked.is_set)

    with ThreadPoolExecutor(n_jobs, thread_name_prefix="cv-fold") as pool:
        futures = [pool.submit(fit_fold_in_thread, fold) for fold in range(search.folds)]
        try:
            for fold, future in enumerate(futures):
                fold_fits = _wait_asking_the_monitor(future, monitor, stop_asked)
                if not fold_fits:  # stopped before the fold began
                    tally.note_stop_reason()
                    return Termination.STOPPED
                if tally.record(fold, fold_fits):
                    return Termination.STOPPED
        finally:
            stop_asked.set()  # the folds still running end at their next fit
            for future in futures:
                future.cancel()
    return Termination.CONVERGED


def _wait_asking_the_monitor(future: Future, monitor: Monitor | None,
                             stop_asked: threading.Event) -> list[_FoldFits]:
    """A fold's fits once its thread is done; meanwhile, every :data:`_MONITOR_POLL_S`, ask
    the monitor whether to stop (the only place it is asked while folds run at once)."""
    while True:
        try:
            return future.result(timeout=_MONITOR_POLL_S)
        except FutureTimeout:
            if monitor is not None and monitor.stop_reason() is not None:
                stop_asked.set()


def _search_result(search: _Search, tally: _Tally, status: Termination,
                   n_jobs: int) -> CrossValidationResult:
    """The table and its best point (none when the search stopped before any fit)."""
    rows = tally.rows()
    common = {"solver": search.spec.name, "metric": search.metric, "folds": search.folds,
              "warm_start": search.warm_path is not None, "fit_gap": search.fit_gap,
              "fit_gap_parameter": search.fit_gap_parameter, "scores": rows,
              "parallel_folds": n_jobs, "params": search.base.model_dump(mode="json"),
              "status": status, "choice": search.choice}
    if not rows:
        return CrossValidationResult(**common, best_C=float("nan"), best_gamma=None,
                                     message=f"stopped: {tally.reporter.stop_reason}")
    sign = 1.0 if search.metric in LOWER_IS_BETTER else -1.0
    # a NaN mean (R^2 of a fold of constant labels) ranks last
    best = min(rows, key=lambda r: (r.mean != r.mean, sign * r.mean, r.C, r.gamma or 0.0,
                                    r.epsilon or 0.0, r.nu or 0.0))
    message = f"best C = {best.C:g}" + "".join(
        f", {axis} = {value:g}" for axis, value in
        (("gamma", best.gamma), ("epsilon", best.epsilon), ("nu", best.nu)) if value is not None)
    if status == Termination.STOPPED:
        message = f"stopped: {tally.reporter.stop_reason} (the table holds the folds done)"
    return CrossValidationResult(**common, best_C=best.C, best_gamma=best.gamma,
                                 best_epsilon=best.epsilon, best_nu=best.nu, message=message,
                                 best_params={"C": best.C, **search.axis_update(
                                     (best.gamma, best.epsilon, best.nu))})
