"""The solver registry: name -> spec (parameter model, capabilities, the function that runs it).

The families are listed here, explicitly: importing a family registers nothing by side effect,
and no import happens inside a function.  The pydantic parameter models are the single source
of truth for what a solver accepts: the library validates with them, the CLI builds its
options from them, and the service publishes them (a discriminated union on ``solver``) in its
OpenAPI spec.
"""

from __future__ import annotations

import typing
from typing import Annotated

from pydantic import Field

from solvers import alm, cutting_plane, interior_point, lssvm, mfn
from solvers.auto import AUTO_SPEC
from solvers.base import SolverParams, SolverSpec, UnknownSolverError

# Every solver family of the library, in the order the catalogue lists them.
FAMILIES = (mfn, lssvm, alm, interior_point, cutting_plane)

_REGISTRY: dict[str, SolverSpec] = {}
for _family in FAMILIES:
    for _spec in _family.SPECS:
        if _spec.name in _REGISTRY:
            raise TypeError(f"solver {_spec.name!r} is defined twice")
        _REGISTRY[_spec.name] = _spec
# ``auto`` chooses among the families' solvers (``solvers.train`` resolves it to one).
_REGISTRY[AUTO_SPEC.name] = AUTO_SPEC


def get_solver(name: str) -> SolverSpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise UnknownSolverError(f"unknown solver {name!r}; available: {known}") from None


def list_solvers() -> list[SolverSpec]:
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def params_union():
    """The discriminated union of every registered parameter model (for the API)."""
    models = tuple(spec.params_model for spec in list_solvers())
    if len(models) == 1:
        return models[0]
    return Annotated[typing.Union[models], Field(discriminator="solver")]  # noqa: UP007


__all__ = ["FAMILIES", "SolverParams", "UnknownSolverError", "get_solver", "list_solvers",
           "params_union"]
