"""``/jobs``: create (queued for the worker pool), list, get, cancel, convergence log (JSON,
CSV, live server-sent events)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterable, AsyncIterator
from typing import Annotated

from fastapi import Depends, Header, Path, Query, Request, Response, status
from fastapi.responses import StreamingResponse
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import Field

from app import job_logs
from app.api import API_PREFIX
from app.api.deps import (
    MAX_POSITION,
    AfterQuery,
    DispatcherDep,
    JobDep,
    LimitQuery,
    OffsetQuery,
    SessionDep,
    SessionsDep,
    SettingsDep,
    TagQuery,
    WriteSessionDep,
)
from app.api.errors import responses
from app.api.log_streams import LogStreams
from app.api.routes import item_delete, item_get, resource_router
from app.api.security import TRAIN, PrincipalDep
from app.crud import jobs as crud_jobs
from app.crud.metrics_order import BOUND_PATTERN, SORT_DESCRIPTION, SORT_PATTERN, parse_bounds
from app.db.models import JobStatus
from app.problem import MAX_KEY_LENGTH
from app.schemas import (
    JobCreate,
    JobLogPublic,
    JobPublic,
    JobsPublic,
    TagsPatch,
)
from app.tags import parse_filters

router = resource_router("jobs")

Bound = Annotated[str, Field(pattern=BOUND_PATTERN)]
"""A ``?min=`` / ``?max=`` item: metric:number."""

PointsQuery = Annotated[int | None, Query(
    ge=3, le=10000,
    description="Down-sample the log to at most this many records (first, last and lowest "
                "objective kept, and each class's lowest and last; largest-triangle-three-"
                "buckets on the log gap between).")]


@router.post("", name="create", status_code=status.HTTP_202_ACCEPTED, dependencies=[TRAIN],
             response_model=JobPublic, responses=responses(400, 422, 429))
def create_job(body: JobCreate, session: WriteSessionDep, dispatcher: DispatcherDep,
               settings: SettingsDep, principal: PrincipalDep, response: Response) -> JobPublic:
    """Queue a training job; the worker pool runs queued jobs in order.

    A job that cannot succeed on its dataset (one label, more labels than the solver handles,
    ordinal regression on labels that are not ranks, a validation dataset of another feature
    space) or that asks for more memory than the settings allow is a 422, not a failed job.
    An owner with ``SVMSVC_MAX_QUEUED_JOBS_PER_KEY`` jobs queued gets a 429.
    """
    job = crud_jobs.create(session, body, principal, settings)
    dispatcher.wake()
    response.headers["Location"] = f"{API_PREFIX}/jobs/{job.id}"
    return JobPublic.from_row(job)


@router.get("", name="list", response_model=JobsPublic, responses=responses(422))
def list_jobs(
    session: SessionDep,
    dispatcher: DispatcherDep,
    principal: PrincipalDep,
    status_filter: Annotated[JobStatus | None, Query(alias="status")] = None,
    dataset_id: uuid.UUID | None = None,
    problem_key: Annotated[str | None, Query(
        max_length=MAX_KEY_LENGTH, pattern=r"^[ -~]*$",
        description="Only the jobs of this problem (a job's problem_key: printable ASCII).")]
        = None,
    tag: TagQuery = None,
    sort: Annotated[str, Query(pattern=SORT_PATTERN, description=SORT_DESCRIPTION)]
        = "-created_at",
    minimum: Annotated[list[Bound] | None, Query(
        alias="min", max_length=16,
        description="Only the jobs whose metric is at least this, as metric:number (e.g. "
                    "validation.accuracy:0.9); repeat it for several.")] = None,
    maximum: Annotated[list[Bound] | None, Query(
        alias="max", max_length=16,
        description="Only the jobs whose metric is at most this, as metric:number (e.g. "
                    "training_seconds:10).")] = None,
    offset: OffsetQuery = 0,
    limit: LimitQuery = 100,
) -> JobsPublic:
    """Jobs, newest first or sorted by a stored metric of their model (``sort``), optionally
    only those in one state, on one dataset, solving one problem, with given tags or within
    bounds of metrics (``min``, ``max``)."""
    rows, count = crud_jobs.list_page(
        session, principal, status_filter, dataset_id, offset, limit, problem_key,
        parse_filters(tag), sort, parse_bounds(minimum, "min"), parse_bounds(maximum, "max"))
    waiting = _queued_message(dispatcher)
    return JobsPublic(data=[_public(job, waiting) for job in rows], count=count)


@router.patch("/{job_id}", name="update", dependencies=[TRAIN], response_model=JobPublic,
              responses=responses(404, 422))
def update_job(job_id: uuid.UUID, body: TagsPatch, session: WriteSessionDep,
               dispatcher: DispatcherDep, principal: PrincipalDep) -> JobPublic:
    """Change a job's tags: ``{"tags": {"key": "value", "old": null}}`` sets ``key`` and
    removes ``old`` (the others stay).  Its model, once stored, keeps its own tags (PATCH
    /models/{id})."""
    return _public(crud_jobs.set_tags(session, job_id, body.tags, principal),
                   _queued_message(dispatcher))


@item_get(router, "/{job_id}", JobPublic)
def get_job(job: JobDep, dispatcher: DispatcherDep) -> JobPublic:
    """One job: state, progress, timestamps, the error or the model; a queued job's message
    says what it waits for (a free worker, or workers still warming up)."""
    return _public(job, _queued_message(dispatcher))


def _queued_message(dispatcher) -> str:
    """What a queued job waits for, from the pool's state: workers warming up (their
    progress), every worker busy, or its turn."""
    workers = dispatcher.snapshot()
    ready = [w for w in workers if w.alive and w.ready]
    if not ready:
        states = "; ".join(f"worker {w.index}: {w.state}" for w in workers if w.state)
        return "queued: no worker is ready yet" + (f" ({states})" if states else "")
    if all(w.job_id is not None for w in ready):
        return f"queued: waiting for a free worker (all {len(ready)} busy)"
    return "queued: waiting for its turn"


def _public(job, queued_message: str) -> JobPublic:
    public = JobPublic.from_row(job)
    if public.status == JobStatus.queued and public.message is None:
        public.message = queued_message
    return public


@router.post("/{job_id}/cancel", name="cancel", status_code=status.HTTP_202_ACCEPTED,
             dependencies=[TRAIN],
             response_model=JobPublic, responses=responses(404, 409, 422))
def cancel_job(job_id: uuid.UUID, session: WriteSessionDep, dispatcher: DispatcherDep,
               principal: PrincipalDep) -> JobPublic:
    """Cancel a job: a queued one at once; a running one within about a second (its worker
    stops cooperatively, or is killed after the grace period)."""
    job = crud_jobs.cancel(session, job_id, principal)
    dispatcher.wake()
    return JobPublic.from_row(job)


@item_delete(router, "/{job_id}", 409)
def delete_job(job_id: uuid.UUID, sessions: SessionsDep, principal: PrincipalDep) -> None:
    """Delete a finished job and its convergence log (its model, if any, stays).

    Refused (409) while the job is queued or running: cancel it first.
    """
    crud_jobs.delete(sessions, job_id, principal)


@router.get(
    "/{job_id}/log",
    name="log",
    response_model=JobLogPublic,
    responses={200: {"content": {"text/csv": {"schema": {"type": "string"}}},
                     "description": "JSON page, or with Accept: text/csv the whole log "
                                    "after `after` as CSV"},
               **responses(404, 422)},
)
def get_job_log(
    request: Request,
    job: JobDep,
    session: SessionDep,
    sessions: SessionsDep,
    after: AfterQuery = 0,
    limit: Annotated[int, Query(ge=1, le=10000)] = 1000,
    points: PointsQuery = None,
):
    """The convergence log: one record per solver iteration, oldest first.

    With ``points``, every record after ``after`` down-sampled to at most that many for a
    plot (``limit`` does not apply, ``has_more`` is false): largest-triangle-three-buckets on
    the log of the objective's distance to its lowest value, keeping the first record, the
    last and the lowest objective.
    """
    if "text/csv" in request.headers.get("accept", ""):
        return StreamingResponse(
            job_logs.csv_text(sessions, job.id, after, points), media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="job-{job.id}-log.csv"'})
    if points is not None:
        return job_logs.sampled(sessions, job.id, after, points)
    return job_logs.page(session, job.id, after, limit)


def existing_job_id(job_id: Annotated[uuid.UUID, Path()], sessions: SessionsDep,
                    principal: PrincipalDep) -> uuid.UUID:
    """The job id, if the job exists for the caller (checked in a session closed at once: a
    stream must not hold a transaction open)."""
    with sessions.read() as session:
        crud_jobs.get(session, job_id, principal)
    return job_id


async def stream_slot(request: Request, principal: PrincipalDep) -> AsyncIterator[None]:
    """A live-stream slot for the request's owner (its client address when the service has
    no keys), held until the stream has ended: 429 / 503 past the caps."""
    streams: LogStreams = request.app.state.log_streams
    keys_on = request.app.state.api_keys.enabled
    owner = principal.owner if keys_on else (
        f"client:{request.client.host}" if request.client else "client:unknown")
    streams.acquire(owner)
    try:
        yield
    finally:
        streams.release(owner)


@router.get("/{job_id}/log/stream", name="log-stream", response_class=EventSourceResponse,
            dependencies=[Depends(stream_slot)], responses=responses(404, 422, 429))
async def stream_job_log(
    request: Request,
    job_id: Annotated[uuid.UUID, Depends(existing_job_id)],
    after: AfterQuery = 0,
    last_event_id: Annotated[int | None, Header(
        ge=0, le=MAX_POSITION,
        description="Resume after this iteration (sent by EventSource on reconnect).")] = None,
) -> AsyncIterable[ServerSentEvent]:
    """Server-sent events while the job runs: ``record`` (a log record, id = iteration),
    ``status`` (the job, whenever its state changes) and finally ``end`` (the finished job).

    At most ``SVMSVC_MAX_LOG_STREAMS_PER_KEY`` streams per owner (429) and
    ``SVMSVC_MAX_LOG_STREAMS`` in all (503) are open at once, both with ``Retry-After``.
    """
    streams: LogStreams = request.app.state.log_streams
    async for event in streams.follow(job_id, max(after, last_event_id or 0)):
        yield event
