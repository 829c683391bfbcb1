"""The types every solver family shares: parameters, termination codes, solutions, specs.

This module sits above the problems (``design.md`` section 3: core <- data, losses <-
problems <- base types <- multiclass <- families <- registry <- train) and imports no family,
so a family imports it without a cycle.

A family is a package exposing ``SPECS`` (a tuple of :class:`SolverSpec`); the registry lists
the families explicitly.  A spec's ``run(problem, params, monitor) -> Solution`` solves one
linear binary problem (``solvers.problems.BinaryProblem``), which carries C, the loss and the
bias mode: a solver reads them from the problem, never from ``params`` (``params`` built the
problem, and holds the solver's own settings).  Other tasks and other model kinds go through
``fit_handlers``: task -> ``fit(dataset, spec, params, monitor) -> Fit``, and, for C paths
of such a task, ``path_handlers``: task -> ``fit_path(dataset, spec, points) -> [(model,
objective, seconds)]``.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from solvers.problems import BinaryProblem
from solvers.termination import Termination

LossName = Literal["hinge", "squared_hinge", "lp", "modified_huber", "least_squares"]
BiasMode = Literal["regularized", "free", "none"]
# What a user asks for (``params.task``): classification (binary, or multi-class by
# ``params.multiclass``) or ordinal regression; what a solver can do (``SolverSpec.tasks``):
# binary, multiclass, ordinal.
TaskName = Literal["classification", "ordinal"]
Capability = Literal["binary", "multiclass", "ordinal"]
MulticlassStrategy = Literal["ovr", "crammer_singer"]


class InvalidParametersError(ValueError):
    """Parameters a solver does not accept; the message lists every problem."""


class UnknownSolverError(ValueError):
    pass


class SolverParams(BaseModel):
    """Parameters every solver shares (``design.md`` section 2).

    Subclasses narrow ``loss``, ``bias``, ``task`` and ``multiclass`` to what the solver
    supports (a ``Literal``), so an unsupported choice is a validation error, never a
    different problem solved silently.  ``max_iter`` is each solver's own (its description
    says what one iteration is).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    solver: str
    C: float = Field(1.0, gt=0, description="Weight of the loss term: 1/2||w||^2 + C sum loss.")
    loss: LossName = "squared_hinge"
    bias: BiasMode = "regularized"
    bias_scale: float = Field(
        1.0, gt=0, description="Value of the constant bias feature (LIBLINEAR's -B).")
    task: Literal["classification"] = Field(
        "classification",
        description="classification: binary for two labels, multi-class (see 'multiclass') "
                    "for more.")
    multiclass: Literal["ovr"] = Field(
        "ovr", description="Multi-class strategy: ovr, one binary problem per class against "
                           "the rest.")

    @property
    def loss_exponent(self) -> float:
        """p of the lp loss (2 unless the solver's parameters have one)."""
        return 2.0

    def problem_fields(self) -> dict[str, Any]:
        """The optimization problem these parameters pose (section 2 of ``design.md``),
        without the algorithm's own settings: two runs with equal fields on the same data solve
        the same problem, so their objectives compare.  Normalized: ``lp`` with p = 1 or 2 is
        ``hinge`` or ``squared_hinge``; ``bias_scale`` only with a regularized bias; ``p`` only
        for ``lp``."""
        loss, p = self.loss, self.loss_exponent
        if loss == "lp" and p in (1.0, 2.0):
            loss = "hinge" if p == 1.0 else "squared_hinge"
        fields: dict[str, Any] = {"task": self.task, "multiclass": self.multiclass,
                                  "loss": loss, "C": float(self.C), "bias": self.bias}
        if loss == "lp":
            fields["p"] = float(p)
        if self.bias == "regularized":
            fields["bias_scale"] = float(self.bias_scale)
        return fields

    def binary_problem(self, X, y, sample_weight=None) -> BinaryProblem:
        """The problem these parameters describe, on labels ``y`` in {-1, +1}."""
        return BinaryProblem(X, y, C=self.C, loss=self.loss, bias=self.bias,
                             bias_scale=self.bias_scale, p=self.loss_exponent,
                             sample_weight=sample_weight)


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
    also takes ``start=``, the parameter vector of a nearby problem (the same data at another
    C), and starts from it (C paths and cross-validation use it).  ``path(problem, Cs,
    params) -> [Solution]``, when given, solves the problem along the C values in order, each
    from the last solution, sharing what does not depend on C (solutions carry
    ``extras["seconds"]``).  ``path_handlers``: task -> ``fit_path(dataset, spec, points) ->
    [(model, objective, seconds)]``, the C path of a task with its own fit handler
    (``points``: the parameters at each C, in order, each fit from the last), which
    cross-validation uses.  ``dense_system(params, n_samples, n_features) -> (what, side) |
    None`` says which dense square matrix (side x side doubles) a run will form and factorize
    with these parameters, so a service can refuse it before it queues the job.
    ``gap_parameters``: loss -> the parameter that stops a run once its certified relative
    duality gap (P - D)/P is at most its value ("*": any loss); ``solver="auto"`` and
    cross-validation's ``tol`` set it.
    """

    name: str
    params_model: type[SolverParams]
    run: BinarySolver | None
    description: str
    reference: str
    tasks: tuple[Capability, ...] = ("binary", "multiclass")
    fit_handlers: dict[str, FitHandler] = field(default_factory=dict)
    path_handlers: dict[str, PathHandler] = field(default_factory=dict)
    warm_up: Callable[[], None] | None = None
    warm_start: bool = False
    path: Callable[..., list[Solution]] | None = None
    dense_system: Callable[[SolverParams, int, int], tuple[str, int] | None] | None = None
    gap_parameters: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        solver_field = self.params_model.model_fields["solver"]
        if typing.get_args(solver_field.annotation) != (self.name,):
            raise TypeError(f"{self.params_model.__name__}.solver must be "
                            f"Literal[{self.name!r}]")

    def gap_parameter(self, loss: str) -> str | None:
        """The parameter that stops a run on ``loss`` at a certified relative duality gap
        (None: the solver has none for that loss)."""
        by_loss = dict(self.gap_parameters)
        return by_loss.get(loss, by_loss.get("*"))

    @property
    def losses(self) -> tuple[str, ...]:
        return _literal_choices(self.params_model, "loss")

    @property
    def bias_modes(self) -> tuple[str, ...]:
        return _literal_choices(self.params_model, "bias")

    def warm_start_tasks(self) -> list[str]:
        """The tasks (``train.fit_task``'s names) whose C paths share work along C (each C from
        the last solution, or the least-squares family's kernel matrix built once), as
        cross-validation solves them: "classification" when one-vs-rest runs over a binary
        solver that can warm-start, and every task with a path handler."""
        tasks = list(self.path_handlers)
        if self.warm_start and self.run is not None and "classification" not in self.fit_handlers:
            tasks.insert(0, "classification")
        return tasks

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "reference": self.reference,
            "losses": list(self.losses),
            "bias_modes": list(self.bias_modes),
            "tasks": list(self.tasks),
            "warm_start_tasks": self.warm_start_tasks(),
            "params_schema": self.params_model.model_json_schema(),
        }


def _literal_choices(model: type[BaseModel], field_name: str) -> tuple[str, ...]:
    annotation = model.model_fields[field_name].annotation
    return tuple(typing.get_args(annotation))
