"""``/jobs``: create (queued for the worker pool), list, get, cancel, convergence log (JSON,
CSV, live server-sent events); batch prediction jobs (create, download the result); a job's
webhook deliveries."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterable, AsyncIterator
from typing import Annotated

from fastapi import Depends, Header, Path, Query, Request, Response, status
from fastapi.responses import StreamingResponse
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import Field
from starlette.exceptions import HTTPException as StarletteHTTPException

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
    StoreDep,
    TagQuery,
    WriteSessionDep,
)
from app.api.errors import responses
from app.api.log_streams import LogStreams
from app.api.pages import bounded_page
from app.api.routes import item_delete, item_get, resource_router
from app.api.security import TRAIN, PrincipalDep
from app.crud import jobs as crud_jobs
from app.crud.metrics_order import BOUND_PATTERN, SORT_DESCRIPTION, SORT_PATTERN, parse_bounds
from app.db.models import JobKind, JobStatus
from app.errors import Conflict
from app.problem import MAX_KEY_LENGTH
from app.schemas import (
    JobCreate,
    JobLogPublic,
    JobPublic,
    JobsPublic,
    PredictionJobCreate,
    TagsPatch,
    WebhookDeliveriesPublic,
    WebhookDeliveryPublic,
)
from app.tags import parse_filters
from app.webhooks import deliveries

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


@router.post("/predict", name="create_prediction", status_code=status.HTTP_202_ACCEPTED,
             dependencies=[TRAIN], response_model=JobPublic,
             responses=responses(400, 422, 429))
def create_prediction_job(body: PredictionJobCreate, session: WriteSessionDep,
                          dispatcher: DispatcherDep, settings: SettingsDep,
                          principal: PrincipalDep, response: Response) -> JobPublic:
    """Queue a batch prediction job: the model scores every row of a stored (or sharded)
    dataset on the worker pool, ``SVMSVC_PREDICTION_CHUNK_ROWS`` rows at a time, into a CSV
    (or Parquet) result downloadable from ``GET /jobs/{id}/predictions`` once it succeeds.
    Its progress is ``rows_done`` of ``rows_total``; it is cancelled, time-limited, listed
    and deleted like a training job, and counts in the same queue quota (429).

    The route for more rows than a synchronous ``POST /models/{id}/predict`` takes
    (``SVMSVC_MAX_PREDICT_ROWS``, ``SVMSVC_MAX_PREDICT_BYTES``).  A model or dataset that does
    not exist (for the caller), a dataset with more features than the model, ``parquet``
    without pyarrow installed, or a callback URL not allowed is a 422.
    """
    job = crud_jobs.create_prediction(session, body, principal, settings)
    dispatcher.wake()
    response.headers["Location"] = f"{API_PREFIX}/jobs/{job.id}"
    return JobPublic.from_row(job)


@router.api_route("/predict", methods=["GET", "PUT", "PATCH", "DELETE"],
                  include_in_schema=False)
def predict_other_methods() -> None:
    """``predict`` is the collection's other creation, not a job's id: any other method is a
    405 (``Allow: POST``), not the item routes' 422 for an id that is not a UUID."""
    raise StarletteHTTPException(status.HTTP_405_METHOD_NOT_ALLOWED)


@router.get("", name="list", response_model=JobsPublic, responses=responses(422))
def list_jobs(
    request: Request,
    session: SessionDep,
    dispatcher: DispatcherDep,
    principal: PrincipalDep,
    status_filter: Annotated[JobStatus | None, Query(alias="status")] = None,
    dataset_id: uuid.UUID | None = None,
    kind: Annotated[JobKind | None, Query(
        description="Only training jobs (train) or batch prediction jobs (predict).")] = None,
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
    only those in one state, of one kind, on one dataset, solving one problem, with given
    tags or within bounds of metrics (``min``, ``max``); a page ends at ``limit`` items or at
    ``SVMSVC_MAX_LIST_BYTES`` (``next`` links the rest)."""
    rows, count = crud_jobs.list_page(
        session, principal, status_filter, dataset_id, offset, limit, problem_key, kind,
        parse_filters(tag), sort, parse_bounds(minimum, "min"), parse_bounds(maximum, "max"))
    waiting = _queued_message(dispatcher)
    return JobsPublic(**bounded_page(request, [_public(job, waiting) for job in rows], count,
                                     offset))


@router.patch("/{job_id}", name="update", dependencies=[TRAIN], response_model=JobPublic,
              responses=responses(400, 404, 422))
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
def delete_job(job_id: uuid.UUID, sessions: SessionsDep, principal: PrincipalDep,
               store: StoreDep) -> None:
    """Delete a finished job and its convergence log (its model, if any, stays; a prediction
    job's result file goes).

    Refused (409) while the job is queued or running: cancel it first.
    """
    crud_jobs.delete(sessions, job_id, principal, store)


RESULT_PIECE_BYTES = 1 << 20
"""Bytes of a result file sent at a time."""


@router.get(
    "/{job_id}/predictions",
    name="predictions",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/csv": {"schema": {"type": "string"}},
                                 "application/vnd.apache.parquet": {
                                     "schema": {"type": "string", "format": "binary"}}},
                     "description": "The result file, streamed: CSV (a header line, then one "
                                    "line a row) or Parquet, as the job asked."},
               **responses(404, 409, 422)},
)
def download_predictions(job_id: uuid.UUID, session: SessionDep, store: StoreDep,
                         principal: PrincipalDep) -> StreamingResponse:
    """A succeeded prediction job's result, streamed a megabyte at a time (never held whole
    in the web process).  409 for a training job or a prediction job that has not
    succeeded."""
    from app.batch_prediction import FORMATS

    job = crud_jobs.prediction_result(session, job_id, principal)
    result = job.result
    try:
        file = store.open_result(result["name"])
    except FileNotFoundError:
        raise Conflict(f"job {job.id}'s result file is gone from the store") \
            from None

    def pieces():
        with file:
            while piece := file.read(RESULT_PIECE_BYTES):
                yield piece

    extension = result["name"].rsplit(".", 1)[-1]
    return StreamingResponse(pieces(), media_type=FORMATS[result["format"]], headers={
        "Content-Length": str(result["bytes"]),
        "Content-Disposition": f'attachment; filename="predictions-{job.id}.{extension}"'})


@router.get("/{job_id}/deliveries", name="deliveries", response_model=WebhookDeliveriesPublic,
            responses=responses(404, 422))
def get_deliveries(job: JobDep, session: SessionDep) -> WebhookDeliveriesPublic:
    """The job's webhook: the event POSTed to its ``callback_url`` (once the job has ended)
    and every delivery attempt (time, HTTP status, error), oldest first."""
    event, rows = deliveries(session, job.id)
    if job.callback_url is None:
        state = None
    else:
        state = "waiting" if event is None else event.state
    return WebhookDeliveriesPublic(
        job_id=job.id, callback_url=job.callback_url, state=state,
        attempts=0 if event is None else event.attempts,
        next_attempt_at=event.next_attempt_at if event is not None and
        event.state == "pending" else None,
        event=None if event is None else event.payload,
        data=[WebhookDeliveryPublic.from_row(row) for row in rows], count=len(rows))


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
    # an integer in the spec, not "integer or null": a header cannot carry a null, and the
    # nullable form let schemathesis send "null" (or nothing after the colon), which the
    # handler refused (422) though the spec allowed it; absent, it is None
    last_event_id: Annotated[int, Header(
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
