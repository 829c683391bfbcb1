"""From a dataset's labels to binary problems and back to one model.

Two labels: one binary problem, ``classes[1]`` the positive class (+1).  More: one-vs-rest,
one binary problem per class, its records tagged with the class and numbered consecutively
across the problems; the weights of every problem make one :class:`LinearModel`.  A natively
multi-class method (Crammer-Singer) is a fit handler of its declared task
(``SolverSpec.fit_handlers``, task ``"crammer_singer"``), chosen by ``params.multiclass``;
``train`` dispatches to it.
"""

from __future__ import annotations

import queue
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import InitVar, dataclass, field
from typing import Any

import numpy as np

from solvers.base import (
    C_RANGE,
    Fit,
    InvalidParametersError,
    PairwiseLinear,
    SolverParams,
    SolverSpec,
    SubproblemResult,
    Termination,
    WarmStart,
    replaced_keyword,
    warm_start_argument,
)
from solvers.core.sparse import csr_rmatvec, thread_count
from solvers.data.dataset import Dataset, label_key
from solvers.models import KernelModel, LinearModel
from solvers.monitor import IterationRecord, Monitor, NullMonitor, QueuedLane, Stopwatch


@dataclass(eq=False)
class SubproblemMonitor:
    """Numbers records consecutively across subproblems (``counter`` is shared by all the
    subproblems of a run) and tags them with the subproblem: ``subproblem`` (its index) and
    ``class`` (its tag), and, given ``total`` (the run's number of subproblems),
    ``n_subproblems``; a one-vs-rest subproblem (``kind="class"``) also carries
    ``class_index`` and ``n_classes`` (so a log says "class k of K").  Given ``clock`` (one
    Stopwatch for the whole run), ``elapsed`` is the run's time, monotonic across the
    subproblems (each solver times its own subproblem from 0: that time stays in
    ``extras["subproblem_elapsed"]``)."""

    target: Monitor
    counter: list[int]
    subproblem: int
    label: str | None
    total: int | None = None
    clock: InitVar[Stopwatch | None] = None
    kind: str = "class"
    offset: float = field(init=False)

    def __post_init__(self, clock: Stopwatch | None) -> None:
        self.offset = 0.0 if clock is None or self.label is None else clock()

    def report(self, record: IterationRecord) -> None:
        self.counter[0] += 1
        extras = dict(record.extras)
        extras["solver_iteration"] = record.iteration
        elapsed = record.elapsed
        if self.label is not None:
            extras["subproblem"] = self.subproblem
            extras["class"] = self.label
            if self.total is not None:
                extras["n_subproblems"] = self.total
                if self.kind == "class":
                    extras["class_index"] = self.subproblem
                    extras["n_classes"] = self.total
            extras["subproblem_elapsed"] = record.elapsed
            elapsed = self.offset + record.elapsed
        self.target.report(
            IterationRecord(self.counter[0], elapsed, record.objective,
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
    :func:`solvers.multiclass.subproblem_weight` (one-vs-rest class weights); a caller
    that does not is refused data that carry them."""
    results = []
    counter = [0]
    clock = Stopwatch()  # the run's time: records' elapsed is monotonic across subproblems
    targets = binary_targets(dataset, spec)
    for k, (tag, positive) in enumerate(targets):
        y = np.where(dataset.y == positive, 1.0, -1.0)
        if dataset.class_weight is not None and not weighted:
            raise InvalidParametersError(
                f"solver {spec.name!r} does not take one-vs-rest class weights (its "
                f"one-vs-rest problems share one cost vector)")
        sub_monitor = SubproblemMonitor(monitor, counter, k, tag, len(targets), clock)
        solution, payload = solve_one(y, sub_monitor)
        summary = SubproblemResult(tag or label_key(positive), solution.objective,
                                   Termination(solution.status), solution.message,
                                   solution.iterations, solution.extras)
        results.append((summary, payload))
        if solution.status == Termination.STOPPED:
            break
    return results


#: How often the calling thread forwards the records of subproblems solved at once and asks
#: its monitor (seconds).
POLL_S = 0.02


def solve_subproblems(count: int, solve: Callable[[int, Monitor], Any],
                      monitor: Monitor, tagged: Callable[[int, Callable[[], float]], Monitor],
                      threads: int = 1) -> list[Any]:
    """``solve(p, sub_monitor)`` for p = 0 .. count - 1, independent subproblems (one-vs-one's
    pairs): one after another, or ``threads`` at a time on a pool of threads, each subproblem
    on one of them with one Numba thread (its kernels must release the GIL).  Returns the
    solutions in order, stopping after the first whose ``status`` is STOPPED; a subproblem
    that a stop request kept from starting is left out.

    ``tagged(p, clock)`` is subproblem p's monitor on the caller's (a
    :class:`SubproblemMonitor`; ``clock()`` at its construction is the run's time at which p
    started, so that its records' ``elapsed`` is the run's time).  At once,
    the records reach it from the calling thread only, as the race of :mod:`solvers.portfolio`
    forwards them: every :data:`POLL_S` the calling thread forwards what the pool reported
    (records of subproblems running at once interleave, each tagged with its own) and asks its
    monitor, whose stop request ends every running subproblem at its next record."""
    clock = Stopwatch()  # the run's time
    if threads <= 1 or count <= 1:
        solutions = []
        for p in range(count):
            solutions.append(solve(p, tagged(p, clock)))
            if solutions[-1].status == Termination.STOPPED:
                break
        return solutions
    records: queue.SimpleQueue = queue.SimpleQueue()
    stop: list[str | None] = [None]
    monitors: dict[int, Monitor] = {}

    def run(p: int):
        if stop[0] is not None:
            return None  # a stop came before this subproblem began
        lane = QueuedLane((p, clock()), records, lambda: stop[0])
        with thread_count(1):
            return solve(p, lane)

    def drain() -> None:
        while True:
            try:
                (p, start), record = records.get_nowait()
            except queue.Empty:
                return
            if p not in monitors:
                monitors[p] = tagged(p, lambda start=start: start)
            monitors[p].report(record)

    with ThreadPoolExecutor(threads, thread_name_prefix="subproblem") as pool:
        futures = [pool.submit(run, p) for p in range(count)]
        pending = set(futures)
        try:
            while pending:
                _, pending = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
                drain()
                if stop[0] is None:
                    stop[0] = monitor.stop_reason()
        finally:
            if stop[0] is None and pending:  # an error in the loop: end the others too
                stop[0] = "the run ended"
        drain()
    solutions = []
    for future in futures:
        solution = future.result()  # a subproblem's error is the run's
        if solution is None:
            break
        solutions.append(solution)
        if solution.status == Termination.STOPPED:
            break
    return solutions


def n_score_rows(dataset: Dataset) -> int:
    """Rows of a model's coefficients: 1 for two classes, one per class otherwise."""
    return 1 if dataset.classes.shape[0] == 2 else dataset.classes.shape[0]


def fit_linear_one_vs_rest(dataset: Dataset, spec: SolverSpec, params: SolverParams,
                           monitor: Monitor, start: WarmStart | None = None, *,
                           start_model: LinearModel | None = None) -> Fit:
    """The default task: linear binary problems through ``spec.run``, one per class.
    ``start.model`` (a :class:`~solvers.base.WarmStart`'s linear model of the same classes and
    features, e.g. another solver's point on the same problem) starts each binary problem
    from its row, for a solver that warm-starts (``spec.warm_start``); the rest of the warm
    start, which belongs to one binary problem, is ignored.  ``start_model``: the deprecated
    spelling of ``start=WarmStart(model=...)``, kept for one release."""
    if isinstance(start, LinearModel):  # the deprecated start_model, given by position
        start, start_model = None, start
    start = replaced_keyword(warm_start_argument(start), "start_model", start_model, "model")
    start_model = None if start is None else start.model
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
            beta = problem.join(start_model.coef_[k],
                                float(start_model.intercept_[k]) if problem.bias != "none"
                                else 0.0)
            solution = spec.run(problem, params, sub_monitor, start=WarmStart(beta=beta))
        return solution, problem.split(solution.beta)

    results = run_binary_subproblems(dataset, spec, monitor, solve_one, weighted=True)
    n_rows = n_score_rows(dataset)
    weights = np.zeros((n_rows, dataset.n_features))
    intercepts = np.zeros(n_rows)
    for k, (_, (w, intercept)) in enumerate(results):
        weights[k], intercepts[k] = w, intercept
    return Fit(LinearModel(weights, intercepts, dataset.classes), [s for s, _ in results])


def class_pairs(k: int) -> list[tuple[int, int]]:
    """The pairs (a, b), a < b, of k classes in LIBSVM's order."""
    return [(a, b) for a in range(k) for b in range(a + 1, k)]


def fit_linear_one_vs_one(dataset: Dataset, spec: SolverSpec, params: SolverParams,
                          monitor: Monitor) -> Fit:
    """One-vs-one through ``spec.run`` (LIBSVM's strategy, for a linear solver on a low-rank
    factor): for every pair of classes a < b, the binary problem of ``params`` on the rows of
    a (+1) and b (-1) only, each example weighted by its ``sample_weight`` (class weights are
    folded in there, as LIBSVM weights each pair's examples by their class:
    :func:`apply_class_weight`).  Records are numbered across the pairs and tagged with the
    pair (``kind="pair"``); a stopped pair ends the run.  Two classes: the binary problem."""
    classes = dataset.classes
    k = classes.shape[0]
    if k <= 2:
        return fit_linear_one_vs_rest(dataset, spec, params, monitor)
    pairs = class_pairs(k)
    coef = np.zeros((len(pairs), dataset.n_features))
    intercept = np.zeros(len(pairs))
    counter = [0]
    clock = Stopwatch()  # the run's time: records' elapsed is monotonic across the pairs
    summaries = []
    for p, (a, b) in enumerate(pairs):
        rows = np.flatnonzero((dataset.y == classes[a]) | (dataset.y == classes[b]))
        y = np.where(dataset.y[rows] == classes[a], 1.0, -1.0)
        weights = None if dataset.sample_weight is None else dataset.sample_weight[rows]
        problem = params.binary_problem(dataset.X[rows], y, weights)
        tag = f"{label_key(classes[a])}-{label_key(classes[b])}"
        pair_monitor = SubproblemMonitor(monitor, counter, p, tag, len(pairs), clock,
                                         kind="pair")
        solution = spec.run(problem, params, pair_monitor)
        coef[p], intercept[p] = problem.split(solution.beta)
        summaries.append(SubproblemResult(tag, solution.objective, Termination(solution.status),
                                          solution.message, solution.iterations,
                                          solution.extras))
        if solution.status == Termination.STOPPED:
            break
    return Fit(PairwiseLinear(coef, intercept, classes), summaries)


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
    start=WarmStart(beta=previous))``.  (beta, objective, seconds) per point."""
    if spec.path is not None:
        solutions = spec.path(problem, [p.C for p in points], points[0])
        return [(s.beta, s.objective, s.extras["seconds"]) for s in solutions]
    start = None

    def fit_point(point):
        nonlocal start
        solution = spec.run(problem.with_C(point.C), point, NullMonitor(), start=start)
        start = WarmStart(beta=solution.beta)
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


# -- class weights ---------------------------------------------------------------------------
# Class weights: C multiplied per class, exactly as LIBLINEAR's ``-wi`` does, composed with the
# per-example ``cost:`` weights (``Dataset.sample_weight``), applied once for every family.
#
# ``params.class_weight`` is a mapping label -> weight, or ``"balanced"`` (scikit-learn's
# n / (k n_c): n examples, k classes, n_c examples of class c, counted on the data trained on).
# Keys may be the labels themselves or their text (JSON keys are strings: ``{"1": 10}`` is the
# label 1, ``{"-1": 2.5}`` the label -1); a label not listed has weight 1, and a key that is
# no label of the data is refused.
#
# How the weights enter each task, as LIBLINEAR does (``train`` in ``linear.cpp``):
#
# - binary: C_i = C * sample_weight_i * weight[y_i], for both classes;
# - one-vs-rest: the problem of class k weights its positive examples (class k) by weight[k]
#   and leaves the rest at C (LIBLINEAR's ``train_one(..., weighted_C[k], param->C)``, the
#   same as scikit-learn's ``LinearSVC``): :func:`subproblem_weight`;
# - Crammer-Singer: C_i = C * sample_weight_i * weight[y_i] (LIBLINEAR's ``Solver_MCSVM_CS``);
# - ordinal regression: each example's terms weighted by the weight of its rank (every
#   threshold term of example i carries C_i, as its ``cost:`` does);
# - a native one-vs-one strategy: each pairwise problem weights each example by its class (LIBSVM).
#
# :func:`apply_class_weight` is the one place that does it: ``train`` and cross-validation's
# warm C path call it on the data they hand to a fit; binary, Crammer-Singer, ordinal and
# one-vs-one fold the weights into ``sample_weight`` (so every family's problem construction sees
# them), one-vs-rest leaves them on the dataset for :func:`subproblem_weight`, which the shared
# one-vs-rest loop (:mod:`solvers.multiclass`) calls per class.


def class_weight_vector(class_weight: Mapping[Any, float] | str | None,
                        dataset: Dataset) -> np.ndarray | None:
    """The weight of each of ``dataset.classes`` (in that order), None for no weights."""
    if class_weight is None:
        return None
    classes = dataset.classes
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise InvalidParametersError(
                f"class_weight: {class_weight!r} is not a mapping label -> weight nor "
                f"'balanced'")
        counts = np.array([np.count_nonzero(dataset.y == c) for c in classes], dtype=float)
        return dataset.n_samples / (classes.shape[0] * counts)
    labels = dataset.class_labels
    keys = {label_key(label): k for k, label in enumerate(labels)}
    weights = np.ones(classes.shape[0])
    unknown = []
    for key, weight in class_weight.items():
        k = keys.get(label_key(key) if not isinstance(key, str) else key)
        if k is None and isinstance(key, str):  # "1.0" for the label 1, " 1" ...
            try:
                k = keys.get(label_key(float(key)))
            except ValueError:
                k = None
        if k is None:
            unknown.append(key)
            continue
        weights[k] = float(weight)
    if unknown:
        raise InvalidParametersError(
            f"class_weight: {', '.join(map(str, unknown))} "
            f"{'is no label' if len(unknown) == 1 else 'are no labels'} of the data (labels: "
            f"{', '.join(label_key(v) for v in labels)})")
    return weights


def apply_class_weight(dataset: Dataset, class_weight, task: str, C: float = 1.0) -> Dataset:
    """``dataset`` as the fit of ``task`` (one of ``solvers.base.TASKS``) must see it with
    ``class_weight`` (see the module docstring): the weights folded into ``sample_weight``,
    or, for one-vs-rest, attached for :func:`subproblem_weight`; an effective cost C times a
    weight outside ``solvers.base.C_RANGE`` is refused (:func:`check_effective_costs`)."""
    weights = class_weight_vector(class_weight, dataset)
    if weights is None:
        return dataset
    check_effective_costs(C, weights, dataset.sample_weight)
    if task == "ovr":
        return dataset.with_class_weight(weights)
    per_example = weights[np.searchsorted(dataset.classes, dataset.y)]
    if dataset.sample_weight is not None:
        per_example = per_example * dataset.sample_weight
    return dataset.with_sample_weight(per_example)


def check_effective_costs(C: float, class_weights: np.ndarray,
                          sample_weight: np.ndarray | None) -> None:
    """Refuse class weights that take an example's cost C_i = C x its class's weight x its
    sample weight out of ``C_RANGE``, where the float64 arithmetic of every family is sound
    (issue 49: C = 1 with a weight of 1e-300 passed C's own check); examples of weight 0 are
    left out of the problem and not checked."""
    sample = np.array([1.0]) if sample_weight is None else sample_weight[sample_weight > 0]
    if sample.size == 0:
        return
    low = C * float(np.min(class_weights)) * float(np.min(sample))
    high = C * float(np.max(class_weights)) * float(np.max(sample))
    if low < C_RANGE[0] or high > C_RANGE[1]:
        raise InvalidParametersError(
            f"class_weight: C times the class weights (and sample weights) gives example "
            f"costs from {low:g} to {high:g}, outside {C_RANGE[0]:g} .. {C_RANGE[1]:g} where "
            f"the float64 arithmetic is sound")


def subproblem_weight(dataset: Dataset, positive: float) -> np.ndarray | None:
    """The per-example cost factors of the binary problem ``positive`` against the rest:
    ``sample_weight``, times the positive class's weight on its examples when one-vs-rest
    class weights are attached (LIBLINEAR: the rest stays at C)."""
    weights = dataset.class_weight
    if weights is None:
        return dataset.sample_weight
    k = int(np.searchsorted(dataset.classes, positive))
    factor = np.where(dataset.y == positive, weights[k], 1.0)
    return factor if dataset.sample_weight is None else factor * dataset.sample_weight


def kernel_expansion_model(X, results, dataset: Dataset, kernel) -> KernelModel | LinearModel:
    """The model of binary or one-vs-rest kernel expansions f_k(x) = sum_j coef_kj K(x_j, x)
    + b_k, one ``(summary, (coef, intercept))`` per problem of ``results``
    (:func:`run_binary_subproblems`): for the linear kernel a LinearModel, w_k = sum_j
    coef_kj x_j (the same function, one product per row), else a KernelModel of the rows some
    coefficient uses."""
    rows = n_score_rows(dataset)
    coef = np.zeros((rows, dataset.n_samples))
    intercept = np.zeros(rows)
    for k, (_, (c, b)) in enumerate(results):
        coef[k], intercept[k] = c, b
    if kernel.name == "linear":
        weights = np.vstack([csr_rmatvec(X, row) for row in coef])
        return LinearModel(weights, intercept, dataset.classes)
    keep = np.flatnonzero(np.any(coef != 0.0, axis=0))
    return KernelModel(X[keep], coef[:, keep], intercept, dataset.classes, kernel)
