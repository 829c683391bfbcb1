"""``solver="auto"``: the solver and settings the project's own benchmarks measured fastest.

What it picks from.  Every linear solver of the registry with the settings that change how it
solves (not what it solves): the :data:`CANDIDATES`.  Those that cannot solve the asked problem
(its loss, bias mode or task) drop out; when one remains it is the choice, with that reason.

What it promises.  ``tol`` is a relative duality gap, (P - D)/P, which bounds the relative
suboptimality: every candidate with a certified gap stops at it, by the parameter every
such solver names the same, ``tol`` (``solvers.base.gap_tolerance_field``,
:meth:`Candidate.params_for`).  mfn ties each Newton step's CG to the gap so that its last
step aims at ``tol`` rather than past it; dual_cd on the squared hinge hands its point to
mfn's Newton method after 300 uncertified outer iterations, as LIBLINEAR's ``-s 1`` switches
to ``-s 2``; the cutting planes, alm and the interior-point method stop at ``tol`` as they
check it.  What auto declares it solves is the union of its candidates' declarations,
nothing more (``solvers.registry``; ``tests/test_declarations.py`` trains every declared
combination).

How it picks.  ``bench/bench_auto.py`` measures every candidate on the benchmark problems (the
real datasets of the repository's ``data/``, hinge and squared hinge, C from 0.01 to 100) at the
targets :data:`MEASURED_TOLERANCES`: the time each takes to stop, certified, at that gap (a run
that did not converge within the time cap counts as :data:`CENSORED_FACTOR` caps).  The
measurements are kept in the package (``auto_measurements.json``) and are the fitted rule: a
problem is placed by its features -- log10 of n, d, stored entries per row and C (density is
their ratio, so not a separate axis), and the decades spanned by the columns' scales and by
the rows' norms (raw data in mixed units: first-order methods slow down on it by orders of
magnitude, so it must find raw neighbours, the benchmark's raw copies of australian and
breast-cancer) -- and the k nearest measured problems of the same loss,
at the measured target nearest ``tol``, vote: each candidate scores the geometric mean over
them of its time divided by the fastest candidate's time on that problem, and the lowest score
wins.  k is fitted per loss (``bench_auto fit``: the k whose choices, with each dataset left
out in turn, were fastest) and stored with the measurements.  The largest k tried, 34, is more
than the 30 problems of a loss measured at a target, so every problem votes: the rule is then
the loss's best single candidate over the benchmarks, and the fit takes it when no
neighbourhood does better (on the measurements of 2026-11-26, before dual_cd was measured, it
did so for the hinge; on those of 2026-11-27, with dual_cd and the raw copies, the hinge votes
with k = 3 and the squared hinge with k = 5).  A nearest-neighbour rule assumes
no form for how time depends on the shape, and its reason can be stated in the measurements it
rests on, which the result carries (:class:`AutoChoice`).

On a low-rank factor (``approximation="nystrom" | "icf"``): ``train`` factors the kernel once
and the candidates race on that one factor, a dense n x rank matrix, which
the rule's measurements (sparse data) do not cover; they are ordered by what
``bench/bench_lowrank.py`` measured on factors instead (:data:`FACTOR_ORDER`).

The problems of issue 47 are measured the same way (``bench_auto measure``): the logistic
loss (dual_cd's Yu-Huang-Lin dual, LIBLINEAR -s 7, against newton's truncated Newton method,
-s 0) on the small classification sets, and support vector regression on the six regression
sets of ``data/regression`` (epsilon = 0.1 std(y)): the squared epsilon-insensitive loss
(mfn, -s 11's problem, against dual_cd, -s 12) and the L1 loss (dual_cd alone, -s 13: no
other linear family solves it, so it is chosen as the only one).  ``task="regression"``
takes ``epsilon``, LIBLINEAR's ``-p``, posed to every candidate.

Bias modes: the measurements are of the regularized bias (the mode every candidate solves);
a problem with a free or no bias is placed the same way among the candidates that support its
mode.  Losses other than hinge and squared hinge have one solver each (modified Huber: mfn;
least squares: lssvm for the free bias, proximal_svm for the regularized one), or, for lp,
one solver with two unmeasured variants: alm's exact one, the first candidate, saying so.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache, cached_property, lru_cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from solvers.base import (
    BiasMode,
    InvalidParametersError,
    LossName,
    MulticlassStrategy,
    SolverParams,
    SolverSpec,
    Solves,
    gap_tolerance_field,
)
from solvers.config import INTERIOR_POINT_MAX_DENSE_PARAMS
from solvers.data.dataset import Dataset
from solvers.losses import DEFAULT_EPSILON, LOSS_TYPES, canonical
from solvers.scaling import column_scale_decades, row_norm_decades

MEASUREMENTS = Path(__file__).with_name("auto_measurements.json")

#: How many measured problems vote when the measurements do not say (``bench_auto fit``
#: chooses k per loss by leave-one-dataset-out and stores it with them).
NEIGHBOURS = 3
#: A candidate that would factorize a dense square system with more rows than this is left
#: out (the interior-point method refuses one past the same limit: news20's 62,062).
MAX_DENSE_SIDE = INTERIOR_POINT_MAX_DENSE_PARAMS

#: The k ``bench_auto fit`` tries; 34 exceeds the problems of a loss at a target (every one
#: votes: the loss's best fixed candidate).
NEIGHBOUR_CHOICES = (1, 2, 3, 5, 8, 13, 21, 34)

#: A run the time cap cut off counts as this many caps (it was slower than the cap, by an
#: unknown factor).
CENSORED_FACTOR = 2.0


@dataclass(frozen=True)
class Candidate:
    """A registered solver with the settings that change how, not what, it solves
    (``settings``, its name's) and those every run of it in ``auto`` has (``fixed``, not in
    its name: ``SolverSpec.auto_fixed``)."""

    solver: str
    settings: tuple[tuple[str, Any], ...] = ()
    fixed: tuple[tuple[str, Any], ...] = field(default=(), compare=False)

    @property
    def name(self) -> str:
        if not self.settings:
            return self.solver
        return f"{self.solver}(" + ",".join(f"{k}={v}" for k, v in self.settings) + ")"

    @property
    def params(self) -> dict[str, Any]:
        return {**dict(self.fixed), **dict(self.settings)}

    def params_for(self, spec: SolverSpec, tol: float) -> dict[str, Any]:
        """The settings, and the gap tolerance ``tol`` where the solver (``spec``) certifies
        one (``SolverSpec.certifies_gap``)."""
        return {**self.params, "tol": tol} if spec.certifies_gap else self.params


def candidates_of(specs: Iterable[SolverSpec]) -> tuple[Candidate, ...]:
    """The candidates the specs declare (``SolverSpec.auto_candidates``, in the specs'
    order): the registry passes its own, so a family's new solver or setting joins ``auto``
    by declaring it (``solvers.registry.AUTO_CANDIDATES``)."""
    return tuple(Candidate(spec.name, settings, spec.auto_fixed)
                 for spec in specs for settings in spec.auto_candidates)


def declared(candidates: Iterable[Candidate], get_solver: Callable[[str], SolverSpec]
             ) -> Solves:
    """What ``auto`` over ``candidates`` solves: the union of their solvers' declarations,
    nothing more."""
    return Solves.union(get_solver(c.solver).solves for c in candidates)

#: The candidates' order on a dense low-rank factor: ``bench/bench_lowrank.py``, every linear
#: family on the same Nystrom factor (``bench/history/notebook.md``, "Low-rank kernels",
#: 2026-11-26: ijcnn1, 5,000 rows at rank 512, seconds after the factor: dual_cd 1.0,
#: cutting_plane 1.0, mfn 1.0 (squared hinge), alm 12.4, interior_point 10.1; full ijcnn1 at
#: rank 512: dual_cd 19 s, mfn 59 s).  The first two race on two threads; the rest follow in
#: the registry's order (``AUTO_CANDIDATES``).
FACTOR_ORDER = ("dual_cd", "cutting_plane(method=ocas)", "mfn")

#: The gap targets the benchmark measures; ``tol`` uses the nearest (in log scale).
MEASURED_TOLERANCES = (1e-3, 1e-6)

class AutoParamsBase(SolverParams):
    """Let the library choose the solver.  The problem is stated as for any solver (loss, bias
    mode, C, task); the solver and its settings are chosen from the dataset's shape by the
    rule fitted to the project's benchmarks (see :mod:`solvers.auto`), and the result says
    which and why.  What it solves is what its candidates solve: the registry builds the
    parameter model from their declarations (:func:`make_spec`; ``get_solver("auto").
    params_model``), this is its base."""

    relative_fields: ClassVar[tuple[str, ...]] = ("tol",)  # its epsilon is the tube's width
    tube_field: ClassVar[str | None] = "epsilon"  # shown only for a regression

    solver: Literal["auto"] = "auto"
    loss: LossName = Field("squared_hinge", description="The loss of docs/design.md's objective.")
    bias: BiasMode = Field(
        "regularized", description="How the bias enters the problem (docs/design.md).")
    tol: float = gap_tolerance_field()
    p: float = Field(1.5, ge=1.0, le=2.0,
                     description="The exponent of loss='lp' (ignored by the other losses).")
    task: Literal["classification", "ordinal", "regression"] = Field(
        "classification",
        description="classification (binary or multi-class), ordinal regression (ranks), or "
                    "regression (real-valued labels, a residual loss).")
    epsilon: float = Field(
        DEFAULT_EPSILON, ge=0,
        description="task='regression': the half width of the insensitive tube of the "
                    "residual losses, max(0, |y - f(x)| - epsilon) (LIBLINEAR's -p, default "
                    "0.1); every candidate is posed it.")
    multiclass: MulticlassStrategy = Field(
        "ovr", description="Multi-class strategy: ovr (one-vs-rest) or a native one "
                           "(crammer_singer: one joint problem; ovo: one-vs-one).")

    @property
    def loss_exponent(self) -> float:
        return canonical(self.loss, self.p)[1]

    @property
    def loss_epsilon(self) -> float:
        return self.epsilon


def params_model(declaration: Solves, chosen_among: tuple[Candidate, ...] = ()
                 ) -> type[AutoParamsBase]:
    """``auto``'s parameter model: the base with its choices narrowed to what the candidates
    declare (``declaration``, the union of their :class:`~solvers.base.Solves`), carrying the
    candidates it chooses among (``chosen_among``)."""

    class AutoParams(AutoParamsBase):
        __qualname__ = "AutoParams"
        __doc__ = AutoParamsBase.__doc__
        solves: ClassVar[Solves] = declaration
        candidates: ClassVar[tuple[Candidate, ...]] = chosen_among
        loss: declaration.choices("loss") = AutoParamsBase.model_fields["loss"]
        bias: declaration.choices("bias") = AutoParamsBase.model_fields["bias"]
        task: declaration.choices("task") = AutoParamsBase.model_fields["task"]
        multiclass: declaration.choices("multiclass") = \
            AutoParamsBase.model_fields["multiclass"]

    return AutoParams


@dataclass(frozen=True)
class DatasetShape:
    """What the choice looks at in a dataset.  A service can give it without the arrays
    (``X`` None): the scale spreads then read 0, a scaled dataset's."""

    n_samples: int
    n_features: int
    nnz: int
    n_classes: int
    #: the feature matrix, or the dataset (which keeps its columns' maxima and rows' norms:
    #: a repeated ``train`` on it makes no pass), for the scale spreads: read only when the
    #: ranking places the problem among the measured ones (a pass over the data each, so not
    #: for a single candidate or on a low-rank factor)
    X: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, dataset: Dataset) -> DatasetShape:
        return cls(dataset.n_samples, dataset.n_features, dataset.nnz,
                   int(dataset.classes.shape[0]), dataset)

    @cached_property
    def spreads(self) -> tuple[float, float]:
        """The decades spanned by the columns' max |x_ij| and by the rows' norms."""
        if self.X is None:
            return 0.0, 0.0
        return column_scale_decades(self.X), row_norm_decades(self.X)

    def features(self, C: float) -> tuple[float, ...]:
        return problem_features(self.n_samples, self.n_features, self.nnz, C, *self.spreads)


@dataclass
class AutoChoice:
    """What ``auto`` chose, and why (the measured problems the choice rests on)."""

    candidate: str  # the candidate's name, e.g. "alm(variant=exact)"
    solver: str
    settings: dict[str, Any]  # the candidate's settings and its gap tolerance
    reason: str
    neighbours: list[dict[str, Any]] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    #: how the candidates ran (solvers.portfolio): "single" or "race"
    strategy: str | None = None
    #: one entry per candidate that ran: candidate, solver, seconds, work_passes (the work
    #: the race charged it), iterations, status, objective, threads, outcome (why it ended:
    #: won, stopped behind or after the winner, ended unconverged, failed)
    runs: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"candidate": self.candidate, "solver": self.solver, "settings": self.settings,
                "reason": self.reason, "strategy": self.strategy, "runs": self.runs,
                "neighbours": self.neighbours, "scores": self.scores}


def problem_features(n_samples: int, n_features: int, nnz: int, C: float,
                     column_decades: float = 0.0, row_decades: float = 0.0
                     ) -> tuple[float, ...]:
    """The coordinates problems are compared in: log10 of n, d, entries per row and C, and the
    decades the columns' scales and the rows' norms span (one decade of spread weighs as one
    of n: raw measurements in mixed units, which slow the first-order methods by orders of
    magnitude, then find raw neighbours)."""
    return (math.log10(max(n_samples, 1)), math.log10(max(n_features, 1)),
            math.log10(max(nnz / max(n_samples, 1), 1e-3)), math.log10(C),
            column_decades, row_decades)


@cache
def _document(path: Path = MEASUREMENTS) -> dict[str, Any]:
    if not path.exists():
        return {"problems": []}
    return json.loads(path.read_text())


def load_measurements(path: Path = MEASUREMENTS) -> list[dict[str, Any]]:
    """The benchmark measurements the rule is fitted to (``bench/bench_auto.py`` writes them)."""
    return _document(path)["problems"]


def measured_wins(path: Path = MEASUREMENTS) -> dict[str, int]:
    """How often each solver was the fastest to certify its target over the measurements
    (every problem and target): the solvers auto most often runs first, by name (what a
    service compiles first, ``app.jobs.worker.SolverWarmUp``)."""
    wins: dict[str, int] = {}
    for problem in load_measurements(path):
        for runs in problem["runs"].values():
            converged = {name: entry["seconds"] for name, entry in runs.items()
                         if entry["status"] == "converged" and entry["seconds"] is not None}
            if converged:
                solver = min(converged, key=converged.__getitem__).split("(")[0]
                wins[solver] = wins.get(solver, 0) + 1
    return wins


def fitted_neighbours(loss: str, path: Path = MEASUREMENTS) -> int:
    """The k chosen for ``loss`` by ``bench_auto fit`` (leave-one-dataset-out)."""
    return _document(path).get("neighbours", {}).get(loss, NEIGHBOURS)


def measured_tolerance(tol: float) -> float:
    """The measured target nearest ``tol`` in log scale."""
    return min(MEASURED_TOLERANCES, key=lambda t: abs(math.log(t / tol)))


def tolerance_key(tol: float) -> str:
    return f"{tol:g}"


def effective_seconds(entry: dict[str, Any]) -> float:
    """A run's measured seconds; a run that did not converge within its cap counts as
    ``CENSORED_FACTOR`` caps."""
    if entry["seconds"] is not None:
        return entry["seconds"]
    return CENSORED_FACTOR * entry["cap"]


def rank_candidates(features: tuple[float, ...], loss: str, tol: float, names: list[str],
                    measurements: list[dict[str, Any]], neighbours: int = NEIGHBOURS,
                    exclude: Callable[[dict[str, Any]], bool] | None = None,
                    ) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Score each candidate in ``names`` on the ``neighbours`` measured problems of ``loss``
    nearest to ``features``, at the measured target nearest ``tol`` (see the module
    docstring); returns (scores, the neighbours used, each as {problem, runs}).  ``exclude``
    drops measured problems (the held-back ones of a test)."""
    key = tolerance_key(measured_tolerance(tol))
    if measurements is load_measurements() and exclude is None:
        measured = _package_measured(loss, key, tuple(names))
    else:
        measured = _measured(measurements, loss, key, names, exclude)
    return _scores(features, names, measured, neighbours)


def _measured(measurements: list[dict[str, Any]], loss: str, key: str, names: Iterable[str],
              exclude: Callable[[dict[str, Any]], bool] | None = None
              ) -> list[dict[str, Any]]:
    """The measured problems of ``loss`` at target ``key`` that ran any of ``names``."""
    return [{"problem": m["problem"], "features": m["features"], "runs": m["runs"][key],
             "nnz": m.get("nnz")}
            for m in measurements if m["loss"] == loss and key in m["runs"]
            and (exclude is None or not exclude(m))
            and any(n in m["runs"][key] for n in names)]


@lru_cache(maxsize=64)
def _package_measured(loss: str, key: str, names: tuple[str, ...]) -> list[dict[str, Any]]:
    """:func:`_measured` over the package's measurements (loaded once, never changed at run
    time), kept per (loss, target, candidates): every ``train(solver="auto")`` filtered the
    whole file again, 0.1 ms of a small problem's 1-2 ms (issue 52's fixed cost)."""
    return _measured(load_measurements(), loss, key, names)


def _scores(features: tuple[float, ...], names: list[str], measured: list[dict[str, Any]],
            neighbours: int) -> tuple[dict[str, float], list[dict[str, Any]]]:
    nearest = sorted(measured, key=lambda m: math.dist(features, m["features"]))[:neighbours]
    scores: dict[str, float] = {}
    for name in names:
        logs = []
        for m in nearest:
            best = min(effective_seconds(r) for r in m["runs"].values())
            run = m["runs"].get(name)
            if run is None:
                break
            logs.append(math.log(effective_seconds(run) / best))
        else:
            if logs:
                scores[name] = math.exp(sum(logs) / len(logs))
    return scores, nearest


TaskCheck = Callable[[SolverSpec, SolverParams, int], bool]


def eligible_candidates(params: AutoParamsBase, shape: DatasetShape,
                        get_solver: Callable[[str], SolverSpec], supports_task: TaskCheck,
                        ) -> list[tuple[Candidate, SolverSpec, SolverParams]]:
    """The candidates that solve the problem ``params`` state, with their validated
    parameters.  Kept per (parameters, n, d, classes, the loss catalogue): posing every
    candidate through its parameter model was half of :func:`rank`'s time, 0.1-0.2 ms of a
    small problem's 1-2 ms (issue 52's fixed cost); the parameter models are frozen, so the
    kept ones are shared safely.  Parameters that do not hash (a class_weight dict) are
    posed every time."""
    try:
        return list(_eligible(params, shape.n_samples, shape.n_features, shape.n_classes,
                              get_solver, supports_task, tuple(LOSS_TYPES)))
    except TypeError:  # unhashable parameters
        return list(_eligible.__wrapped__(params, shape.n_samples, shape.n_features,
                                          shape.n_classes, get_solver, supports_task, ()))


@lru_cache(maxsize=256)
def _eligible(params: AutoParamsBase, n_samples: int, n_features: int, n_classes: int,
              get_solver: Callable[[str], SolverSpec], supports_task: TaskCheck,
              catalogue: tuple[str, ...]) -> tuple[tuple[Candidate, SolverSpec, SolverParams],
                                                   ...]:
    """:func:`eligible_candidates`' work (``catalogue``: the loss types registered, part of
    the key since a solver's declarations read them)."""
    problem = params.problem_fields()
    task = params.posed_task(n_classes)
    found = []
    for candidate in type(params).candidates:
        spec = get_solver(candidate.solver)
        if not spec.solves.allows(task, params.loss, params.bias, params.p):
            continue
        try:
            chosen = spec.params_model.posing(problem, **candidate.params_for(spec, params.tol))
        except InvalidParametersError:
            continue
        dense = spec.dense_system(chosen, n_samples, n_features) \
            if spec.dense_system is not None else None
        if dense is not None and dense[1] > MAX_DENSE_SIDE:
            continue
        if supports_task(spec, chosen, n_classes):
            found.append((candidate, spec, chosen))
    return tuple(found)


@dataclass
class Entrant:
    """A candidate that solves the asked problem, with its validated parameters and what the
    measurements say of it here: ``score`` (its time over the fastest's on the neighbours,
    geometric mean; None unmeasured) and ``predicted`` (seconds: its median time on the
    neighbours, scaled by the stored entries)."""

    candidate: Candidate
    spec: SolverSpec
    params: SolverParams
    score: float | None = None
    predicted: float | None = None


@dataclass
class Ranking:
    """The eligible candidates, most promising first, and why."""

    entrants: list[Entrant]
    reason: str
    neighbours: list[dict[str, Any]] = field(default_factory=list)

    def choice(self, tol: float, entrant: Entrant | None = None) -> AutoChoice:
        """The choice of ``entrant`` (the first by default) with the ranking's reason."""
        entrant = entrant or self.entrants[0]
        scores = {e.candidate.name: round(e.score, 3) for e in self.entrants
                  if e.score is not None}
        return AutoChoice(entrant.candidate.name, entrant.candidate.solver,
                          entrant.candidate.params_for(entrant.spec, tol), self.reason,
                          list(self.neighbours), scores)


def predicted_seconds(name: str, nearest: list[dict[str, Any]], nnz: int) -> float | None:
    """The median over the measured neighbours of the candidate's time there, scaled by the
    ratio of stored entries (the passes over the data scale with them)."""
    times = [effective_seconds(m["runs"][name]) * nnz / max(m["nnz"], 1)
             for m in nearest if name in m["runs"]]
    # statistics' median of a few floats: the same number as numpy's, without its set-up
    # (numpy's was 40% of the ranking's time on a small set, issue 47)
    return float(statistics.median(times)) if times else None


def rank(shape: DatasetShape, params: AutoParamsBase, get_solver: Callable[[str], SolverSpec],
         supports_task: TaskCheck, measurements: list[dict[str, Any]] | None = None,
         on_factor: bool = False) -> Ranking:
    """Every candidate that solves the problem ``params`` state on a dataset of this
    ``shape``, ordered by the measured rule (the module docstring): scored candidates by
    score, then the unmeasured ones in the candidates' order (``AUTO_CANDIDATES``).
    ``supports_task(spec, params, n_classes)`` says whether a solver has a fit procedure
    for the task (``solvers.train`` gives it).  ``on_factor``: ``params`` ask for a low-rank
    approximation and ``shape`` is its dense factor's (n x rank; ``train`` computes it once,
    before the candidates, which run on it): the candidates in :data:`FACTOR_ORDER`."""
    eligible = eligible_candidates(params, shape, get_solver, supports_task)
    if not eligible:
        raise InvalidParametersError(
            f"no solver solves loss={params.loss!r} with bias={params.bias!r} for task "
            f"{params.task!r} on this dataset")
    entrants = [Entrant(candidate, spec, validated) for candidate, spec, validated in eligible]
    if len(entrants) == 1:
        return Ranking(entrants, f"the only solver for loss={params.loss!r}, "
                                 f"bias={params.bias!r}, task={params.task!r}")
    if on_factor:
        def place(entrant: Entrant) -> int:
            name = entrant.candidate.name
            return FACTOR_ORDER.index(name) if name in FACTOR_ORDER else len(FACTOR_ORDER)

        entrants.sort(key=place)  # stable: the rest keep the candidates' order
        return Ranking(entrants, f"on a dense low-rank factor ({shape.n_samples} x "
                                 f"{shape.n_features}): the order bench_lowrank measured on "
                                 f"factors, {entrants[0].candidate.name} first")
    features = shape.features(params.C)
    names = tuple(e.candidate.name for e in entrants)
    if measurements is None:  # the package's: the placing kept per problem (_placed)
        placed = _placed(params.loss, params.tol, features, shape.nnz, names)
    else:
        placed = _place(params.loss, params.tol, features, shape.nnz, names, measurements)
    if placed is None:
        return Ranking(entrants, f"no measurements for loss={params.loss!r}: the candidates "
                                 f"in their listed order ({names[0]} first)")
    scores, predicted, reason, neighbours = placed
    for entrant in entrants:
        entrant.score = scores.get(entrant.candidate.name)
        entrant.predicted = predicted.get(entrant.candidate.name)
    entrants.sort(key=lambda e: (e.score is None, e.score if e.score is not None else 0.0))
    return Ranking(entrants, reason, [dict(n) for n in neighbours])


def _place(loss: str, tol: float, features: tuple[float, ...], nnz: int, names: tuple[str, ...],
           measurements: list[dict[str, Any]]):
    """The problem placed among the measured ones (:func:`rank`'s rule): (scores, predicted
    seconds, the reason, the neighbours), or None when nothing of ``loss`` was measured."""
    scores, nearest = rank_candidates(features, loss, tol, list(names), measurements,
                                      fitted_neighbours(loss))
    if not scores:
        return None
    key = tolerance_key(measured_tolerance(tol))
    near = [{"nnz": m.get("nnz") or _measured_nnz(m["problem"], measurements),
             "runs": m["runs"]} for m in nearest]
    predicted = {name: predicted_seconds(name, near, nnz) for name in names}
    best = min((name for name in names if name in scores), key=scores.__getitem__)
    neighbours = [{"problem": m["problem"],
                   "seconds": {n: m["runs"][n]["seconds"] for n in names if n in m["runs"]}}
                  for m in nearest]
    reason = (f"{best} was fastest to a certified {float(key):g} gap (its time over the "
              f"fastest's, geometric mean: {scores[best]:.2f}) on the {len(nearest)} measured "
              f"{loss} problems nearest in shape and C: "
              + ", ".join(m["problem"] for m in nearest))
    return scores, predicted, reason, neighbours


@lru_cache(maxsize=256)
def _placed(loss: str, tol: float, features: tuple[float, ...], nnz: int,
            names: tuple[str, ...]):
    """:func:`_place` over the package's measurements (never changed at run time), kept per
    problem: a repeated ``train(solver="auto")`` on one dataset and problem placed it again
    every call, 60-150 us of a small set's 1-2 ms (issue 47); the kept result is read only
    (:func:`rank` copies what it hands out)."""
    return _place(loss, tol, features, nnz, names, load_measurements())


def _measured_nnz(problem: str, measurements: list[dict[str, Any]]) -> int:
    return next(m["nnz"] for m in measurements if m["problem"] == problem)


def choose(shape: DatasetShape, params: AutoParamsBase, get_solver: Callable[[str], SolverSpec],
           supports_task: TaskCheck, measurements: list[dict[str, Any]] | None = None,
           on_factor: bool = False) -> tuple[AutoChoice, SolverSpec, SolverParams]:
    """The most promising candidate (:func:`rank`'s first): what was chosen and why, its spec
    and its validated parameters.  (A service checks an ``auto`` job with it; ``train`` runs
    the ranking's first candidates as a portfolio, :mod:`solvers.portfolio`.)"""
    ranking = rank(shape, params, get_solver, supports_task, measurements, on_factor)
    first = ranking.entrants[0]
    return ranking.choice(params.tol), first.spec, first.params


def make_spec(candidates: tuple[Candidate, ...], get_solver: Callable[[str], SolverSpec]
              ) -> SolverSpec:
    """The spec of ``auto`` over ``candidates``, declaring the union of what they solve (the
    registry calls it once, with every registered spec's candidates)."""
    return SolverSpec(
        name="auto",
        params_model=params_model(declared(candidates, get_solver), candidates),
        run=None,
        description="Chooses the solver and settings the project's benchmarks measured "
                    "fastest for the dataset's shape, the loss, the bias mode and C; the "
                    "result says which and why.",
        reference="bench/bench_auto.py (the measurements it is fitted to)",
        portfolio=True,
    )
