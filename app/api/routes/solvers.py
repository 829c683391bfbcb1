"""``/solvers``: what the registry holds (names, parameter schemas, losses, tasks)."""

from __future__ import annotations

from fastapi import APIRouter

import solvers
from app.api import API_PREFIX
from app.api.errors import responses
from app.core.security import READ
from app.schemas import SolverPublic, SolversPublic

router = APIRouter(prefix=f"{API_PREFIX}/solvers", tags=["solvers"], dependencies=[READ],
                   responses=responses(401, 403))


@router.get("", name="list", response_model=SolversPublic)
def list_solvers() -> SolversPublic:
    """Every registered solver with the JSON schema of its parameters."""
    data = [SolverPublic.model_validate(spec.describe()) for spec in solvers.list_solvers()]
    return SolversPublic(data=data, count=len(data))
