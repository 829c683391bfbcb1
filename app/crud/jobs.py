"""Jobs and their convergence logs: create (checked, within the queue quota), list, get,
cancel, delete, log pages and batches, the job with its newest records (live stream)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.batch_prediction import check_format, check_width
from app.core.config import Settings
from app.core.principals import Principal
from app.crud.metrics_order import ordered
from app.crud.pages import owned, page, visible
from app.db.models import Dataset, Job, JobKind, JobLogEntry, JobStatus, TrainedModel
from app.db.session import Sessions
from app.errors import Conflict, QuotaExceeded, limit_exceeded
from app.jobs.admission import check_job, job_time_limit
from app.jobs.state import delete_finished_job, request_cancel
from app.problem import problem_key
from app.quotas import check_model_bytes, lock_owner
from app.storage import DatasetStorage
from app.tags import merged, where_tagged
from app.webhooks import check_callback_url, owner_secret


def create(session: Session, body, principal: Principal, settings: Settings) -> Job:
    """Queue the job of a ``JobCreate`` for ``principal``'s owner: 422 for datasets that do
    not exist (for it) or a job that cannot succeed (:func:`~app.jobs.admission.check_job`),
    413 when its model would take the owner past its model quota, counting what its queued
    and running jobs reserved (:mod:`app.quotas`), 429 past the owner's queue quota."""
    datasets = {}
    for field, dataset_id in (("dataset_id", body.dataset_id),
                              ("validation_dataset_id", body.validation_dataset_id)):
        if dataset_id is not None:
            datasets[field] = owned(session, Dataset, dataset_id, "dataset", principal, field)
    time_limit_s = job_time_limit(body.time_limit_s, settings)
    model_bytes = check_job(body.params, datasets["dataset_id"],
                            datasets.get("validation_dataset_id"), settings, body.tuning)
    owner = principal.owner
    lock_owner(session, owner)  # the quotas' sums and this job's reservation, atomically
    check_model_bytes(session, owner, model_bytes, settings)
    _check_callback(session, body.callback_url, owner, settings)
    _check_queue_quota(session, owner, settings)
    job = Job(
        callback_url=body.callback_url,
        dataset_id=body.dataset_id,
        validation_dataset_id=body.validation_dataset_id,
        solver=body.params.solver,
        params=body.params.model_dump(mode="json"),
        time_limit_s=time_limit_s,
        status=JobStatus.queued,
        owner=owner,
        tuning=None if body.tuning is None else body.tuning.model_dump(mode="json"),
        problem_key=None if body.tuning is not None else problem_key(body.dataset_id,
                                                                     body.params),
        keep_last_good=body.keep_last_good,
        tags=dict(body.tags),
        model_name=body.model_name,
        reserved_model_bytes=model_bytes,
    )
    session.add(job)
    session.commit()
    return job


def _check_queue_quota(session: Session, owner: str, settings: Settings) -> None:
    """429 when the owner has ``max_queued_jobs_per_key`` jobs queued (of either kind)."""
    queued = session.scalar(select(func.count()).select_from(Job).where(
        Job.owner == owner, Job.status == JobStatus.queued))
    if queued >= settings.max_queued_jobs_per_key:
        raise limit_exceeded("the jobs queued for this owner", "max_queued_jobs_per_key",
                             settings.max_queued_jobs_per_key, "jobs", actual=queued,
                             error=QuotaExceeded)


def _check_callback(session: Session, url: str | None, owner: str,
                    settings: Settings) -> None:
    """A callback URL the service may call (:func:`app.webhooks.check_callback_url`, 422
    naming ``SVMSVC_WEBHOOK_ALLOWED_HOSTS``), and the owner's signing secret made if it has
    none yet (so the owner can read it before the first event)."""
    if url is None:
        return
    check_callback_url(url, settings)
    owner_secret(session, owner)


def create_prediction(session: Session, body, principal: Principal, settings: Settings) -> Job:
    """Queue the batch prediction job of a ``PredictionJobCreate``: 422 for a model or
    dataset that does not exist (for the caller), a dataset wider than the model, a format
    the service cannot write or a callback URL not allowed; 429 past the queue quota."""
    model = owned(session, TrainedModel, body.model_id, "model", principal, "model_id")
    dataset = owned(session, Dataset, body.dataset_id, "dataset", principal, "dataset_id")
    check_width(dataset.n_features, model.n_features)
    check_format(body.format)
    time_limit_s = job_time_limit(body.time_limit_s, settings)
    owner = principal.owner
    _check_callback(session, body.callback_url, owner, settings)
    _check_queue_quota(session, owner, settings)
    job = Job(kind=JobKind.predict, predict_model_id=model.id, dataset_id=dataset.id,
              solver=model.solver, params={"format": body.format}, time_limit_s=time_limit_s,
              status=JobStatus.queued, owner=owner, rows_total=dataset.n_samples,
              callback_url=body.callback_url)
    session.add(job)
    session.commit()
    return job


def prediction_result(session: Session, job_id: uuid.UUID, principal: Principal) -> Job:
    """A prediction job whose result can be downloaded: :class:`NotFound`, or
    :class:`Conflict` for a training job or one that has not succeeded."""
    job = get(session, job_id, principal)
    if job.kind != JobKind.predict:
        raise Conflict(f"job {job.id} is a training job: it has no predictions (its model "
                       f"has: POST /models/{{id}}/predict)")
    if job.status != JobStatus.succeeded or job.result is None:
        raise Conflict(f"job {job.id} is {job.status}: its predictions can be downloaded "
                       f"once it has succeeded")
    return job


def get(session: Session, job_id: uuid.UUID, principal: Principal,
        field: str | None = None) -> Job:
    """The job, if ``principal`` sees it (:func:`~app.crud.pages.owned`)."""
    return owned(session, Job, job_id, "job", principal, field)


def cancel(session: Session, job_id: uuid.UUID, principal: Principal) -> Job:
    """Cancel a job (a queued one at once, a running one flagged for its worker):
    :class:`NotFound`, or :class:`Conflict` when it has already finished."""
    job = get(session, job_id, principal)
    if JobStatus(job.status).finished:
        raise Conflict(f"job {job.id} has already {job.status}")
    request_cancel(session, job)
    return job


def delete(sessions: Sessions, job_id: uuid.UUID, principal: Principal,
           store: DatasetStorage | None = None) -> None:
    """Delete a finished job and its log (its model stays; a prediction job's result file
    goes, from ``store``): :class:`NotFound`, or :class:`Conflict` while it is queued or
    running."""
    with sessions.read() as session:
        job = get(session, job_id, principal)
        status, result = JobStatus(job.status), job.result
    if not status.finished:
        raise Conflict(f"job {job_id} is {status}; cancel it first")
    delete_finished_job(sessions, job_id)
    if result is not None and store is not None:
        store.delete_result(result["name"])


def set_tags(session: Session, job_id: uuid.UUID, patch: dict[str, str | None],
             principal: Principal) -> Job:
    """Merge ``patch`` into the job's tags (:func:`app.tags.merged`)."""
    job = get(session, job_id, principal)
    job.tags = merged(job.tags, patch)
    session.commit()
    return job


def list_page(session: Session, principal: Principal, status: JobStatus | None,
              dataset_id: uuid.UUID | None, offset: int, limit: int,
              key: str | None = None, kind: JobKind | None = None,
              tags: list[tuple[str, str]] | None = None,
              sort: str = "-created_at", minimum: list[tuple[str, float]] = (),
              maximum: list[tuple[str, float]] = ()) -> tuple[list[Job], int]:
    """The jobs ``principal`` sees, newest first or in the order of ``sort``
    (:mod:`app.crud.metrics_order`), optionally only those in one state, of one kind, on one
    dataset, of one problem key, with every tag of ``tags`` or within the metrics' bounds."""
    query = where_tagged(visible(select(Job), Job, principal), Job.tags, tags or [])
    if kind is not None:
        query = query.where(Job.kind == kind)
    query, order = ordered(query, sort, list(minimum), list(maximum))
    if status is not None:
        query = query.where(Job.status == status)
    if dataset_id is not None:
        query = query.where(Job.dataset_id == dataset_id)
    if key is not None:
        query = query.where(Job.problem_key == key)
    return page(session, query, order, offset, limit)


def _records_after(job_id: uuid.UUID, after: int, limit: int):
    return (select(JobLogEntry)
            .where(JobLogEntry.job_id == job_id, JobLogEntry.iteration > after)
            .order_by(JobLogEntry.iteration).limit(limit))


def log_count(session: Session, job_id: uuid.UUID) -> int:
    """How many records the job's log holds."""
    return session.scalar(select(func.count()).select_from(JobLogEntry)
                          .where(JobLogEntry.job_id == job_id))


def log_page(session: Session, job_id: uuid.UUID, after: int,
             limit: int) -> tuple[list[JobLogEntry], int, bool]:
    """Up to ``limit`` records after iteration ``after``, the number of records in all, and
    whether more follow."""
    count = log_count(session, job_id)
    rows = list(session.scalars(_records_after(job_id, after, limit + 1)))
    return rows[:limit], count, len(rows) > limit


def log_batches(sessions: Sessions, job_id: uuid.UUID, after: int,
                batch: int) -> Iterator[list[JobLogEntry]]:
    """Every record after ``after``, ``batch`` at a time, each batch read in its own short
    session (a long download never holds a transaction open)."""
    while True:
        with sessions.read() as session:
            rows = list(session.scalars(_records_after(job_id, after, batch)))
        yield rows
        if len(rows) < batch:
            return
        after = rows[-1].iteration


def with_records(sessions: Sessions, job_id: uuid.UUID, after: int,
                 limit: int) -> tuple[Job | None, list[JobLogEntry]]:
    """The job and up to ``limit`` of its records after ``after``, read in one snapshot, the
    job first: once it is seen finished, every record was committed before."""
    with sessions.read() as session:
        job = session.get(Job, job_id)
        if job is None:
            return None, []
        return job, list(session.scalars(_records_after(job_id, after, limit)))


def with_last_iteration(sessions: Sessions, job_id: uuid.UUID) -> tuple[Job | None, int]:
    """The job and the newest iteration of its log (0 when none), read in one snapshot."""
    with sessions.read() as session:
        job = session.get(Job, job_id)
        if job is None:
            return None, 0
        last = session.scalar(select(func.max(JobLogEntry.iteration))
                              .where(JobLogEntry.job_id == job_id))
        return job, last or 0


def records_between(sessions: Sessions, job_id: uuid.UUID, after: int, upto: int,
                    limit: int) -> list[JobLogEntry]:
    """Up to ``limit`` records with ``after < iteration <= upto``, oldest first."""
    with sessions.read() as session:
        return list(session.scalars(_records_after(job_id, after, limit)
                                    .where(JobLogEntry.iteration <= upto)))
