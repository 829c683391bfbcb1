"""The types every solver family shares: parameters, termination codes, solutions, specs.

This module sits above the problems (``docs/design.md`` section 3.1: core <- data, losses <-
problems <- base types <- multiclass <- families <- registry <- train) and imports no family,
so a family imports it without a cycle.

A family is a package exposing ``SPECS`` (a tuple of :class:`SolverSpec`); the registry lists
the families explicitly.  What a solver solves is declared once, as a :class:`Solves` (the (task,
loss, bias) combinations, with the reason for each refusal): its parameter model takes its
``loss`` and ``bias`` choices and its validation from it, the spec publishes it, the solver's
own guard asks it, and ``auto``, the warm-up and the service's listing read it.  A spec's
``run(problem, params, monitor) -> Solution`` solves one linear binary problem
(``solvers.problems.BinaryProblem``), which carries C, the loss and the bias mode: a solver
reads them from the problem, never from ``params`` (``params`` built the problem, and holds the
solver's own settings).  Other tasks and other model kinds go through ``fit_handlers``: task ->
``fit(dataset, spec, params, monitor) -> Fit``, and, for C paths of such a task,
``path_handlers``: task -> ``fit_path(dataset, spec, points) -> [(model, objective, seconds)]``.
"""

from __future__ import annotations

import itertools
import math
import sys
import typing
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from solvers import config
from solvers.core.kernels import Kernel, scale_gamma
from solvers.data.dataset import label_key
from solvers.losses import (
    DEFAULT_EPSILON,
    LOSS_TYPES,
    LOSSES,
    LossFamily,
    canonical,
    is_residual,
    takes_exponent,
)
from solvers.problems import BIAS_MODES, BinaryProblem, RegressionProblem
from solvers.termination import GAP_ROUNDOFF, Termination

LossName = Literal[LOSSES]  # type: ignore[valid-type]
BiasMode = Literal[BIAS_MODES]  # type: ignore[valid-type]
# What a user asks for (``params.task``): classification (binary, or multi-class by
# ``params.multiclass``), ordinal regression, regression (real-valued labels, predicted as
# real values) or one-class (novelty detection: the labels are not read).  What a solver
# declares (:class:`Solves`): the task the data and those parameters pose, one of TASKS.
TaskName = Literal["classification", "ordinal", "regression", "one_class"]
MulticlassStrategy = Literal["ovr", "crammer_singer", "ovo"]
#: binary: two labels; ovr: one binary problem per class against the rest; crammer_singer,
#: ovo: the native multi-class strategies of that name; ordinal: ranks (Chu & Keerthi);
#: regression: real-valued labels; one_class: one class of rows, its support estimated.
TASKS = ("binary", "ovr", "crammer_singer", "ovo", "ordinal", "regression", "one_class")
#: The tasks a user's ``task`` poses whatever the labels are (classification poses binary or
#: a multi-class task by the number of labels); each is both a ``params.task`` and a
#: declared task of :data:`TASKS`.
STANDALONE_TASKS = ("ordinal", "regression", "one_class")

#: The stopping rule every solver shares: the certified relative duality gap (P - D)/P at
#: which a run ends (``SolverParams.tol``; solver-specific criteria are named options).
DEFAULT_TOL = 1e-6


#: The ranges where the float64 arithmetic of every family is sound (unit round-off
#: u = 2^-53 ~ 1.1e-16; normal doubles between 2.2e-308 and 1.8e308), checked by every
#: parameter model (:meth:`SolverParams._numerically_sound`):
#:
#: * C in [1e-12, 1e12].  The loss term weighs C against the regularizer's 1: the primal
#:   methods' Hessian is I + C X'DX, the dual methods' matrix Q + D/C (dual_cd's diagonal
#:   1/(2C), the squared hinge's alpha^2/(4C)).  Once C ||x||^2 passes 1/u ~ 9e15 the 1 is
#:   below the other term's round-off and the problem solved is numerically the
#:   unregularized one (mfn at C = 1e100 on heart_scale "converged" with a relative gap of
#:   4e70); below u the loss term vanishes the same way.  With features on the usual
#:   scales (||x||^2 between 1e-4 and 1e4) [1e-12, 1e12] keeps C ||x||^2 within [u, 1/u].
#:   Far outside, the arithmetic breaks without an error: C = 5e-324 (subnormal, 1/C = inf)
#:   fed NaN breakpoints to mfn's line search, and at C = 1e-300 P and D underflowed to a
#:   "certified" gap of -1.
#: * tol (a relative duality gap (P - D)/P) 0 (never stop on the gap) or at least 1e-15:
#:   P and D are each rounded to at best u relative, so their difference carries an error
#:   of a few u times P, and a relative gap below ~1e-15 (about 9 u) cannot be certified.
#: * epsilon (mfn's relative CGLS residual, rule (13)): likewise at least 1e-15, as a
#:   residual relative to ||b|| is computed no better than a few u.
C_RANGE = (1e-12, 1e12)
MIN_RELATIVE_TOL = 1e-15
#: The relative fields of the parameter models held to MIN_RELATIVE_TOL (0 where it means
#: "off": a gap tolerance of 0 never stops on the gap)
RELATIVE_TOLERANCE_FIELDS = ("tol", "epsilon")


def gap_tolerance_field(**overrides) -> Any:
    """The field ``tol`` of every solver that certifies its stop: the relative duality gap
    (P - D)/P, which bounds the relative suboptimality (P - P*)/P, at which a run ends."""
    values = dict(default=DEFAULT_TOL, ge=0, lt=1,
                  description="Stop once the certified relative duality gap (P - D)/P is at "
                              "most this: the same rule, and the same default, for every "
                              "solver that has it (solver-specific stopping rules are "
                              "named options; 0: never on the gap).")
    values.update(overrides)
    return Field(**values)


class InvalidParametersError(ValueError):
    """Parameters a solver does not accept; the message lists every problem."""


def _same_field(a: Any, b: Any) -> bool:
    """Equal problem fields (numbers to a relative 1e-12: a scale round-tripped through a
    solver's own parametrization, the relaxed LS-SVM's A = 1/s^2, moves in the last digit)."""
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return abs(a - b) <= 1e-12 * max(abs(a), abs(b))
    return a == b


#: pydantic's bound errors, by type: the bound's name in ``ctx`` and how the message says it
_BOUND_ERRORS = {"greater_than": ("gt", "greater than"),
                 "greater_than_equal": ("ge", "greater than or equal to"),
                 "less_than": ("lt", "less than"),
                 "less_than_equal": ("le", "less than or equal to")}


def _error_text(error: dict) -> str:
    """One pydantic error's message, a numeric bound written as a person writes it (pydantic
    spells C's 1e-12 out as 0.000000000001)."""
    bound = _BOUND_ERRORS.get(error["type"])
    value = (error.get("ctx") or {}).get(bound[0]) if bound else None
    if isinstance(value, float):
        return f"Input should be {bound[1]} {value:g}"
    return error["msg"].removeprefix("Value error, ")


def _validation_message(exc: ValidationError) -> str:
    """A pydantic error as one line: each problem with its field."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {_error_text(e)}"
                     for e in exc.errors())


class UnknownSolverError(ValueError):
    pass


def posed_task(task: str, multiclass: str, n_classes: int) -> str:
    """The declared task (one of :data:`TASKS`) that ``params.task`` and
    ``params.multiclass`` pose on data with ``n_classes`` labels."""
    if task in STANDALONE_TASKS:
        return task
    return "binary" if n_classes <= 2 else multiclass


@dataclass(frozen=True)
class Combination:
    task: str
    loss: str
    bias: str

    def as_dict(self) -> dict[str, str]:
        return {"task": self.task, "loss": self.loss, "bias": self.bias}


@dataclass(frozen=True)
class Refusal:
    """Why a solver refuses the combinations that match (None matches anything)."""

    reason: str
    task: str | None = None
    loss: str | None = None
    bias: str | None = None

    def matches(self, combination: Combination) -> bool:
        return all(want is None or want == have for want, have in
                   ((self.task, combination.task), (self.loss, combination.loss),
                    (self.bias, combination.bias)))


@dataclass(frozen=True)
class Product:
    """The combinations of every task, loss and bias of a declaration's part: the losses named
    (a tuple) or by a declaration they make (a :class:`~solvers.losses.LossFamily`, whose
    members are read from the loss catalogue when asked)."""

    tasks: tuple[str, ...]
    losses: tuple[str, ...] | LossFamily
    biases: tuple[str, ...]

    def __post_init__(self):
        for task in self.tasks:
            if task not in TASKS:
                raise ValueError(f"unknown task {task!r}")
        if not isinstance(self.losses, LossFamily):
            for loss in self.losses:
                if loss not in LOSS_TYPES:
                    raise ValueError(f"unknown loss {loss!r}")
        for bias in self.biases:
            if bias not in BIAS_MODES:
                raise ValueError(f"unknown bias mode {bias!r}")

    def combinations(self) -> Iterable[Combination]:
        losses = self.losses.names() if isinstance(self.losses, LossFamily) else self.losses
        return (Combination(t, loss, b)
                for t, loss, b in itertools.product(self.tasks, losses, self.biases))


class Solves:
    """The (task, loss, bias) combinations a solver solves, declared once.

    Built from products, ``Solves.product(tasks, losses, biases)``, joined with ``|``, with
    the reasons for refusals attached by :meth:`refusing`.  Losses are canonical
    (``solvers.losses.canonical``: lp with p = 1 or 2 is the hinge or the squared hinge), so a
    solver that declares lp solves those too and says so by declaring them.  A family whose
    engine runs on a loss's declarations rather than on named losses gives a
    :class:`~solvers.losses.LossFamily` for ``losses`` (mfn: the clipped family): its
    combinations then take in every loss of the catalogue that makes the declaration.
    Everything that needs to know what a solver solves derives from this: the parameter
    model's ``loss`` and ``bias`` choices (:meth:`choices`) and its validation
    (:meth:`refusal`), the solver's own guard on a problem (:meth:`require_problem`),
    ``auto``'s candidates, the warm-up, the service's solver listing and the dashboard's race
    (:meth:`as_list`)."""

    def __init__(self, products: Iterable[Product] = (), refusals: Iterable[Refusal] = ()):
        self.products = tuple(products)
        self.refusals = tuple(refusals)
        self._catalogue: tuple[str, ...] | None = None
        self._combinations: tuple[Combination, ...] = ()
        self._set: frozenset[Combination] = frozenset()

    def _current(self) -> tuple[tuple[Combination, ...], frozenset[Combination]]:
        """The combinations (and their set) with a family's members as the catalogue has them
        now (computed again only when the catalogue changed)."""
        catalogue = tuple(LOSS_TYPES)
        if catalogue != self._catalogue:
            self._combinations = tuple(dict.fromkeys(
                c for product in self.products for c in product.combinations()))
            self._set = frozenset(self._combinations)
            self._catalogue = catalogue
        return self._combinations, self._set

    @property
    def combinations(self) -> tuple[Combination, ...]:
        """The declared combinations, in the order of the products."""
        return self._current()[0]

    def _declares(self, combination: Combination) -> bool:
        return combination in self._current()[1]

    @classmethod
    def product(cls, tasks: Iterable[str], losses: Iterable[str] | LossFamily,
                biases: Iterable[str]) -> Solves:
        if not isinstance(losses, LossFamily):
            losses = tuple(losses)
        return cls((Product(tuple(tasks), losses, tuple(biases)),))

    def __or__(self, other: Solves) -> Solves:
        return Solves(self.products + other.products, self.refusals + other.refusals)

    @classmethod
    def union(cls, declarations: Iterable[Solves]) -> Solves:
        """The combinations the declarations declare (their refusals' reasons are theirs)."""
        return cls(product for declaration in declarations for product in declaration.products)

    def refusing(self, reason: str, *, task: str | None = None, loss: str | None = None,
                 bias: str | None = None) -> Solves:
        """The same declaration, with ``reason`` given for the combinations that match."""
        return Solves(self.products, self.refusals + (Refusal(reason, task, loss, bias),))

    def _ordered(self, attribute: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(getattr(c, attribute) for c in self.combinations))

    @property
    def tasks(self) -> tuple[str, ...]:
        return self._ordered("task")

    @property
    def losses(self) -> tuple[str, ...]:
        return self._ordered("loss")

    @property
    def bias_modes(self) -> tuple[str, ...]:
        return self._ordered("bias")

    def choices(self, name: str):
        """The ``Literal`` of a parameter model's field, from the declaration: ``loss`` (the
        declared losses), ``bias`` (the declared modes), ``task`` (classification when binary
        problems are declared, and each of :data:`STANDALONE_TASKS` declared) and
        ``multiclass`` (ovr and the
        declared native strategies; ovr alone when the solver declares no multi-class task,
        since it is the default of every model)."""
        tasks = self.tasks
        if name == "loss":
            values = self.losses
        elif name == "bias":
            values = self.bias_modes
        elif name == "task":
            values = (("classification",) if "binary" in tasks else ()) + tuple(
                t for t in STANDALONE_TASKS if t in tasks)
        elif name == "multiclass":
            values = ("ovr",) + tuple(t for t in ("crammer_singer", "ovo") if t in tasks)
        else:
            raise ValueError(f"no declared choices for {name!r}")
        return Literal[values]  # type: ignore[valid-type]

    def bias_field(self, default: str, description: str) -> Any:
        """The ``bias`` field of a parameter model: ``description`` of the declared modes, then
        each mode the declaration refuses with its declared reason (said once, there)."""
        refused = [f"  {r.bias!r} is refused: {r.reason}." for r in self.refusals
                   if r.bias is not None and r.task is None and r.loss is None]
        return Field(default, description=description + "".join(refused))

    def multiclass_field(self, crammer_singer: str | None = None) -> Any:
        """The ``multiclass`` field of a linear family's parameter model (default ovr), its
        description made from the declared strategies: ovr, crammer_singer as the family
        says it solves that problem (``crammer_singer``), ovo on the low-rank path."""
        tasks = self.tasks
        strategies = ["ovr, one binary problem per class against the rest"]
        if "crammer_singer" in tasks:
            if crammer_singer is None:
                raise ValueError("a family that declares crammer_singer says how it solves it")
            strategies.append(f"crammer_singer, {crammer_singer}")
        if "ovo" in tasks:
            strategies.append("ovo, one binary problem per pair of classes on their rows, the "
                              "model voting as LIBSVM's (the low-rank path only: "
                              "approximation='nystrom' or 'icf')")
        return Field("ovr", description=f"More than two classes: {'; '.join(strategies)}.")

    def allows(self, task: str, loss: str, bias: str, p: float | None = None) -> bool:
        return self._declares(Combination(task, canonical(loss, p)[0], bias))

    def refusal(self, task: str, loss: str, bias: str, p: float | None = None,
                solver: str = "this solver") -> str | None:
        """None when the combination is declared, else why not (the declared reason, or the
        combinations that are solved)."""
        combination = Combination(task, canonical(loss, p)[0], bias)
        if self._declares(combination):
            return None
        for refusal in self.refusals:
            if refusal.matches(combination):
                return f"{solver} does not solve {_describe(combination)}: {refusal.reason}"
        if task not in self.tasks:
            return (f"{solver} does not solve {_TASK_TEXT[task]} problems (it solves: "
                    f"{', '.join(_TASK_TEXT[t] for t in self.tasks)})")
        same_task = [c for c in self.combinations if c.task == task]
        losses = tuple(dict.fromkeys(c.loss for c in same_task))
        biases = tuple(dict.fromkeys(c.bias for c in same_task))
        if len(same_task) == len(losses) * len(biases):
            options = (f"loss {' or '.join(map(repr, losses))} with bias "
                       f"{' or '.join(map(repr, biases))}")
        else:
            options = "; ".join(f"loss {c.loss!r} with bias {c.bias!r}" for c in same_task)
        return f"{solver} does not solve {_describe(combination)} (it solves: {options})"

    def require(self, task: str, loss: str, bias: str, p: float | None = None,
                solver: str = "this solver") -> None:
        reason = self.refusal(task, loss, bias, p, solver)
        if reason is not None:
            raise InvalidParametersError(reason)

    def require_problem(self, problem: BinaryProblem, solver: str) -> None:
        """A family's guard on a binary problem handed to its engine directly."""
        self.require("binary", problem.loss, problem.bias, problem.p, solver)

    def as_list(self) -> list[dict[str, str]]:
        return [c.as_dict() for c in self.combinations]

    def __repr__(self) -> str:
        return f"Solves({len(self.combinations)} combinations)"


#: Why a solver that declares regression refuses a margin loss there (Solves.refusing)
REGRESSION_NEEDS_RESIDUAL_LOSS = (
    "regression fits real values with a residual loss, 'epsilon_insensitive' or "
    "'squared_epsilon_insensitive' (with epsilon, LIBLINEAR's -p); a margin loss needs +-1 "
    "labels")


def residual_loss_refusal(loss: str) -> str:
    """Why a solver refuses the residual loss ``loss`` for a classification task."""
    return (f"{loss!r} is a regression loss of the residual y - f(x): ask for "
            f"task='regression' (a classifier takes a margin loss)")


_TASK_TEXT = {"binary": "binary", "ovr": "one-vs-rest multi-class",
              "crammer_singer": "Crammer-Singer multi-class", "ovo": "one-vs-one multi-class",
              "ordinal": "ordinal regression", "regression": "regression",
              "one_class": "one-class"}


def _describe(combination: Combination) -> str:
    return (f"{_TASK_TEXT[combination.task]} problems with loss={combination.loss!r}, "
            f"bias={combination.bias!r}")


class SolverParams(BaseModel):
    """Parameters every solver shares (``docs/design.md`` section 2).

    Subclasses set ``solves`` (the solver's :class:`Solves`) and take their ``loss`` and
    ``bias`` choices from it (``solves.choices("loss")``); the validation below refuses a
    combination it does not declare, with the reason, so an unsupported choice is a
    validation error, never a different problem solved silently.  ``tol`` is the one stopping
    rule every solver shares (a certified relative duality gap); ``max_iter`` is each
    solver's own (its description says what one iteration is).

    One spelling per idea across the families: a tolerance is ``tol`` or ``<what>_tol``, an
    iteration cap ``max_iter`` or ``max_<what>_iter``, the rule of the starting point without
    a warm start ``cold_start`` (``start=`` is the warm start, :class:`WarmStart`).  A field
    renamed to follow it is listed in its model's ``renamed_fields`` (old name -> new name):
    the old name is still accepted for one release, with a ``DeprecationWarning`` naming the
    new one (the service's API and the command line take it too), and everything the model
    writes uses the new name.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: what the solver solves (None: this base model, which declares nothing)
    solves: ClassVar[Solves | None] = None
    #: whether the solver has kernels of its own (smo, the least-squares family): its
    #: ``kernel`` and ``gamma`` mean its own kernel; elsewhere they are the approximation's
    own_kernel: ClassVar[bool] = False
    #: the relative tolerances among its fields (:meth:`_numerically_sound`; a solver whose
    #: ``epsilon`` is the regression tube's width, not a tolerance, leaves it out)
    relative_fields: ClassVar[tuple[str, ...]] = RELATIVE_TOLERANCE_FIELDS
    #: fields renamed to the shared spelling, old name -> new name (accepted, deprecated)
    renamed_fields: ClassVar[dict[str, str]] = {}
    #: the field holding a residual loss's tube width (:attr:`loss_epsilon`), which means
    #: nothing for a classifier (:meth:`shown`); None where the solver has none
    tube_field: ClassVar[str | None] = None

    solver: str
    C: float = Field(1.0, ge=C_RANGE[0], le=C_RANGE[1],
                     description="Weight of the loss term: 1/2||w||^2 + C sum loss (within "
                                 "1e-12 .. 1e12, where float64 arithmetic is sound).")
    loss: LossName = "squared_hinge"
    bias: BiasMode = "regularized"
    bias_scale: float = Field(
        1.0, gt=0, description="Value of the constant bias feature (LIBLINEAR's -B).")
    task: Literal["classification"] = Field(
        "classification",
        description="classification: binary for two labels, multi-class (see 'multiclass') "
                    "for more.")
    scale: Literal["none", "maxabs", "standard"] = Field(
        "none",
        description="Feature scaling fitted on the training data, part of the model: maxabs "
                    "(each column by its max |x_ij|, sparse stays sparse), standard (by the "
                    "standard deviation, centered only for data stored dense), none.  A "
                    "linear model folds it into its weights and predicts on raw inputs.")
    multiclass: Literal["ovr"] = Field(
        "ovr", description="Multi-class strategy: ovr, one binary problem per class against "
                           "the rest.")
    class_weight: dict[int | float | str, float] | Literal["balanced"] | None = Field(
        None,
        description="C multiplied per class, as LIBLINEAR's -wi: a mapping label -> weight "
                    "(keys as the labels or their text, e.g. {\"1\": 10}; unlisted classes "
                    "weigh 1), or 'balanced' (n / (k n_c)).  Composes with per-example cost: "
                    "weights.  One-vs-rest weights each class's positives (the rest stay at "
                    "C), as LIBLINEAR does; binary, Crammer-Singer, ordinal: each example by "
                    "its class.")

    approximation: Literal["none", "nystrom", "icf"] = Field(
        "none",
        description="Low-rank kernel path: nystrom (Nystrom on 'rank' landmarks) or icf "
                    "(pivoted incomplete Cholesky, at most 'rank' pivots) factors the kernel "
                    "matrix of 'kernel' as G G' (G: n x rank) and the solver trains a linear "
                    "model on G; the model predicts with exact kernel rows against the "
                    "landmarks or pivots.  The solver's certified gap is the gap of this "
                    "low-rank problem, not of the exact kernel SVM.  none: the data as given.")
    rank: int | None = Field(
        None, ge=1,
        description="approximation: the number of landmarks (nystrom) or the largest number "
                    "of pivots (icf); the factor has at most this many columns.  None: "
                    "chosen from the residual trace, the smallest rank whose "
                    "trace(K - G G') is at most 'rank_tol' times trace(K) (nystrom doubles "
                    f"its landmarks from {config.CHOSEN_RANK_START}, icf adds pivots), at "
                    f"most {config.CHOSEN_RANK_MAX} and the number of rows.")
    rank_tol: float = Field(
        0.02, gt=0, lt=1,
        description="approximation with no 'rank': the relative residual trace "
                    "trace(K - G G') / trace(K) at which the rank chosen stops growing.")
    landmarks: Literal["uniform", "kmeans"] = Field(
        "uniform",
        description="approximation='nystrom': uniform (distinct training rows, seeded) or "
                    "kmeans (the centroids of 10 Lloyd iterations started from uniform rows).")
    approximation_seed: int = Field(
        0, ge=0, description="approximation='nystrom': the seed of the landmarks' draw.")
    icf_tol: float = Field(
        1e-6, ge=0, lt=1,
        description="approximation='icf': stop pivoting once the residual's trace "
                    "trace(K - G G') is at most this times trace(K) (before 'rank' pivots).")
    kernel: Literal["linear", "rbf", "polynomial"] = Field(
        "rbf",
        description="approximation: the kernel factored (linear x.z, rbf exp(-gamma "
                    "||x-z||^2), polynomial (gamma x.z + coef0)^degree); used only with an "
                    "approximation.")
    gamma: float | Literal["scale"] | Literal["auto"] = Field(
        "scale", description="approximation: kernel gamma, a positive number, 'scale' = "
                             "1 / (n_features Var(X)) or 'auto' = 1 / n_features.")
    degree: int = Field(3, ge=1, description="approximation: polynomial degree.")
    coef0: float = Field(0.0, description="approximation: the polynomial kernel's constant.")

    probability: bool = Field(
        False,
        description="Also fit Platt's sigmoid on 5-fold out-of-fold decision values (Lin, "
                    "Lin & Weng 2007), so the model has predict_proba (5 more fits).  The "
                    "logistic loss's models have probabilities of their own, sigma(f(x)) as "
                    "LIBLINEAR's -b 1, whatever this says (no Platt step).")

    @field_validator("class_weight")
    @classmethod
    def _positive_class_weights(cls, value):
        if isinstance(value, dict):
            bad = [k for k, w in value.items() if not (math.isfinite(w) and w > 0)]
            if bad:
                raise ValueError(f"class weights must be positive and finite (label "
                                 f"{bad[0]!r}: {value[bad[0]]!r})")
        return value

    @model_validator(mode="after")
    def _numerically_sound(self):
        """The relative tolerances (:data:`RELATIVE_TOLERANCE_FIELDS`) a model has are 0
        (off) or at least :data:`MIN_RELATIVE_TOL`: below, float64 cannot tell them from
        round-off, and a run would stop on noise or never."""
        for name in type(self).relative_fields:
            value = getattr(self, name, None)
            if isinstance(value, float | int) and 0 < value < MIN_RELATIVE_TOL:
                raise ValueError(
                    f"{name}={value!r} is below {MIN_RELATIVE_TOL:g}, a few units of float64 "
                    f"round-off, where a relative {name} cannot be certified (give at least "
                    f"{MIN_RELATIVE_TOL:g}{', or 0 for off' if name == 'tol' else ''})")
        return self

    @model_validator(mode="after")
    def _approximation_applies(self):
        """A positive gamma; the low-rank path builds classification kernel models on raw
        inputs (no ordinal kernel model exists, and a scaler cannot be folded into a
        kernel)."""
        if not isinstance(self.gamma, str) and not self.gamma > 0:
            raise ValueError("gamma must be positive, 'scale' or 'auto'")
        if self.approximation == "none":
            if self.multiclass == "ovo" and not self.own_kernel:
                raise ValueError("multiclass: 'ovo' on a linear solver is the low-rank kernel "
                                 "path's strategy (its model is a one-vs-one kernel model): "
                                 "ask for approximation='nystrom' or 'icf', or use 'ovr'")
            return self
        if self.task in ("ordinal", "regression"):
            raise ValueError(f"approximation: the low-rank kernel path builds classification "
                             f"models; {_TASK_TEXT[self.task]} has no kernel model here")
        if self.scale != "none":
            raise ValueError("approximation: a kernel model predicts on raw inputs and a "
                             "scaler cannot be folded into a kernel; scale the data before "
                             "training (svm-scale) and keep scale='none'")
        return self

    @property
    def exact_kernel(self) -> bool:
        """Whether the solver itself trains a kernel model on these parameters (the kernel
        families with a kernel other than linear; never the low-rank path, whose solver
        trains a linear model on the factor)."""
        return self.own_kernel and self.kernel != "linear" and self.approximation == "none"

    def solver_features(self, n_samples: int, n_features: int) -> int:
        """The number of features the solver trains on: the factor's rank (at most
        ``rank``, or the largest rank chosen when it is None; at most n_samples) with an
        approximation, else the data's."""
        if self.approximation == "none":
            return n_features
        return min(self.largest_rank, n_samples)

    @property
    def largest_rank(self) -> int:
        """The most columns the low-rank factor may have: ``rank``, or the cap of a rank
        chosen from the residual trace."""
        return config.CHOSEN_RANK_MAX if self.rank is None else int(self.rank)

    def gamma_value(self, X) -> float:
        """The numeric kernel gamma for training data X ('scale': scikit-learn's, 'auto':
        LIBSVM's default 1 / n_features)."""
        if self.gamma == "scale":
            return scale_gamma(X)
        if self.gamma == "auto":
            return 1.0 / max(X.shape[1], 1)
        return float(self.gamma)

    def approximation_kernel(self, X) -> Kernel:
        """The kernel ``approximation`` factors on training data X."""
        return Kernel(self.kernel, self.gamma_value(X), self.degree, self.coef0)

    @property
    def loss_exponent(self) -> float:
        """p of the lp loss (2 unless the solver's parameters have one)."""
        return 2.0

    @property
    def loss_epsilon(self) -> float:
        """epsilon of a residual loss (LIBLINEAR's -p; 0.1 unless the solver's parameters
        have one: those that declare the regression task)."""
        return DEFAULT_EPSILON

    @model_validator(mode="after")
    def _regression_applies(self):
        """Class weights weigh classes and Platt's sigmoid calibrates a classifier's scores:
        real-valued labels have neither classes nor probabilities."""
        if self.task == "regression" and self.class_weight is not None:
            raise ValueError("class_weight weighs the examples of each class; regression "
                             "labels are real values, not classes: give per-example "
                             "weights (sample_weight) instead")
        if self.task == "regression" and self.probability:
            raise ValueError("probability: Platt's sigmoid turns a classifier's scores into "
                             "class probabilities; a regression predicts values")
        return self

    @classmethod
    def _with_current_names(cls, data: Any) -> Any:
        """``data`` with each deprecated field name of :attr:`renamed_fields` replaced by its
        new one, warning once per name (a before-validator's call: the warning points at the
        code that gave the parameters, :func:`_parameters_caller`).  A subclass's own
        before-validator that reads a renamed field calls this first (pydantic runs it before
        this class's)."""
        if not isinstance(data, dict) or not cls.renamed_fields:
            return data
        for old, new in cls.renamed_fields.items():
            if old not in data:
                continue
            warnings.warn(f"{cls.__name__}: {old!r} is deprecated and will be removed in the "
                          f"next release: use {new!r}", DeprecationWarning,
                          stacklevel=_parameters_caller())
            if new in data:
                raise ValueError(f"{old!r} is the deprecated name of {new!r}: give {new!r} "
                                 f"alone")
            data = {(new if key == old else key): value for key, value in data.items()}
        return data

    @model_validator(mode="before")
    @classmethod
    def _declared_choices(cls, data: Any) -> Any:
        """Before the fields' own checks: a loss given as lp with p = 1 or 2 becomes its
        canonical name where the solver has no lp of its own, and a task, multi-class
        strategy, loss or bias mode the solver does not declare is refused with the
        declaration's reason (not only the choices a ``Literal`` lists).  The check after the
        fields (:meth:`_declared`) holds for input that is not a dict."""
        solves = cls.solves
        if solves is None or not isinstance(data, dict):
            return data
        defaults = cls.model_fields
        if data.get("task") == "regression" and "loss" not in data \
                and "regression" in solves.tasks:
            # a regression asked without a loss: the solver's first residual loss, the
            # squared one where it has it (the margin losses' default would be refused)
            declared = [c.loss for c in solves.combinations if c.task == "regression"]
            data = {**data, "loss": "squared_epsilon_insensitive"
                    if "squared_epsilon_insensitive" in declared else declared[0]}
        loss = data.get("loss", defaults["loss"].default)
        bias = data.get("bias", defaults["bias"].default)
        exponent = data.get("p")
        if (takes_exponent(loss) and loss not in solves.losses
                and isinstance(exponent, (int, float)) and not isinstance(exponent, bool)):
            try:
                name, _ = canonical(loss, exponent)
            except ValueError:
                name = loss
            if name in solves.losses:
                data = {k: v for k, v in data.items() if k != "p"} | {"loss": name}
                loss = name
        if not (isinstance(loss, str) and loss in LOSSES and isinstance(bias, str)
                and bias in BIAS_MODES):
            return data  # the fields' own checks say what is wrong
        p = data.get("p") if takes_exponent(loss) else None
        if p is not None and (isinstance(p, bool) or not isinstance(p, (int, float))
                              or not 1.0 <= p <= 2.0):
            return data  # the field's own check says what is wrong with p
        task = data.get("task")
        tasks = [task] if task in STANDALONE_TASKS else ["binary"]
        multiclass = data.get("multiclass")
        if tasks == ["binary"] and multiclass in TASKS and multiclass != "ovr":
            tasks.append(multiclass)
        solver = f"solver {data.get('solver', defaults['solver'].default)!r}"
        for task in tasks:
            reason = solves.refusal(task, loss, bias, p, solver)
            if reason is not None:
                raise ValueError(reason)
        return data

    @model_validator(mode="before")
    @classmethod
    def _current_names(cls, data: Any) -> Any:
        """The first before-validator to run (pydantic runs them last defined first): the
        deprecated field names replaced (:meth:`_with_current_names`)."""
        return cls._with_current_names(data)

    @model_validator(mode="after")
    def _declared(self):
        """The (task, loss, bias) these parameters pose must be declared by the solver: for
        classification the binary problem (the one two labels pose) and, for a native
        multi-class strategy, that strategy (one-vs-rest is checked when the data's labels are
        known: :func:`posed_task`)."""
        solves = type(self).solves
        if solves is None:
            return self
        tasks = [self.task] if self.task in STANDALONE_TASKS else ["binary"]
        if self.task not in STANDALONE_TASKS and self.multiclass != "ovr":
            tasks.append(self.multiclass)
        for task in tasks:
            reason = solves.refusal(task, self.loss, self.bias, self.loss_exponent,
                                    f"solver {self.solver!r}")
            if reason is not None:
                raise ValueError(reason)
        return self

    @classmethod
    def shown(cls, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` (a dump of this model) without the fields that did nothing for the
        model they trained, for a person reading it (issue 48: a linear model's page listed
        kernel rbf, gamma scale, rank 256): the low-rank path's fields without an
        approximation (the kernel's own with a kernel solver), each kernel's unused constants,
        the method-specific ones of the other method, ``bias_scale`` without a regularized
        bias, ``p`` without lp, an absent class weight, the regression tube's width
        (:attr:`tube_field`) outside regression."""
        approximation = params.get("approximation", "none")
        kernel = params.get("kernel") if approximation != "none" or cls.own_kernel else None
        hidden = {"class_weight"} if params.get("class_weight") is None else set()
        if approximation == "none":
            hidden |= {"approximation", "rank", "rank_tol", "landmarks", "approximation_seed",
                       "icf_tol"}
        elif approximation == "nystrom":
            hidden.add("icf_tol")
        else:
            hidden |= {"landmarks", "approximation_seed"}
        if approximation != "none" and params.get("rank") is not None:
            hidden.add("rank_tol")
        if kernel is None:
            hidden |= {"kernel", "gamma", "degree", "coef0"}
        elif kernel != "polynomial":
            hidden |= {"degree", "coef0"} | ({"gamma"} if kernel == "linear" else set())
        if params.get("bias", "regularized") != "regularized":
            hidden.add("bias_scale")
        if not takes_exponent(params.get("loss")):
            hidden.add("p")
        if cls.tube_field is not None and params.get("task") != "regression":
            hidden.add(cls.tube_field)
        return {name: value for name, value in params.items() if name not in hidden}

    def posed_task(self, n_classes: int) -> str:
        """The declared task these parameters pose on data with ``n_classes`` labels."""
        return posed_task(self.task, self.multiclass, n_classes)

    def problem_fields(self) -> dict[str, Any]:
        """The optimization problem these parameters pose (section 2 of ``docs/design.md``),
        without the algorithm's own settings: two runs with equal fields on the same data solve
        the same problem, so their objectives compare.  Normalized: the loss canonical
        (``solvers.losses.canonical``: ``lp`` with p = 1 or 2 is ``hinge`` or
        ``squared_hinge``); ``bias_scale`` only with a regularized bias; ``p`` only for
        ``lp``."""
        loss, p = canonical(self.loss, self.loss_exponent)
        fields: dict[str, Any] = {"task": self.task, "multiclass": self.multiclass,
                                  "loss": loss, "C": float(self.C), "bias": self.bias}
        if takes_exponent(loss):
            fields["p"] = float(p)
        if is_residual(loss):
            fields["epsilon"] = float(self.loss_epsilon)
        if self.bias == "regularized":
            fields["bias_scale"] = float(self.bias_scale)
        if self.scale != "none":
            fields["scale"] = self.scale
        if self.class_weight is not None:
            fields["class_weight"] = _normal_class_weight(self.class_weight)
        if self.approximation != "none":
            fields.update(self.approximation_fields())
        return fields

    def approximation_fields(self) -> dict[str, Any]:
        """The low-rank problem's own fields: the method, its rank (and seed and landmarks,
        or the trace tolerance) and the kernel it factors; {} without an approximation."""
        if self.approximation == "none":
            return {}
        fields: dict[str, Any] = {"approximation": self.approximation, "rank": self.rank,
                                  "kernel": self.kernel,
                                  "gamma": self.gamma if isinstance(self.gamma, str)
                                  else float(self.gamma)}
        if self.kernel == "polynomial":
            fields["degree"] = self.degree
            fields["coef0"] = float(self.coef0)
        if self.rank is None:
            fields["rank_tol"] = float(self.rank_tol)
        if self.approximation == "nystrom":
            fields["landmarks"] = self.landmarks
            fields["approximation_seed"] = self.approximation_seed
        else:
            fields["icf_tol"] = float(self.icf_tol)
        return fields

    @classmethod
    def posing(cls, problem: dict[str, Any], **settings) -> SolverParams:
        """The parameters of this solver that pose ``problem`` (the fields of
        :meth:`problem_fields`: task, multiclass, loss, p, C, bias, bias_scale, and a
        kernel's), with ``settings`` (the solver's own options, e.g. ``tol``).  Raises
        :class:`InvalidParametersError` with the reason when the solver does not solve it
        (``auto`` and the dashboard's race pose one problem to several solvers this way)."""
        exponent = takes_exponent(problem.get("loss"))
        values = {name: value for name, value in cls._posing_values(problem).items()
                  if name in cls.model_fields or (name == "p" and exponent)}
        values.update(settings)
        values["solver"] = cls.model_fields["solver"].default
        try:
            params = cls.model_validate(values)
        except ValidationError as exc:
            raise InvalidParametersError(_validation_message(exc)) from None
        posed = params.problem_fields()
        wanted = cls._normalized(problem)
        different = sorted(k for k in set(posed) | set(wanted)
                           if not _same_field(posed.get(k), wanted.get(k)))
        if different:
            raise InvalidParametersError(
                f"solver {values['solver']!r} poses another problem ("
                + ", ".join(f"{k}: {posed.get(k)!r} instead of {wanted.get(k)!r}"
                            for k in different) + ")")
        return params

    @classmethod
    def _posing_values(cls, problem: dict[str, Any]) -> dict[str, Any]:
        """The field values that pose ``problem`` (a family whose fields encode the problem
        otherwise, the relaxed LS-SVM's A, overrides this)."""
        return dict(problem)

    @staticmethod
    def _normalized(problem: dict[str, Any]) -> dict[str, Any]:
        """``problem`` as :meth:`problem_fields` writes it (canonical loss, floats)."""
        fields = dict(problem)
        loss, p = canonical(fields["loss"], fields.get("p"))
        fields["loss"] = loss
        fields.pop("p", None)
        if takes_exponent(loss):
            fields["p"] = float(p)
        fields["C"] = float(fields["C"])
        if is_residual(loss):
            fields["epsilon"] = float(fields.get("epsilon", DEFAULT_EPSILON))
        else:
            fields.pop("epsilon", None)
        if fields.get("bias") != "regularized":
            fields.pop("bias_scale", None)
        elif "bias_scale" in fields:
            fields["bias_scale"] = float(fields["bias_scale"])
        else:
            fields["bias_scale"] = 1.0
        fields.setdefault("task", "classification")
        fields.setdefault("multiclass", "ovr")
        if fields.get("scale") == "none":
            del fields["scale"]
        if fields.get("class_weight") is None:
            fields.pop("class_weight", None)
        else:
            fields["class_weight"] = _normal_class_weight(fields["class_weight"])
        return fields

    def regression_problem(self, X, y, sample_weight=None) -> RegressionProblem:
        """The regression problem these parameters describe, on real labels ``y``."""
        return RegressionProblem(X, y, C=self.C, loss=self.loss, epsilon=self.loss_epsilon,
                                 bias=self.bias, bias_scale=self.bias_scale,
                                 sample_weight=sample_weight)

    def binary_problem(self, X, y, sample_weight=None) -> BinaryProblem:
        """The problem these parameters describe, on labels ``y`` in {-1, +1}."""
        return BinaryProblem(X, y, C=self.C, loss=self.loss, bias=self.bias,
                             bias_scale=self.bias_scale, p=self.loss_exponent,
                             sample_weight=sample_weight)


def _passes_parameters(module: str) -> bool:
    """Whether code of ``module`` hands parameters it was given to a parameter model
    (pydantic, the models' own modules, :func:`solvers.train.train`) rather than writing
    them."""
    return (module == "pydantic" or module.startswith("pydantic.")
            or module in ("solvers.base", "solvers.train")
            or (module.startswith("solvers.") and module.endswith(".params")))


def _parameters_caller() -> int:
    """``warnings.warn``'s stacklevel, for its caller, of the first frame that wrote the
    parameters (past :func:`_passes_parameters`' modules): a deprecated name given to
    ``solvers.train`` is reported at the caller's line, and one written inside the library
    at that line (an error under the test suite's filter)."""
    frame, stacklevel = sys._getframe(1), 1
    while frame.f_back is not None and _passes_parameters(frame.f_globals.get("__name__", "")):
        frame, stacklevel = frame.f_back, stacklevel + 1
    return stacklevel


def _normal_class_weight(class_weight):
    """Class weights as :meth:`SolverParams.problem_fields` writes them: 'balanced', or the
    labels as text (as JSON has them), sorted, with float weights."""
    if isinstance(class_weight, str):
        return class_weight
    return {key: float(w) for key, w in sorted(
        ((k if isinstance(k, str) else label_key(k)), w) for k, w in class_weight.items())}


@dataclass(frozen=True)
class Solution:
    """What a solver returns for one binary problem: the parameter vector beta = (w, b) and why
    it stopped."""

    beta: np.ndarray
    objective: float
    status: Termination
    message: str
    iterations: int
    extras: dict[str, Any]

    def __post_init__(self):
        """A certified gap (``extras["relative_duality_gap"]``) is never negative or not
        finite in a solution: round-off below 0 (at most :data:`GAP_ROUNDOFF`) reads 0, and
        anything else -- P < D, impossible in exact arithmetic, or a NaN -- means the
        arithmetic broke down, whatever the solver concluded: the status is then
        ``numerical_error``, the message says why, and the gap is left out."""
        status, message, gap = certified_gap(self.status, self.message,
                                             self.extras.get("relative_duality_gap"))
        if gap is not None:
            self.extras["relative_duality_gap"] = gap
        else:  # none, or one that certifies nothing (said in the message)
            self.extras.pop("relative_duality_gap", None)
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "message", message)


def certified_gap(status: Termination, message: str, gap: float | None
                  ) -> tuple[Termination, str, float | None]:
    """(status, message, gap) of a result whose certified relative duality gap is ``gap``
    (None, or +inf, the families' value before their first gap: the result certifies none,
    and the gap returned is None): a negative gap within :data:`GAP_ROUNDOFF` clipped to
    0; one below it, or NaN, turns the status into ``numerical_error`` with the
    reason (a solver's own failure keeps its status, the reason added), and the gap returned
    is None: it certifies nothing."""
    if gap is None:
        return status, message, gap
    gap = float(gap)
    if gap == math.inf:  # the families' "no gap computed yet" (a run stopped before one)
        return status, message, None
    if math.isfinite(gap) and gap >= -GAP_ROUNDOFF:
        return status, message, max(gap, 0.0)
    why = ("is not a number" if math.isnan(gap) else
           f"is negative beyond round-off (P < D, impossible in exact arithmetic; "
           f"round-off allows -{GAP_ROUNDOFF:g})")
    reason = (f"the certified relative duality gap {gap:.3g} {why}: the float64 arithmetic "
              f"broke down (C, the data's scale or a tolerance out of its sound range), so "
              f"nothing is certified")
    failed = (Termination.NUMERICAL_ERROR, Termination.FAILED, Termination.INFEASIBLE)
    if Termination(status) not in failed:
        status = Termination.NUMERICAL_ERROR
    return status, f"{reason} (the solver said: {message})", None


@dataclass(frozen=True, eq=False)  # arrays inside: identity, not an elementwise ==
class WarmStart:
    """Where a solve starts instead of its cold start: the one warm-start argument of every
    family, ``start=WarmStart(...)`` (a spec's ``run`` and ``distributed``, each family's
    ``solve``, the one-vs-rest fit).

    One type rather than a bare vector because the families start from different things: the
    primal methods (mfn, interior_point, the cutting planes, the least-squares family's CGLS)
    from a point beta; the dual ones from a dual point (dual_cd's alpha, alm's multipliers
    lambda = -y alpha), which they otherwise derive from beta by the KKT map; the cutting
    planes can carry their whole model of the risk (the cuts) along a C path or across a lost
    worker; a one-vs-rest fit starts each of its binary problems from a row of a model.  Each
    family takes the fields it can use and ignores the others (its docstring says which;
    a field left None is started cold), so one WarmStart -- the last C's solution, another
    solver's point on the same problem, a distributed solve's checkpoint -- can be handed to
    any of them.

    * ``beta``: the parameter vector (w, b) of ``docs/design.md`` section 2.1, of a nearby
      problem (the same data at another C, or another solver's point on this problem):
      n_features + 1 entries.
    * ``dual``: a dual point alpha of ``solvers.problems`` (one entry per example, scaled as
      in ``docs/design.md`` section 2.4: 0 <= alpha_i <= C_i for the hinge; Crammer-Singer:
      one row per example, one column per class).
    * ``state``: what a family carries beyond a point, read only by the family that made it
      (the cutting planes' ``PathCarry``: w_best and every cut so far).
    * ``model``: a linear model of the same classes and features (another solver's
      ``Fit.model``): the one-vs-rest fit starts each binary problem from its row; a binary
      solve ignores it.

    What each family reads (the rest it ignores):

    * mfn: ``beta`` (beta-seeding; ``run`` as the solution of a nearby problem, ``solve``'s
      ``continuation`` says which);
    * alm: ``beta`` for (w, b) and ``dual`` for lambda = -y alpha (without it, the balanced
      KKT map of beta);
    * dual_cd: ``dual`` (clipped into the box), else ``beta`` through the KKT map;
    * cutting_plane: ``state`` (the carried cuts, rescaled to this C), else ``beta`` (w_best,
      its cut the first);
    * interior_point: ``beta`` (an interior point near it);
    * lssvm and proximal_svm (linear kernel): ``beta`` (CGLS from it at the final eps);
    * smo and the kernel least-squares solvers take no warm start (their C paths carry their
      own state: ``SolverSpec.path_handlers``).

    It replaces the keywords the families had (``beta0``, ``w_guess``, ``lambda0``,
    ``alpha``, ``resume``, ``start_model``, and ``start`` as a bare vector), which still work
    for one release with a ``DeprecationWarning`` naming this spelling.
    """

    beta: np.ndarray | None = None
    dual: np.ndarray | None = None
    state: Any = None
    model: Any = None  # solvers.models.LinearModel


def warm_start_argument(start: Any, stacklevel: int = 2) -> WarmStart | None:
    """``start`` as an entry point received it: None, a :class:`WarmStart`, or (deprecated,
    one release) a bare parameter vector, taken as ``WarmStart(beta=start)``.
    ``stacklevel``: warnings.warn's, seen from the entry point that calls this (2: its
    caller)."""
    if start is None or isinstance(start, WarmStart):
        return start
    if isinstance(start, np.ndarray | list | tuple):
        warnings.warn("start= as a bare parameter vector is deprecated and will be removed in "
                      "the next release: pass start=WarmStart(beta=...)", DeprecationWarning,
                      stacklevel=stacklevel + 1)
        return WarmStart(beta=np.asarray(start, dtype=np.float64))
    raise TypeError(f"start must be a WarmStart, not {type(start).__name__}")


def replaced_keyword(start: WarmStart | None, old: str, value: Any, field_name: str,
                     spelling: str | None = None, stacklevel: int = 2) -> WarmStart | None:
    """A deprecated warm-start keyword ``old`` (``value``; None: not given) folded into
    ``start`` as its field ``field_name``, with a ``DeprecationWarning`` naming the new
    spelling (``spelling``, by default ``start=WarmStart(field_name=...)``).  ``value`` is
    what the field takes (the caller converts: alm's lambda0 is the dual -y lambda0).
    Refuses a field given both ways.  ``stacklevel``: as :func:`warm_start_argument`'s."""
    if value is None:
        return start
    spelling = spelling or f"start=WarmStart({field_name}=...)"
    warnings.warn(f"{old}= is deprecated and will be removed in the next release: pass "
                  f"{spelling}", DeprecationWarning, stacklevel=stacklevel + 1)
    if start is not None and getattr(start, field_name) is not None:
        raise ValueError(f"{old}= gives the warm start's {field_name} a second time: give "
                         f"start= alone")
    return replace(start or WarmStart(), **{field_name: value})


@dataclass
class SubproblemResult:
    """One binary problem of a training run (one class against the rest, or the only one)."""

    label: str
    objective: float
    status: Termination
    message: str
    iterations: int
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass
class Fit:
    """What a training procedure produces before ``train`` wraps it in a ``TrainResult``."""

    model: Any  # solvers.models.Model
    subproblems: list[SubproblemResult]


@dataclass
class PairwiseLinear:
    """The weights of one-vs-one linear problems on a low-rank factor, before the
    approximation step folds them into a one-vs-one :class:`~solvers.models.KernelModel`
    (:meth:`solvers.approximation.Approximation.kernel_model`): one row of ``coef`` and one
    ``intercept`` per pair of classes (a, b), a < b, in LIBSVM's order (0,1), (0,2), ...,
    (1,2), ..., positive for a.  Not a model of its own: a linear solver poses one-vs-one
    only on a factor (``SolverParams``' check)."""

    coef: np.ndarray
    intercept: np.ndarray
    classes: np.ndarray
    multiclass: str = "ovo"


BinarySolver = Callable[[BinaryProblem, SolverParams, Any], Solution]
FitHandler = Callable[..., Fit]
PathHandler = Callable[..., list[tuple[Any, float, float]]]


@dataclass(frozen=True)
class SolverSpec:
    """A registered solver.

    ``run(problem, params, monitor) -> Solution`` solves one linear binary problem; the
    multiclass layer wraps it (label mapping, one-vs-rest, the linear model).  Solvers that
    build another kind of model, or handle another task natively, give ``fit_handlers``: task
    name -> ``fit(dataset, spec, params, monitor) -> Fit`` (a task is ``params.task``, or
    ``"multiclass:" + params.multiclass`` for a native multi-class strategy).  ``warm_up``
    compiles what the solver's runs call (Numba kernels beyond the shared core), so a worker
    can prepare every solver without training each on a toy set.  ``warm_start``: ``run``
    also takes ``start=``, a :class:`WarmStart` (its ``beta``: the parameter vector of a
    nearby problem, the same data at another C), and starts from it (C paths,
    cross-validation and ``auto``'s hand-overs use it).  ``path(problem, Cs,
    params) -> [Solution]``, when given, solves the problem along the C values in order, each
    from the last solution, sharing what does not depend on C (solutions carry
    ``extras["seconds"]``).  ``path_handlers``: task -> ``fit_path(dataset, spec, points) ->
    [(model, objective, seconds)]``, the C path of a task with its own fit handler
    (``points``: the parameters at each C, in order, each fit from the last), which
    cross-validation uses.  ``dense_system(params, n_samples, n_features) -> (what, side) |
    None`` says which dense square matrix (side x side doubles) a run will form and factorize
    with these parameters, so a service can refuse it before it queues the job.
    ``solves``: what the solver solves, its parameter model's declaration (:class:`Solves`).
    ``fit_handlers`` and ``path_handlers`` are keyed by the declared task (:data:`TASKS`).
    """

    name: str
    params_model: type[SolverParams]
    run: BinarySolver | None
    description: str
    reference: str
    fit_handlers: dict[str, FitHandler] = field(default_factory=dict)
    path_handlers: dict[str, PathHandler] = field(default_factory=dict)
    warm_up: Callable[[], None] | None = None
    warm_start: bool = False
    path: Callable[..., list[Solution]] | None = None
    dense_system: Callable[[SolverParams, int, int], tuple[str, int] | None] | None = None
    #: a solver that chooses among others (``auto``): it has no fit of its own, and its
    #: declaration is its candidates'
    portfolio: bool = False
    #: ``distributed(problem, params, monitor, start=None) -> Solution``: the binary solve on
    #: a :class:`solvers.distributed.DistributedBinaryProblem` (rows on Dask workers), from
    #: the :class:`WarmStart` ``start`` when given (``train`` resumes a solve that lost a
    #: worker from ``problem.checkpoint``, itself a WarmStart); None: ``train`` refuses a
    #: distributed dataset for this solver
    distributed: Callable[..., Solution] | None = None
    #: what the ``distributed`` solve solves when it is less than ``solves`` (dual_cd's
    #: CoCoA+: the QP duals only), its refusals given by ``solvers.train.
    #: distributed_refusal`` before a job runs; None: the same as ``solves``
    distributed_solves: Solves | None = None
    #: how ``auto`` races this solver: one tuple of (setting, value) pairs per candidate --
    #: the settings that change how, not what, it solves (``solvers.auto.Candidate``); () :
    #: not a candidate.  ``auto``'s candidates, and so what it declares it solves, are the
    #: registry's specs' (``solvers.registry``): a family declares its own here.
    auto_candidates: tuple[tuple[tuple[str, Any], ...], ...] = ()
    #: settings every ``auto`` candidate of this solver runs with, not part of its name: what
    #: makes its run a function of its data and parameters alone (dual_cd's gap checks on
    #: the work clock), since the portfolio's result must be one
    auto_fixed: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self):
        solver_field = self.params_model.model_fields["solver"]
        if typing.get_args(solver_field.annotation) != (self.name,):
            raise TypeError(f"{self.params_model.__name__}.solver must be "
                            f"Literal[{self.name!r}]")
        if self.portfolio:
            return
        if self.params_model.solves is None:
            raise TypeError(f"{self.params_model.__name__} declares nothing it solves "
                            f"(set its 'solves')")
        for choice in ("loss", "bias", "task", "multiclass"):
            field_choices = _literal_choices(self.params_model, choice)
            declared = typing.get_args(self.solves.choices(choice))
            if set(field_choices) != set(declared):
                raise TypeError(f"{self.params_model.__name__}.{choice} offers "
                                f"{field_choices}, its declaration {declared}")
        for task in list(self.fit_handlers) + list(self.path_handlers):
            if task not in self.solves.tasks:
                raise TypeError(f"{self.name}: a handler of undeclared task {task!r}")
        for task in self.solves.tasks:  # binary, ovr, ovo: the multiclass layer's over run
            if task not in self.fit_handlers and (self.run is None
                                                  or task not in ("binary", "ovr", "ovo")):
                raise TypeError(f"{self.name} declares task {task!r} but has no fit for it")

    @property
    def solves(self) -> Solves:
        return self.params_model.solves

    @property
    def certifies_gap(self) -> bool:
        """Whether a run stops on the certified relative duality gap ``tol``
        (:func:`gap_tolerance_field`)."""
        return "tol" in self.params_model.model_fields

    @property
    def losses(self) -> tuple[str, ...]:
        return self.solves.losses

    @property
    def bias_modes(self) -> tuple[str, ...]:
        return self.solves.bias_modes

    @property
    def tasks(self) -> tuple[str, ...]:
        return self.solves.tasks

    def warm_start_tasks(self) -> list[str]:
        """The declared tasks whose C paths share work along C (each C from the last solution,
        or the least-squares family's kernel matrix built once), as cross-validation solves
        them: binary and one-vs-rest when they run over a binary solver that can warm-start,
        and every task with a path handler."""
        tasks = [t for t in self.tasks if t in self.path_handlers
                 or (t in ("binary", "ovr") and self.warm_start and self.run is not None
                     and t not in self.fit_handlers)]
        return tasks

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "reference": self.reference,
            "losses": list(self.losses),
            "bias_modes": list(self.bias_modes),
            "tasks": list(self.tasks),
            "solves": self.solves.as_list(),
            "warm_start_tasks": self.warm_start_tasks(),
            "params_schema": self.params_model.model_json_schema(),
        }


def _literal_choices(model: type[BaseModel], field_name: str) -> tuple[str, ...]:
    annotation = model.model_fields[field_name].annotation
    return tuple(typing.get_args(annotation))
