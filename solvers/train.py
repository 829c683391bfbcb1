"""The one entry point: ``train(dataset, solver=..., **params) -> TrainResult``.

It validates the parameters against the solver's model, hands the dataset to the task's fit
(by default the multiclass layer's one-vs-rest over the solver's binary ``run``), and wraps
the result with the log and the training metadata.  The service, the CLI and the tests all
train through here.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import ValidationError

from solvers import auto, portfolio
from solvers.approximation import Approximation, approximate
from solvers.base import (
    Fit,
    InvalidParametersError,
    Solution,
    SolverParams,
    SolverSpec,
    SubproblemResult,
    Termination,
    _validation_message,
)
from solvers.calibration import fit_pairwise_platt, fit_platt
from solvers.data.dataset import Dataset, label_key
from solvers.distributed import (
    CommunicationMonitor,
    DistributedBinaryProblem,
    DistributedDataset,
    PartitionLostError,
)
from solvers.losses import get_loss
from solvers.models import LinearModel, Model
from solvers.monitor import (
    Continued,
    IterationRecord,
    ListMonitor,
    Monitor,
    NullMonitor,
    Stopwatch,
    Tee,
)
from solvers.multiclass import (
    SubproblemMonitor,
    apply_class_weight,
    fit_linear_one_vs_one,
    fit_linear_one_vs_rest,
    n_score_rows,
    subproblem_weight,
)
from solvers.registry import get_solver
from solvers.scaling import FeatureScaler, scale_spread_warning


@dataclass
class TrainResult:
    model: Model
    objective: float
    log: list[IterationRecord]
    status: Termination
    message: str
    elapsed: float
    params: SolverParams
    subproblems: list[SubproblemResult]
    choice: auto.AutoChoice | None = None  # what solver="auto" chose, and why
    #: what the user should know (features of very different scales, ...)
    warnings: list[str] = field(default_factory=list)

    @property
    def iterations(self) -> int:
        return sum(s.iterations for s in self.subproblems)


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
        key = _values_key(spec.params_model, values)
        if key is not None:
            return spec, _validated(spec.params_model, key)
        return spec, spec.params_model.model_validate(values)
    except ValidationError as exc:
        raise InvalidParametersError(
            f"invalid parameters for solver {solver!r}: {_validation_message(exc)}") from None


def _values_key(model: type[SolverParams], values: dict[str, Any]) -> tuple | None:
    """The key :func:`_validated` keeps a validation under: the values with their types (1,
    1.0 and True are equal keys otherwise), or None when one does not hash (a class_weight
    dict) or a deprecated name is among them (its warning is given at every call)."""
    if any(name in values for name in model.renamed_fields):
        return None
    key = tuple(sorted((name, type(value), value) for name, value in values.items()))
    try:
        hash(key)
    except TypeError:
        return None
    return key


@functools.lru_cache(maxsize=512)
def _validated(model: type[SolverParams], key: tuple) -> SolverParams:
    """``model`` validated from the values of ``key`` (:func:`_values_key`), kept: the models
    are frozen, so one validated object serves every call with the same values (pydantic's
    validation was 25-125 us of a small set's 1-2 ms ``train``, issue 47).  A refusal raises
    and is not kept."""
    return model.model_validate({name: value for name, _, value in key})


def fit_handler(spec: SolverSpec, params: SolverParams, dataset: Dataset):
    """The fit procedure for what ``params`` ask of ``dataset``: the spec's handler of the
    task they pose (``SolverParams.posed_task``), else one-vs-one or one-vs-rest over
    ``spec.run``.  Raises :class:`InvalidParametersError` with the declaration's reason when
    the solver does not solve it."""
    return _fit_handler(spec, params, int(dataset.classes.shape[0]))


def fit_task(params: SolverParams, n_classes: int) -> str:
    """The declared task (``solvers.base.TASKS``) a fit handler is looked up by."""
    return params.posed_task(n_classes)


def _fit_handler(spec: SolverSpec, params: SolverParams, n_classes: int):
    task = fit_task(params, n_classes)
    spec.solves.require(task, params.loss, params.bias, params.loss_exponent,
                        f"solver {spec.name!r}")
    handler = spec.fit_handlers.get(task)
    if handler is not None:
        return handler
    return fit_linear_one_vs_one if task == "ovo" else fit_linear_one_vs_rest


def supports_task(spec: SolverSpec, params: SolverParams, n_classes: int) -> bool:
    """Whether ``spec`` solves what ``params`` ask of data with ``n_classes`` labels."""
    return spec.solves.allows(fit_task(params, n_classes), params.loss, params.bias,
                              params.loss_exponent)


def resolve(spec: SolverSpec, params: SolverParams, data: Dataset | auto.DatasetShape
            ) -> tuple[SolverSpec, SolverParams, auto.AutoChoice | None]:
    """The solver that would train ``data``: ``auto``'s most promising candidate (see
    :mod:`solvers.auto`; ``train`` runs its first candidates as a portfolio,
    :mod:`solvers.portfolio`), or the named one.  ``data`` may be a dataset's shape alone (a
    service checking a job); cross-validation resolves once for its whole grid."""
    if not isinstance(params, auto.AutoParamsBase):
        return spec, params, None
    shape = data if isinstance(data, auto.DatasetShape) else auto.DatasetShape.of(data)
    if params.approximation == "none":
        choice, spec, chosen = auto.choose(shape, params, get_solver, supports_task)
        return spec, chosen, choice
    # the low-rank path: the candidates run on the dense factor (n x rank), posed without
    # the approximation (computed once, before them), and the choice keeps it
    rank = params.solver_features(shape.n_samples, shape.n_features)
    factor = auto.DatasetShape(shape.n_samples, rank, shape.n_samples * rank, shape.n_classes)
    choice, spec, chosen = auto.choose(factor, params, get_solver, supports_task,
                                       on_factor=True)
    return spec, chosen, choice


def train(dataset: Dataset, solver: str = "mfn", params: SolverParams | dict | None = None,
          monitor: Monitor | None = None, **kwargs) -> TrainResult:
    """Train a model on ``dataset`` with the named solver.

    ``params`` (a parameter model or a dict) and keyword arguments are merged and validated by
    the solver's parameter model.  ``monitor`` receives every iteration record (numbered
    consecutively across the binary subproblems of a one-vs-rest run) and may stop the run.
    """
    if isinstance(dataset, DistributedDataset):
        return train_distributed(dataset, solver, params, monitor, **kwargs)
    if not isinstance(dataset, Dataset):
        raise TypeError("dataset must be a solvers.Dataset or a "
                        "solvers.distributed.DistributedDataset")
    spec, params = validate_params(solver, params, **kwargs)
    check_labels(params, dataset)
    probability = params.probability  # asked of the training, not of auto's chosen candidate
    collector = ListMonitor()
    caller = monitor if monitor is not None else NullMonitor()
    outer = caller  # the caller's monitor as the solver's records reach it
    sink = Tee(collector, outer)
    clock = Stopwatch()
    choice = None
    portfolio_run = isinstance(params, auto.AutoParamsBase)
    handler = None if portfolio_run else fit_handler(spec, params, dataset)
    scaler, work, warnings = prepare_features(dataset, params.scale)
    # the factorization reports to the caller's monitor, which may stop it; its records come
    # first in that monitor's log, the solver's follow them (the result's log is the solver's)
    approximation = approximate(work, params, monitor)
    solver_params = params
    if approximation is not None and approximation.stopped is not None:
        fit = stopped_factorization(weighted(work, params), params, approximation)
        approximation = None  # no factor: the model is the zero function on the data
    else:
        if approximation is not None:  # the factor is the solver's data (auto: all of theirs)
            work = approximation.dataset(work)
            solver_params = approximation.solver_params(params)
            outer = Continued(caller, approximation.records, approximation.seconds)
            sink = Tee(collector, outer)
        work = weighted(work, params)
        if portfolio_run:
            # the candidates are posed with the approximation (the problem asked) and run
            # without it, on the one factor
            ranking = auto.rank(auto.DatasetShape.of(work), params, get_solver, supports_task,
                                on_factor=approximation is not None)
            for entrant in ranking.entrants:
                entrant.params = Approximation.solver_params(entrant.params)
            outcome = run_auto(work, ranking, params.tol, collector, outer,
                               lambda s, p: fit_handler(s, p, dataset))
            fit, spec, choice = outcome.fit, outcome.entrant.spec, outcome.choice
            # the winner's parameters, with the approximation it trained under
            params = Approximation.with_approximation(outcome.entrant.params, params)
        else:
            fit = handler(work, spec, solver_params, sink)
    subproblems = fit.subproblems
    status = Termination.worst(s.status for s in subproblems)
    message = summary_message(subproblems)
    objective = float(sum(s.objective for s in subproblems))
    elapsed = clock()
    log = collector.records
    if choice is not None and choice.strategy in ("race", "alone"):
        # the result's log is the winner's; the caller's monitor saw every candidate's, tagged
        log = [r for r in log if r.extras.get("candidate") == choice.candidate]
    model = fit.model if scaler is None else scaler.scaled_model(fit.model)
    if approximation is not None:
        model = approximation.kernel_model(model)
    with_labels(model, dataset)
    own = own_probabilities(model, params)
    if own is not None:  # the loss's own probabilities (the logistic loss): no Platt step
        model.metadata.update(own)
    elif probability and status != Termination.STOPPED:  # a stopped run is not calibrated
        model.metadata.update(out_of_fold_calibration(dataset, spec, params))
    model.metadata.update(training_metadata(spec, params, dataset, objective, status, elapsed))
    if warnings:
        model.metadata["warnings"] = warnings
    if choice is not None:
        model.metadata["auto"] = choice.as_dict()
        message = f"{message} (auto: {choice.candidate}, {choice.strategy})"
    return TrainResult(model, objective, log, status, message, elapsed, params, subproblems,
                       choice, warnings)


#: ``auto`` runs its ranked favourite alone, without the race, where the race would run the
#: favourite's first slice on the calling thread anyway: a first slice
#: (``portfolio.first_slice``, 1.5 times the passes the rule predicts) of at most
#: ``portfolio.HERE_SECONDS`` at ``portfolio.ENTRIES_PER_SECOND`` (:func:`run_auto`).  What
#: the race costs around a fit that ends within that slice (its schedule, lane, per-record
#: charges and forwarding, its summary) was 130-220 us on sets LIBLINEAR solves in 0.05-0.4
#: ms (issue 47): a large share of such a run, for nothing the fallback does not keep (a
#: favourite that does not certify within the slice gives way to the race).
ALONE_MAX_SLICE_ENTRIES = portfolio.HERE_SECONDS * portfolio.ENTRIES_PER_SECOND
#: The favourite alone has this many of its first slices (and no more passes than
#: :data:`ALONE_MAX_SLICE_ENTRIES` span) to certify before the race takes over from the start.
#: One first slice (1.5 times the rule's prediction) was too tight once the small sets'
#: measurements were taken again with a statistic that survives the load (2026-12-08): on
#: housing's L2 loss at C = 1, 1e-3, dual_cd, the favourite, was still uncertified at 119
#: passes of its 116 and the race that followed (mfn won) took 6.2-14.8 ms where dual_cd alone
#: takes 1.4-1.8 and mfn alone 1.0 (load 4-5): on a set this small the race's start, its
#: lanes' threads, costs more than a favourite a few times slower than predicted.  So a wrong
#: favourite costs at most 6 times what the rule expected of it (the race's share is 1.5)
#: before the race begins.
ALONE_SLICES = 4.0


class _FirstSlice:
    """The favourite's monitor when it runs alone: each record charged its passes over the
    stored entries (``portfolio.record_passes``, the race's count) and the run stopped once
    they exceed the passes it has alone (:data:`ALONE_SLICES` first slices) uncertified; the
    caller's stop requests are the caller's."""

    def __init__(self, target: Monitor, passes: float, tol: float, n: int, nnz: int, d: int):
        self.target, self.passes, self.tol = target, passes, tol
        self.n, self.nnz, self.d = n, nnz, d
        self.work = 0.0
        self.spent = False
        self.last_iteration, self.last_elapsed = 0, 0.0  # of the records forwarded

    def report(self, record: IterationRecord) -> None:
        self.work += portfolio.record_passes(record.extras, self.n, self.nnz, self.d)
        self.last_iteration = max(self.last_iteration, int(record.iteration))
        self.last_elapsed = max(self.last_elapsed, float(record.elapsed))
        extras = record.extras
        last_class = int(extras.get("subproblem", 0)) >= int(extras.get("n_subproblems", 1)) - 1
        if self.work > self.passes and not (last_class and record.optimality <= self.tol):
            self.spent = True
        self.target.report(record)

    def stop_reason(self) -> str | None:
        if self.spent:
            return "its slices alone were spent uncertified: the race takes over"
        return self.target.stop_reason()


def run_auto(dataset: Dataset, ranking: auto.Ranking, tol: float, collector: ListMonitor,
             outer: Monitor, fit_for) -> portfolio.Outcome:
    """``auto``'s run: the race of :mod:`solvers.portfolio` over the ranking, or, on a
    problem whose favourite's first slice spans at most :data:`ALONE_MAX_SLICE_ENTRIES`, the
    favourite alone (``strategy="alone"``, no lanes) within :data:`ALONE_SLICES` such slices
    (and that bound): certified within the first, its model is the race's; within the
    others, its own, where the race might have let a challenger certify first (both are
    certified to ``tol``).  One that does not
    certify in them gives way to the race from the start (its records leave the result's log;
    the caller's monitor ``outer`` saw them, tagged, and sees the race's after them, numbered
    and timed on: a job's log is one sequence, its iterations unique).  Decisions read work,
    never time: the returned model is a function of the data and the parameters, certified as
    the race's."""
    sink = Tee(collector, outer)
    favourite = ranking.entrants[0]
    passes = portfolio.first_slice(ranking.entrants, dataset)
    entries = max(dataset.nnz + dataset.n_samples, 1)
    if len(ranking.entrants) > 1 and passes * entries <= ALONE_MAX_SLICE_ENTRIES:
        mark = len(collector.records)
        alone_passes = min(ALONE_SLICES * passes, ALONE_MAX_SLICE_ENTRIES / entries)
        watch = _FirstSlice(sink, alone_passes, tol, dataset.n_samples, dataset.nnz,
                            dataset.n_features)
        alone = auto.Ranking([favourite], ranking.reason, ranking.neighbours)
        outcome = portfolio.run(dataset, alone, tol, watch, fit_for)
        status = outcome.choice.runs[0]["status"]
        if not watch.spent and status in (str(Termination.CONVERGED),
                                          str(Termination.STOPPED)):
            # certified within its slice, or the caller's stop (a time limit, a cancel)
            choice = ranking.choice(tol, favourite)
            choice.strategy = "alone"
            choice.runs = outcome.choice.runs
            return portfolio.Outcome(outcome.fit, favourite, choice)
        del collector.records[mark:]
        sink = Tee(collector, Continued(outer, watch.last_iteration, watch.last_elapsed))
    return portfolio.run(dataset, ranking, tol, sink, fit_for)


#: Up to this many binary problems a run's message lists each; beyond, it is summarised
SPELLED_OUT_SUBPROBLEMS = 4


def summary_message(subproblems: list[SubproblemResult]) -> str:
    """A run's message, short enough to read whatever the number of binary problems: each
    one's message for a few; for more (letter one-vs-one: 325 pairs, once a 30 KB message),
    the count of each status and the message of the worst one (the most severe status, then
    the largest certified gap).  Every problem's own message stays in the result's
    ``subproblems`` (the service keeps them with the job)."""
    if len(subproblems) == 1:
        return subproblems[0].message
    if len(subproblems) <= SPELLED_OUT_SUBPROBLEMS:
        return "; ".join(f"class {s.label}: {s.message}" for s in subproblems)
    order = list(Termination)
    counts = {status: 0 for status in order}
    for s in subproblems:
        counts[Termination(s.status)] += 1

    def severity(s: SubproblemResult) -> tuple[int, float]:
        gap = s.extras.get("relative_duality_gap")
        return order.index(Termination(s.status)), -1.0 if gap is None else float(gap)

    worst = max(subproblems, key=severity)
    tally = ", ".join(f"{n} {status.value}" for status, n in counts.items() if n)
    return (f"{len(subproblems)} binary problems: {tally}; the worst, class {worst.label}: "
            f"{worst.message}")


def stopped_factorization(dataset: Dataset, params: SolverParams, approximation) -> Fit:
    """The fit of a run whose monitor stopped the low-rank factorization (cancelled, a time
    limit) before any solver started: every solver's starting point, w = 0 and b = 0, as a
    linear model on the data's features (no factor, no landmarks), with status ``stopped``
    and one subproblem, the first binary problem a solver would have posed (``classes[1]``
    against ``classes[0]``, or the first class against the rest) and its objective at that
    point, C sum_i s_i loss(0) in every family's convention, after no iterations."""
    stopped = approximation.stopped
    classes = dataset.classes
    positive = classes[1] if classes.shape[0] == 2 else classes[0]
    y = np.where(dataset.y == positive, 1.0, -1.0)
    problem = params.binary_problem(dataset.X, y, subproblem_weight(dataset, positive))
    zero = problem.join(np.zeros(dataset.n_features), 0.0)
    rows = n_score_rows(dataset)
    model = LinearModel(np.zeros((rows, dataset.n_features)), np.zeros(rows), classes)
    summary = SubproblemResult(
        label_key(positive), float(problem.objective(zero)), Termination.STOPPED,
        f"stopped: {stopped}", 0,
        {"factorization": {"step": stopped.step, "done": stopped.done, "total": stopped.total,
                           "seconds": approximation.seconds}})
    return Fit(model, [summary])


def distributed_refusal(spec: SolverSpec, params: SolverParams, n_classes: int) -> str | None:
    """Why ``spec`` with ``params`` cannot train on a distributed dataset, or None."""
    if spec.portfolio:
        return ("solver 'auto' races or switches between candidates on one machine's data; on "
                "a distributed dataset name the solver (mfn, cutting_plane, "
                "interior_point or dual_cd)")
    if spec.distributed is None:
        return (f"solver {spec.name!r} does not train on distributed data (its engine needs "
                f"every row in one process); the solvers that do: mfn, cutting_plane, "
                f"interior_point, dual_cd")
    task = fit_task(params, n_classes)
    if task not in ("binary", "ovr"):
        return (f"on distributed data {spec.name!r} solves binary and one-vs-rest problems, "
                f"not task {task!r}")
    if spec.distributed_solves is not None:
        reason = spec.distributed_solves.refusal(task, params.loss, params.bias,
                                                 params.loss_exponent,
                                                 f"solver {spec.name!r} on distributed data")
        if reason is not None:
            return reason
    for name, value, default in (("scale", params.scale, "none"),
                                 ("approximation", getattr(params, "approximation", "none"),
                                  "none"),
                                 ("class_weight", params.class_weight, None),
                                 ("probability", params.probability, False)):
        if value != default:
            return (f"{name}={value!r} is not available on distributed data (it needs a pass "
                    f"the distributed path does not make yet); leave it at {default!r}")
    return None


def train_distributed(dataset: DistributedDataset, solver: str = "mfn",
                      params: SolverParams | dict | None = None,
                      monitor: Monitor | None = None, **kwargs) -> TrainResult:
    """``train`` on a :class:`~solvers.distributed.DistributedDataset`: the spec's
    ``distributed`` solve on each binary problem (one for two classes, one per class
    against the rest otherwise), the rows staying on the workers.  Every record carries the
    iteration's communication (``reductions``, ``bytes_moved``, ``communication_seconds``);
    each subproblem's extras the totals.  Raises :class:`InvalidParametersError` with the
    reason for a solver or an option that does not run on distributed data."""
    spec, params = validate_params(solver, params, **kwargs)
    n_classes = int(dataset.classes.shape[0])
    if n_classes < 2:
        raise InvalidParametersError("training needs at least two distinct labels")
    reason = distributed_refusal(spec, params, n_classes)
    if reason is None:
        try:
            spec.solves.require(fit_task(params, n_classes), params.loss, params.bias,
                                params.loss_exponent, f"solver {spec.name!r}")
        except ValueError as exc:
            reason = str(exc)
    if reason is not None:
        raise InvalidParametersError(reason)
    collector = ListMonitor()
    sink = Tee(collector, monitor if monitor is not None else NullMonitor())
    clock = Stopwatch()
    communication_start = dataset.partitions.communication.totals()
    classes = dataset.classes
    targets = [(None, classes[1])] if n_classes == 2 else \
        [(label_key(c), c) for c in classes]
    counter = [0]
    subproblems = []
    rows = []
    restarts: list[dict] = []
    for k, (tag, positive) in enumerate(targets):
        sub = SubproblemMonitor(sink, counter, k, tag, len(targets), clock)
        solution, problem = _solve_distributed(dataset, spec, params, positive, sub, restarts,
                                               tag if len(targets) > 1 else None, monitor)
        rows.append(problem.split(solution.beta))
        subproblems.append(SubproblemResult(tag or label_key(positive), solution.objective,
                                            Termination(solution.status), solution.message,
                                            solution.iterations, solution.extras))
        if solution.status == Termination.STOPPED:
            break
    weights = np.zeros((len(targets), dataset.n_features))
    intercepts = np.zeros(len(targets))
    for k, (w, intercept) in enumerate(rows):
        weights[k], intercepts[k] = w, intercept
    model = LinearModel(weights, intercepts, classes)
    model.classes_ = dataset.class_labels
    status = Termination.worst(s.status for s in subproblems)
    message = summary_message(subproblems)
    objective = float(sum(s.objective for s in subproblems))
    elapsed = clock()
    # this training's rounds (the dataset's counter runs on over every solve on it)
    communication = dataset.partitions.communication.since(communication_start)
    if restarts:
        communication["restarts"] = restarts
    model.metadata.update({"solver": spec.name, "params": params.model_dump(mode="json"),
                           "objective": objective, "status": str(status),
                           "training_seconds": elapsed, "training_data": dataset.stats(),
                           "distributed": communication})
    warnings = [r["warning"] for r in restarts]
    if warnings:
        model.metadata["warnings"] = warnings
    return TrainResult(model, objective, collector.records, status, message, elapsed, params,
                       subproblems, warnings=warnings)


def _solve_distributed(dataset: DistributedDataset, spec: SolverSpec, params: SolverParams,
                       positive, monitor: Monitor, restarts: list[dict], tag,
                       caller: Monitor | None = None
                       ) -> tuple[Solution, DistributedBinaryProblem]:
    """One binary problem's distributed solve, restarted after a lost worker.

    When a round meets a lost worker (:class:`~solvers.distributed.PartitionLostError`), the
    partitions that no longer answer are read again from their shards onto the workers left
    (:meth:`~solvers.distributed.PartitionGroup.recover`), the problem is posed again and the
    family's solve resumes from the checkpoint its engine kept (``problem.checkpoint``, a
    :class:`~solvers.base.WarmStart` handed back as ``start``: mfn's and the interior-point
    method's last iterate, the cutting planes' w_best with their cuts), at most
    ``dataset.max_restarts`` times; the records continue the log (numbered and timed on,
    tagged ``restart``).  Each restart is appended to ``restarts`` (which worker was lost,
    which partitions went where, the iteration it resumed after, a warning line), and the
    warning is told at once to the ``caller``'s monitor when it has ``notice``.  Raises
    :class:`~solvers.distributed.PartitionLostError` with the reason when the restarts are
    spent, no worker is left or a shard no longer reads as it did."""
    allowed = dataset.max_restarts
    communication_start = dataset.partitions.communication.totals()  # every attempt's
    resume = None
    records = [0]
    clock = Stopwatch()
    attempt = 0
    while True:
        before = records[0]  # the records of the attempts before this one
        target = monitor if attempt == 0 else Continued(
            monitor, before, clock(), {"restart": attempt})
        counting = _Counting(target, records)
        problem = None
        try:
            problem = DistributedBinaryProblem(dataset, positive, C=params.C,
                                               loss=params.loss, bias=params.bias,
                                               bias_scale=params.bias_scale,
                                               p=params.loss_exponent)
            solution = spec.distributed(problem, params,
                                        CommunicationMonitor(counting, problem.communication),
                                        start=resume)
        except ValueError as exc:
            raise InvalidParametersError(str(exc)) from None
        except PartitionLostError as exc:
            if attempt >= allowed:
                raise PartitionLostError(
                    f"{exc} (gave up: {attempt} restart(s) already made, restarts="
                    f"{allowed})") from exc
            if problem is not None and problem.checkpoint is not None:
                resume = problem.checkpoint
            try:
                recovery = dataset.partitions.recover()
            except PartitionLostError as failed:
                raise PartitionLostError(f"{exc}; then: {failed}") from failed
            attempt += 1
            where = ", ".join(f"{i} -> {w}" for i, w in sorted(recovery["placed"].items()))
            lost = ", ".join(recovery["lost_workers"]) or "none (the round failed: " \
                "every partition answered the probe)"
            after = f"after {records[0]} iteration record(s)" if records[0] else \
                "before the first iteration"
            resumed = "its last good iterate" if resume is not None else "the start"
            label = f"class {tag}: " if tag is not None else ""
            warning = (f"{label}worker(s) {lost} lost {after}; partition(s) "
                       f"{where or 'none'} read again from their shards; the solve resumed "
                       f"from {resumed} (restart {attempt} of at most {allowed})")
            restarts.append({"subproblem": label_key(positive), "restart": attempt,
                             "lost_workers": recovery["lost_workers"],
                             "partitions": {str(i): w for i, w in recovery["placed"].items()},
                             "after_records": records[0], "resumed": resume is not None,
                             "reason": str(exc), "warning": warning})
            notice = getattr(caller, "notice", None)
            if notice is not None:
                notice(warning)
            continue
        totals = dataset.partitions.communication.since(communication_start)
        if attempt:
            solution = dataclasses.replace(
                solution, iterations=solution.iterations + before,
                extras={**solution.extras, **totals, "restarts": attempt})
        else:
            solution.extras.update(totals)
        return solution, problem


class _Counting:
    """Counts the records that pass, across a restarted solve's attempts (``count[0]``)."""

    def __init__(self, target: Monitor, count: list[int]):
        self.target, self.count = target, count

    def report(self, record) -> None:
        self.count[0] += 1
        self.target.report(record)

    def stop_reason(self) -> str | None:
        return self.target.stop_reason()


#: How a one-vs-one model (smo's ``multiclass="ovo"``) gets probabilities: True (the
#: default), its pairs' sigmoids coupled (Wu, Lin & Weng 2004, method 2, as LIBSVM's ``-b 1``:
#: :func:`solvers.calibration.couple`); False, one sigmoid per column of its per-class vote
#: scores, normalized, as a one-vs-rest model's.  Measured on dna (smo, rbf, gamma "scale",
#: trained on dna.scale's 2,000 rows, log loss on dna.scale.t's 1,186; tests/test_probability
#: .py): at C = 1 coupled 0.1321, the vote scores' sigmoids 0.1836, a one-vs-rest model's
#: sigmoids 0.1418 (scikit-learn's SVC(probability=True), LIBSVM's coupling on other folds:
#: 0.1319); at C = 10: 0.1310, 0.1715, 0.1362 (SVC 0.1309).  The vote scores are a step
#: function plus a squashed confidence, which a sigmoid fits badly; coupling uses each pair's
#: own decision value, calibrated on that pair's examples only.
OVO_COUPLING = True


def out_of_fold_calibration(dataset: Dataset, spec: SolverSpec, params: SolverParams,
                            folds: int = 5, seed: int = 0,
                            coupling: bool | None = None) -> dict[str, Any]:
    """The model's calibration metadata, fitted on the decision values of ``folds`` stratified
    folds, each scored by a model trained on the others with the same solver and parameters
    (LIBSVM's ``-b 1`` does the same): ``{"platt": rows}`` (:func:`solvers.calibration.
    fit_platt`), or for a one-vs-one model with ``coupling`` (None: :data:`OVO_COUPLING`)
    ``{"pairwise_platt": rows}``, one sigmoid per pair
    (:func:`solvers.calibration.fit_pairwise_platt`), coupled when predicting."""
    if params.task == "ordinal":
        raise InvalidParametersError("probability=True: an ordinal model has one score for "
                                     "p ranks, not a sigmoid per class")
    coupling = OVO_COUPLING if coupling is None else coupling
    assignment = dataset.stratified_folds(folds, seed)
    plain = params.model_copy(update={"probability": False})
    decision = pairwise = None
    k = int(dataset.classes.shape[0])
    ovo = False
    for fold in range(folds):
        held_out = assignment == fold
        model = train(dataset.subset(~held_out), solver=spec.name, params=plain).model
        ovo = k > 2 and getattr(model, "multiclass", None) == "ovo"
        if ovo and coupling:
            scores = model.pairwise_decision(dataset.X[held_out])
            if pairwise is None:
                pairwise = np.zeros((dataset.n_samples, scores.shape[1]))
            pairwise[held_out] = scores
            continue
        scores = model.decision_function(dataset.X[held_out])
        if decision is None:
            decision = np.zeros((dataset.n_samples,) + scores.shape[1:])
        decision[held_out] = scores
    truth = np.searchsorted(dataset.classes, dataset.y)
    if pairwise is not None:
        return {"pairwise_platt": fit_pairwise_platt(pairwise, truth, k).tolist()}
    return {"platt": fit_platt(decision, truth, k).tolist()}


def own_probabilities(model: Model, params: SolverParams) -> dict[str, Any] | None:
    """The calibration metadata of a model whose loss is the negative log-likelihood of a
    sigmoid of its score (``Loss.margin_sigmoid``: the logistic loss's P(y = +1 | x) =
    1 / (1 + exp(-f(x)))), or None for the other losses: that sigmoid for each score column
    in Platt's form (``{"platt": rows}``, so ``predict_proba``, the ONNX export and the
    service read them as any calibrated model's), one-vs-rest columns normalized to sum 1 as
    LIBLINEAR's ``predict_probability`` does; a one-vs-one model's pairs coupled as LIBSVM's
    (``{"pairwise_platt": rows}``).  Nothing is fitted: ``probability=True`` adds no step."""
    if params.task != "classification":
        return None
    sigmoid = get_loss(params.loss, params.loss_exponent).margin_sigmoid
    if sigmoid is None:
        return None
    k = len(model.classes_)
    note = {"probability": "the loss's own (margin_sigmoid), no Platt step"}
    if k > 2 and getattr(model, "multiclass", None) == "ovo":
        return {"pairwise_platt": [list(sigmoid)] * (k * (k - 1) // 2), **note}
    return {"platt": [list(sigmoid)] * (1 if k == 2 else k), **note}


def with_labels(model: Model, dataset: Dataset) -> Model:
    """``model`` with ``classes_`` in the labels' own type (the solvers trained on their float
    values): ints stay ints, strings strings."""
    if len(model.classes_) == len(dataset.classes):
        model.classes_ = dataset.class_labels
    return model


def weighted(dataset: Dataset, params: SolverParams) -> Dataset:
    """``dataset`` with ``params.class_weight`` applied for the task they pose
    (:func:`solvers.multiclass.apply_class_weight`, the one place that applies them)."""
    return apply_class_weight(dataset, params.class_weight,
                              params.posed_task(int(dataset.classes.shape[0])), params.C)


#: More distinct labels than this, not all integers, are taken for real values: a classifier
#: is refused with the hint to ask for regression (never inferred: a user's 60 classes
#: labelled 0.5, 1.5, ... stay classes if asked for as such below this, and a regression is
#: always asked for explicitly)
REAL_VALUED_CLASSES = 50


def check_labels(params: SolverParams, dataset: Dataset) -> None:
    """Ordinal regression ranks numbers and regression fits them: string labels have no order
    or value either may use (a one-class fit reads no labels).  Classification refuses labels
    that look real-valued (:data:`REAL_VALUED_CLASSES`), naming task='regression'."""
    if params.task in ("ordinal", "regression") and dataset.label_values is not None:
        what = "ranks" if params.task == "ordinal" else "real values"
        raise InvalidParametersError(f"task={params.task!r} needs numeric labels ({what}); "
                                     "the labels are strings")
    if params.task == "classification" and dataset.label_values is None:
        classes = dataset.classes
        if classes.shape[0] > REAL_VALUED_CLASSES and np.any(classes != np.round(classes)):
            # the task is never switched for the user: a classifier asked for is refused
            raise InvalidParametersError(
                f"the labels look real-valued ({classes.shape[0]} distinct values, not all "
                f"integers): a classifier would train one problem per value; for support "
                f"vector regression ask for task='regression' (loss "
                f"'squared_epsilon_insensitive' or 'epsilon_insensitive', epsilon as "
                f"LIBLINEAR's -p)")


def prepare_features(dataset: Dataset, scale: str
                     ) -> tuple[FeatureScaler | None, Dataset, list[str]]:
    """The scaler ``scale`` asks for (fitted on ``dataset``), the data the solver trains on,
    and the warnings to pass on: with scaling, that sparse data were not centered; without,
    that the columns' scales span more than three decades (:mod:`solvers.scaling`)."""
    if scale == "none":
        warning = scale_spread_warning(dataset)  # the dataset keeps its columns' maxima
        return None, dataset, [warning] if warning else []
    scaler = FeatureScaler.fit(dataset.X, scale)
    warnings = []
    if scale == "standard" and not scaler.centered:
        warnings.append("scale='standard' divided the sparse columns by their standard "
                        "deviation without centering them (centering would fill the matrix)")
    return scaler, scaler.transform_dataset(dataset), warnings


def training_metadata(spec: SolverSpec, params: SolverParams, dataset: Dataset,
                      objective: float, status: str, elapsed: float) -> dict[str, Any]:
    return {
        "solver": spec.name,
        "params": _dumped(params),
        "objective": objective,
        "status": str(status),
        "training_seconds": elapsed,
        "training_data": dataset.stats().as_dict(),
    }


def _dumped(params: SolverParams) -> dict[str, Any]:
    """``params.model_dump(mode="json")``, kept per (frozen, hashable) parameters: pydantic's
    serializer was 20-40 us of a small set's ``train`` (issue 47).  A fresh dict each call
    (its lists copied), so a model's metadata never shares one with another's."""
    try:
        dumped = _dump(params)
    except TypeError:  # unhashable parameters (a class_weight dict)
        return params.model_dump(mode="json")
    return {key: _copied(value) for key, value in dumped.items()}


def _copied(value):
    return [_copied(item) for item in value] if isinstance(value, list) else value


@functools.lru_cache(maxsize=256)
def _dump(params: SolverParams) -> dict[str, Any]:
    return params.model_dump(mode="json")
