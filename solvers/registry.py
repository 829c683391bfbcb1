"""The solver registry: name -> spec (parameter model, capabilities, the function that runs it).

The families are listed here, explicitly: importing a family registers nothing by side effect,
and no import happens inside a function.  The pydantic parameter models are the single source
of truth for what a solver accepts: the library validates with them, the CLI builds its
options from them, and the service publishes them (a discriminated union on ``solver``) in its
OpenAPI spec.
"""

from __future__ import annotations

import typing
from typing import Annotated, Any

from pydantic import Field

from solvers import alm, auto, cutting_plane, dual_cd, interior_point, lssvm, mfn, newton, smo
from solvers.base import (
    InvalidParametersError,
    SolverParams,
    SolverSpec,
    UnknownSolverError,
    WarmStart,
)
from solvers.problems import RegressionProblem

# Every solver family of the library, in the order the catalogue lists them.
FAMILIES = (mfn, lssvm, alm, interior_point, cutting_plane, dual_cd, smo, newton)

_REGISTRY: dict[str, SolverSpec] = {}
for _family in FAMILIES:
    for _spec in _family.SPECS:
        if _spec.name in _REGISTRY:
            raise TypeError(f"solver {_spec.name!r} is defined twice")
        _REGISTRY[_spec.name] = _spec


def mfn_newton(problem, start, tol, monitor):
    """mfn's Newton method from the point ``start`` of another method (beta-seeding's ini = 1,
    :func:`solvers.mfn.run`'s start) to the certified gap ``tol``: what dual_cd switches to on
    the squared hinge at its ``newton_switch_iter``, as LIBLINEAR's -s 1 switches to -s 2
    (and on L2-loss regression, as -s 12 switches to -s 11).
    Wired here because families do not import each other."""
    if isinstance(problem, RegressionProblem):  # -s 12 -> -s 11
        params = mfn.MFNParams(C=problem.C, task="regression", epsilon=problem.epsilon,
                               bias=problem.bias, bias_scale=problem.bias_scale, tol=tol)
        return mfn.solve_regression(problem, params, monitor, WarmStart(beta=start))
    params = mfn.MFNParams(C=problem.C, loss=problem.loss, bias=problem.bias,
                           bias_scale=problem.bias_scale, tol=tol)
    return mfn.run(problem, params, monitor, WarmStart(beta=start))


def primal_newton(problem, start, tol, monitor):
    """The Newton method dual_cd switches to at its ``newton_switch_iter``: mfn's
    (:func:`mfn_newton`) for a loss mfn solves (the squared hinge: LIBLINEAR's -s 1 -> -s 2;
    the squared epsilon-insensitive loss: -s 12 -> -s 11),
    else the newton family's truncated Newton method from ``start`` with its warm-start CG
    tolerance (the logistic loss: LIBLINEAR 2.50's -s 7 -> -s 0, "Switching to use -s 0")."""
    if isinstance(problem, RegressionProblem) or \
            mfn.MFNParams.solves.allows("binary", problem.loss, problem.bias, problem.p):
        return mfn_newton(problem, start, tol, monitor)
    params = newton.NewtonParams(C=problem.C, loss=problem.loss, bias=problem.bias,
                                 bias_scale=problem.bias_scale, tol=tol)
    return newton.run(problem, params, monitor, WarmStart(beta=start))


_REGISTRY[dual_cd.SPECS[0].name] = dual_cd.with_newton(primal_newton)
# ``auto`` chooses among the candidates the registered solvers declare
# (``SolverSpec.auto_candidates``; ``solvers.train`` runs them as a portfolio) and solves what
# they solve: a family's new solver, loss or task flows in by its declaration.
AUTO_CANDIDATES = auto.candidates_of(_REGISTRY.values())
AUTO_SPEC = auto.make_spec(AUTO_CANDIDATES, _REGISTRY.__getitem__)
_REGISTRY[AUTO_SPEC.name] = AUTO_SPEC


def get_solver(name: str) -> SolverSpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise UnknownSolverError(f"unknown solver {name!r}; available: {known}") from None


def list_solvers() -> list[SolverSpec]:
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def pose(problem: dict[str, Any], **settings) -> list[tuple[SolverSpec, SolverParams | None,
                                                                  str | None]]:
    """Every solver (but ``auto``) with the parameters that pose ``problem`` (the fields of
    ``SolverParams.problem_fields``) and ``settings`` it has (``tol``: only where the solver
    certifies a gap), or None and the reason it does not solve it.  The dashboard's race
    queues the solvers this way, all on one problem and at one ``tol``."""
    out = []
    for spec in list_solvers():
        if spec.portfolio:
            continue
        own = {k: v for k, v in settings.items() if k in spec.params_model.model_fields}
        try:
            out.append((spec, spec.params_model.posing(problem, **own), None))
        except InvalidParametersError as exc:
            out.append((spec, None, str(exc)))
    return out


def params_union():
    """The discriminated union of every registered parameter model (for the API)."""
    models = tuple(spec.params_model for spec in list_solvers())
    if len(models) == 1:
        return models[0]
    return Annotated[typing.Union[models], Field(discriminator="solver")]  # noqa: UP007


__all__ = ["AUTO_CANDIDATES", "FAMILIES", "SolverParams", "UnknownSolverError", "get_solver",
           "list_solvers", "params_union", "pose"]
