"""``/solvers``: what the registry holds (names, parameter schemas, losses, tasks)."""

from __future__ import annotations

from fastapi import APIRouter

import solvers
from app.api import API_PREFIX
from app.api.errors import responses
from app.api.security import READ
from app.errors import InvalidRequest
from app.schemas import PosedSolver, PosedSolvers, PoseRequest, SolverPublic, SolversPublic
from solvers.registry import pose as pose_problem

router = APIRouter(prefix=f"{API_PREFIX}/solvers", tags=["solvers"], dependencies=[READ],
                   responses=responses(401, 403))


@router.get("", name="list", response_model=SolversPublic)
def list_solvers() -> SolversPublic:
    """Every registered solver with the JSON schema of its parameters."""
    data = [SolverPublic.model_validate(spec.describe()) for spec in solvers.list_solvers()]
    return SolversPublic(data=data, count=len(data))


@router.post("/pose", name="pose", response_model=PosedSolvers, responses=responses(400, 422))
def pose(request: PoseRequest) -> PosedSolvers:
    """The parameters that pose one problem to every solver (the dashboard's race queues them,
    all at one ``tol``), or the reason a solver does not solve it: the library's rule, the
    same ``auto`` uses."""
    settings = {} if request.tol is None else {"tol": request.tol}
    # a job's `problem` names its dataset too, which no solver's parameters pose
    problem = {name: value for name, value in request.problem.items() if name != "dataset"}
    try:
        posed = pose_problem(problem, **settings)
    except KeyError as exc:
        raise InvalidRequest(f"problem: the field {exc.args[0]!r} is required") from None
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(f"problem: {exc}") from None
    data = [PosedSolver(solver=spec.name,
                        params=None if params is None else params.model_dump(mode="json"),
                        reason=reason) for spec, params, reason in posed]
    return PosedSolvers(data=data, count=len(data))
