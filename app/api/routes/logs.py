"""``/logs``: several jobs' convergence logs in one call, down-sampled, for laying runs of
different solvers on one problem over each other (the dashboard's comparison).

A resource of its own rather than ``/jobs/logs``, which ``/jobs/{job_id}`` would also match
(a DELETE there would reach the job route instead of a 405)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Query

from app import job_logs
from app.api.deps import SessionsDep
from app.api.errors import responses
from app.api.routes import resource_router
from app.api.security import PrincipalDep
from app.schemas import JobLogsPublic

router = resource_router("logs", tag="jobs")

MAX_JOBS = 20
"""Most jobs one request fetches."""
DEFAULT_POINTS = 500


@router.get("", name="logs", response_model=JobLogsPublic, responses=responses(422))
def get_job_logs(
    sessions: SessionsDep,
    principal: PrincipalDep,
    job_id: Annotated[list[uuid.UUID], Query(
        min_length=1, max_length=MAX_JOBS,
        description=f"The jobs (repeat the parameter; at most {MAX_JOBS}).")],
    points: Annotated[int, Query(
        ge=3, le=10000,
        description="Down-sample each log to at most this many records (first, last and "
                    "lowest objective kept, and each class's lowest and last; largest-"
                    "triangle-three-buckets on the log gap between).")] = DEFAULT_POINTS,
) -> JobLogsPublic:
    """Several jobs' convergence logs at once, each down-sampled to at most ``points``
    records, with the lowest objective any of them reached: what a comparison of solvers on
    one problem plots.  A job that does not exist is a 422 naming it."""
    return job_logs.compare(sessions, job_id, points, principal)
