"""The solver registry: name -> parameter model, capabilities and the function that runs it.

The pydantic parameter models are the single source of truth for what a solver accepts: the
library validates with them, the CLI builds its options from them, and the service publishes
them (a discriminated union on ``solver``) in its OpenAPI spec.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

LossName = Literal["hinge", "squared_hinge", "lp", "modified_huber", "least_squares"]
BiasMode = Literal["regularized", "free", "none"]


class SolverParams(BaseModel):
    """Parameters every solver shares (``design.md`` section 2).

    Subclasses narrow ``loss`` and ``bias`` to what the solver supports (a ``Literal``), so an
    unsupported choice is a validation error, never a different problem solved silently.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    solver: str
    C: float = Field(1.0, gt=0, description="Weight of the loss term: 1/2||w||^2 + C sum loss.")
    loss: LossName = "squared_hinge"
    bias: BiasMode = "regularized"
    bias_scale: float = Field(
        1.0, gt=0, description="Value of the constant bias feature (LIBLINEAR's -B)."
    )


@dataclass(frozen=True)
class Solution:
    """What a solver returns: the parameter vector beta = (w, b) and why it stopped.

    ``status`` is one of ``converged``, ``max_iter`` (iteration limit, best iterate returned),
    ``stopped`` (the monitor asked: cancellation or time limit) or ``failed`` (the method
    broke down; ``message`` says how).
    """

    beta: np.ndarray
    objective: float
    status: str
    message: str
    iterations: int
    extras: dict[str, Any]


SolverFunction = Callable[..., Solution]


@dataclass(frozen=True)
class SolverSpec:
    """A registered solver.

    ``run(problem, params, monitor) -> Solution`` solves one linear binary problem; ``train``
    wraps it (label mapping, one-vs-rest, the linear model).  Solvers that build another kind
    of model, or handle another task, give ``fit_handlers``: task name -> ``fit(dataset,
    params, monitor) -> Fit``; ``train`` then calls the handler for the task the parameters
    ask for (``params.task``, default ``"classification"``).
    """

    name: str
    params_model: type[SolverParams]
    run: SolverFunction | None
    description: str
    reference: str
    tasks: tuple[str, ...] = ("binary", "multiclass")
    fit_handlers: dict[str, Callable[..., Any]] = field(default_factory=dict)

    @property
    def losses(self) -> tuple[str, ...]:
        return _literal_choices(self.params_model, "loss")

    @property
    def bias_modes(self) -> tuple[str, ...]:
        return _literal_choices(self.params_model, "bias")

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "reference": self.reference,
            "losses": list(self.losses),
            "bias_modes": list(self.bias_modes),
            "tasks": list(self.tasks),
            "params_schema": self.params_model.model_json_schema(),
        }


def _literal_choices(model: type[BaseModel], field_name: str) -> tuple[str, ...]:
    annotation = model.model_fields[field_name].annotation
    return tuple(typing.get_args(annotation))


_REGISTRY: dict[str, SolverSpec] = {}


class UnknownSolverError(ValueError):
    pass


def register(spec: SolverSpec) -> SolverSpec:
    solver_field = spec.params_model.model_fields["solver"]
    if typing.get_args(solver_field.annotation) != (spec.name,):
        raise TypeError(f"{spec.params_model.__name__}.solver must be Literal[{spec.name!r}]")
    _REGISTRY[spec.name] = spec
    return spec


def get_solver(name: str) -> SolverSpec:
    _load_builtin_solvers()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise UnknownSolverError(f"unknown solver {name!r}; available: {known}") from None


def list_solvers() -> list[SolverSpec]:
    _load_builtin_solvers()
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def params_union():
    """The discriminated union of every registered parameter model (for the API)."""
    models = tuple(spec.params_model for spec in list_solvers())
    if len(models) == 1:
        return models[0]
    return Annotated[typing.Union[models], Field(discriminator="solver")]  # noqa: UP007


def _load_builtin_solvers() -> None:
    # Solver modules register themselves on import; importing them here keeps the registry
    # complete however the library was entered.
    import solvers.lssvm  # noqa: F401
    import solvers.mfn  # noqa: F401
