"""Every change of a job's state, as short conditional transactions.

``queued -> running`` happens in :func:`claim_next_job` (the dispatcher), which increments
``attempts``.  From then on a writer -- the worker's monitor and the worker itself, or the
dispatcher when the worker died -- only touches the job while it is still ``running`` *with
the attempt number it was given*: a worker orphaned by a crashed service can never overwrite
a job that a restarted service has re-queued and given to another worker.

A running job holds a lease: ``heartbeat_at``, set when it is claimed and renewed by its
worker (with each batch of records it writes) and by the dispatcher of its service (while the
worker process is alive, so a long iteration keeps it too).  :func:`recover_interrupted_jobs`
only takes back jobs whose lease is older than ``lease_s`` (or released by a clean shutdown),
so several service processes on one database never take each other's live jobs.
"""

from __future__ import annotations

import enum
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, insert, or_, select, update
from sqlalchemy.orm import Session

from app.crud.registry import register_version
from app.db.models import Job, JobLogEntry, JobStatus, TrainedModel, utcnow


@dataclass(frozen=True)
class Claim:
    """A job the dispatcher took from the queue for one worker."""

    job_id: uuid.UUID
    attempt: int
    time_limit_s: float | None


class Signal(enum.Enum):
    """What a running job's writer learns when it checks in."""

    proceed = "proceed"
    cancel = "cancel"  # a cancel was requested
    lost = "lost"  # the job is no longer this attempt's (re-queued, or finished elsewhere)


def _owned(job_id: uuid.UUID, attempt: int):
    return (Job.id == job_id, Job.attempts == attempt, Job.status == JobStatus.running)


def finite_or_none(value: Any) -> float | None:
    """A float for a database column: NaN and infinities become NULL."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def describe_exception(exc: BaseException) -> str:
    """One line for a job's error: the library's own messages are written for users."""
    if isinstance(exc, ValueError) and str(exc):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def has_queued_jobs(session: Session) -> bool:
    """Whether any job waits (a read, so that idle polling never takes a write lock)."""
    found = session.scalar(select(Job.id).where(Job.status == JobStatus.queued).limit(1))
    session.rollback()
    return found is not None


def claim_next_job(session: Session) -> Claim | None:
    """Move the oldest queued job to ``running`` (attempt + 1) and clear its old log."""
    while True:
        row = session.execute(
            select(Job.id, Job.attempts, Job.time_limit_s)
            .where(Job.status == JobStatus.queued)
            .order_by(Job.created_at, Job.id)
            .limit(1)
        ).first()
        if row is None:
            session.rollback()
            return None
        claimed = session.execute(
            update(Job)
            .where(Job.id == row.id, Job.status == JobStatus.queued)
            .values(status=JobStatus.running, attempts=Job.attempts + 1, started_at=utcnow(),
                    cancel_requested_at=None, iteration=None, elapsed=None, objective=None,
                    optimality=None, progress_stage=None, solver_status=None, message=None,
                    error=None, rows_done=None,
                    heartbeat_at=utcnow())
        ).rowcount
        if claimed == 1:
            session.execute(delete(JobLogEntry).where(JobLogEntry.job_id == row.id))
            session.commit()
            return Claim(row.id, row.attempts + 1, row.time_limit_s)
        session.rollback()  # cancelled meanwhile: take the next one


def check_in(session: Session, job_id: uuid.UUID, attempt: int) -> Signal:
    """Whether the running attempt should go on, stop for a cancel, or stop writing."""
    row = session.execute(
        select(Job.status, Job.attempts, Job.cancel_requested_at).where(Job.id == job_id)
    ).first()
    session.rollback()
    if row is None or row.status != JobStatus.running or row.attempts != attempt:
        return Signal.lost
    return Signal.cancel if row.cancel_requested_at is not None else Signal.proceed


def progress_stage(extras: dict[str, Any]) -> str | None:
    """Where a record stands in its job, in words, from the tags the library puts in its
    extras: a tuning job's fit ("C 3 of 11, fold 2 of 5", with "gamma 2 of 4" on a kernel
    grid, "epsilon 0.5" or "nu 0.2" on a grid of those), its refit ("refit at the best
    point"), the low-rank factorization ("factorizing: 640 of 2000 pivots", then
    "factorized: rank 2000 of 2000"; with the rank chosen, first "choosing the rank: 256 of
    at most 1024 landmarks"; :class:`solvers.approximation.FactorProgress`), a
    one-vs-rest subproblem ("class 3 of 26 (label C)") or a one-vs-one pair ("pair 4 of 45
    (3-7)"), a prediction job's rows ("rows 50000 of 1000000"); None for a single binary
    problem."""
    parts = []
    if "rows_done" in extras:  # a prediction job's chunk
        total = extras.get("rows_total")
        return f"rows {extras['rows_done']} of {'?' if total is None else total}"
    if extras.get("stage") == "refit":
        parts.append("refit at the best point")
    if "factor_step" in extras:
        if extras["factor_step"] == "done":
            parts.append(f"factorized: rank {extras['factor_done']} of "
                         f"{extras['factor_total']}")
        elif extras["factor_step"] == "rank search":  # rank=None: landmarks doubled
            parts.append(f"choosing the rank: {extras['factor_done']} of at most "
                         f"{extras['factor_total']} landmarks")
        else:
            parts.append(f"factorizing: {extras['factor_done']} of {extras['factor_total']} "
                         f"{extras['factor_step']}")
    if "n_folds" in extras and "C_index" in extras:
        parts.append(f"C {extras['C_index'] + 1} of {extras['n_C']}")
        if extras.get("n_gamma", 1) > 1:
            parts.append(f"gamma {extras['gamma_index'] + 1} of {extras['n_gamma']}")
        # a regression's tube width and nu-SVC's / nu-SVR's nu, where the grid has them
        parts += [f"{axis} {extras[axis]:g}" for axis in ("epsilon", "nu")
                  if extras.get(axis) is not None]
        parts.append(f"fold {extras['fold'] + 1} of {extras['n_folds']}")
    if "n_classes" in extras:
        parts.append(f"class {extras['class_index'] + 1} of {extras['n_classes']} "
                     f"(label {extras.get('class')})")
    elif "n_subproblems" in extras:
        parts.append(f"pair {extras['subproblem'] + 1} of {extras['n_subproblems']} "
                     f"({extras.get('class')})")
    return ", ".join(parts)[:128] or None


def record_progress(session: Session, job_id: uuid.UUID, attempt: int,
                    records: Sequence[dict[str, Any]]) -> Signal:
    """Append iteration records (dicts with the log columns) and update the job's progress.

    The records go in first and the job row is updated last, reading the cancel flag back in
    the same statement: the row lock (PostgreSQL) is held for one statement and the commit,
    not for the batch insert, so a worker stopped or slowed inside this transaction does not
    hold up ``POST /jobs/{id}/cancel`` for long (a worker SIGSTOPped with the lock held made
    the cancel wait until the client gave up).  A lost attempt's insert is rolled back."""
    last = records[-1]
    session.execute(insert(JobLogEntry), [dict(record, job_id=job_id) for record in records])
    extras = last["extras"]
    rows = ({"rows_done": extras["rows_done"], "rows_total": extras["rows_total"]}
            if "rows_done" in extras else {})  # a prediction job's
    owned = session.execute(
        update(Job).where(*_owned(job_id, attempt)).values(
            iteration=last["iteration"], elapsed=last["elapsed"],
            objective=last["objective"], optimality=last["optimality"],
            progress_stage=progress_stage(last["extras"]), heartbeat_at=utcnow(), **rows)
        .returning(Job.cancel_requested_at)
    ).all()
    if len(owned) != 1:
        session.rollback()
        return Signal.lost
    session.commit()
    return Signal.cancel if owned[0].cancel_requested_at is not None else Signal.proceed


def set_running_message(session: Session, job_id: uuid.UUID, attempt: int,
                        message: str | None) -> None:
    """Say what a running attempt does before its solver starts (a worker compiling the
    solver's kernels on a machine's first job), in the job's ``message``; None clears it
    (the solver's records then say where it is, and its end writes the final message)."""
    session.execute(update(Job).where(*_owned(job_id, attempt)).values(
        message=message, heartbeat_at=utcnow()))
    session.commit()


def finish_job(session: Session, job_id: uuid.UUID, attempt: int, status: JobStatus, *,
               message: str | None = None, error: str | None = None,
               solver_status: str | None = None, model: TrainedModel | None = None,
               cross_validation: dict | None = None, result: dict | None = None,
               rows_done: int | None = None, rows_total: int | None = None) -> bool:
    """Give a running attempt its final state (and its model and a tuning job's table, or a
    prediction job's result and rows, in the same transaction; a job with a ``model_name``
    registers its model as that name's next version there too:
    :func:`app.crud.registry.register_version`).

    Returns False, changing nothing, when the attempt no longer owns the job.
    """
    values = {"status": status, "finished_at": utcnow(), "message": message, "error": error,
              "solver_status": solver_status}
    if cross_validation is not None:
        values["cross_validation"] = cross_validation
    if result is not None:
        values.update(result=result, rows_done=rows_done, rows_total=rows_total)
    updated = session.execute(
        update(Job).where(*_owned(job_id, attempt)).values(**values)
    ).rowcount
    if updated != 1:
        session.rollback()
        return False
    if model is not None:
        # the model belongs to whoever owns its job (tenants: app.core.security), and has
        # the job's tags as they are now (app.tags)
        model.owner, model_name, tags = session.execute(
            select(Job.owner, Job.model_name, Job.tags).where(Job.id == job_id)).one()
        model.tags = dict(tags or {})
        if model_name is None:
            session.add(model)
        else:  # the next version of the named model, in this transaction (no gaps)
            register_version(session, model, model_name, created_by=model.owner)
    session.commit()
    return True


def mark_started(session: Session, job_id: uuid.UUID, attempt: int,
                 where: str) -> tuple[bool, str | None]:
    """Record, in the job's message, where an attempt started (``where``), once.

    A cluster may run one submission twice (Dask reschedules the task of a worker that died
    on another worker); the second run must not start the attempt again but report the first
    one lost.  The claim clears ``message``, so the first run of an attempt finds it empty.
    Returns (whether this run owns the start, the message of the run that already started it
    -- None when the attempt no longer owns the job, or when this run started it).
    """
    started = session.execute(
        update(Job).where(*_owned(job_id, attempt), Job.message.is_(None))
        .values(message=where, heartbeat_at=utcnow())
    ).rowcount
    if started == 1:
        session.commit()
        return True, None
    row = session.execute(
        select(Job.status, Job.attempts, Job.message).where(Job.id == job_id)).first()
    session.rollback()
    if row is None or row.status != JobStatus.running or row.attempts != attempt:
        return False, None
    return False, row.message


def retry_or_fail(session: Session, job_id: uuid.UUID, attempt: int, max_attempts: int,
                  reason: str) -> JobStatus | None:
    """Settle an attempt whose executor lost it (a cluster worker died under it): the job goes
    back to the queue while it has attempts left, is cancelled when a cancel was requested,
    and fails with ``reason`` otherwise.  Returns the state written (None: the attempt no
    longer owned the job)."""
    row = session.execute(
        select(Job.cancel_requested_at).where(*_owned(job_id, attempt))).first()
    if row is None:
        session.rollback()
        return None
    now = utcnow()
    if row.cancel_requested_at is not None:
        values = dict(status=JobStatus.cancelled, finished_at=now,
                      message=f"cancelled by request; {reason}")
    elif attempt < max_attempts:
        values = dict(status=JobStatus.queued, started_at=None,
                      message=f"re-queued: {reason} (attempt {attempt} of {max_attempts})")
    else:
        values = dict(status=JobStatus.failed, finished_at=now, message=None,
                      error=f"{reason} (attempt {attempt} of {max_attempts})")
    updated = session.execute(
        update(Job).where(*_owned(job_id, attempt)).values(heartbeat_at=None, **values)
    ).rowcount
    session.commit()
    return values["status"] if updated == 1 else None


LOG_DELETE_BATCH = 5000
"""Log records deleted per transaction when a job is deleted (short write locks on SQLite)."""


def delete_finished_job(sessions, job_id: uuid.UUID, batch: int = LOG_DELETE_BATCH) -> None:
    """Delete a finished job: its log in batches of ``batch`` records, each its own short
    write transaction (a log of millions of records never holds SQLite's write lock for
    long), then the row (its model stays, without a job).  Finished jobs get no new records,
    so the batches cannot race with a writer."""
    while True:
        with sessions.write() as session:
            cutoff = session.scalar(
                select(JobLogEntry.iteration).where(JobLogEntry.job_id == job_id)
                .order_by(JobLogEntry.iteration).offset(batch - 1).limit(1))
            if cutoff is None:
                session.execute(delete(JobLogEntry).where(JobLogEntry.job_id == job_id))
                session.execute(delete(Job).where(Job.id == job_id))
                session.commit()
                return
            session.execute(delete(JobLogEntry).where(JobLogEntry.job_id == job_id,
                                                      JobLogEntry.iteration <= cutoff))
            session.commit()


def request_cancel(session: Session, job: Job) -> None:
    """Cancel a queued job at once; flag a running one for its worker to stop.

    The caller checks that the job has not finished.  Conditional updates settle the races
    with the dispatcher claiming the job and the worker finishing it.
    """
    now = utcnow()
    cancelled = session.execute(
        update(Job).where(Job.id == job.id, Job.status == JobStatus.queued).values(
            status=JobStatus.cancelled, cancel_requested_at=now, finished_at=now,
            message="cancelled before it started")
    ).rowcount
    if not cancelled:
        session.execute(
            update(Job).where(Job.id == job.id, Job.status == JobStatus.running,
                              Job.cancel_requested_at.is_(None))
            .values(cancel_requested_at=now))
    session.commit()
    session.refresh(job)


def renew_leases(session: Session, attempts: Sequence[tuple[uuid.UUID, int]]) -> None:
    """Renew the leases of these running attempts (those they still own)."""
    now = utcnow()
    for job_id, attempt in attempts:
        session.execute(update(Job).where(*_owned(job_id, attempt)).values(heartbeat_at=now))
    session.commit()


def release_leases(session: Session, attempts: Sequence[tuple[uuid.UUID, int]]) -> None:
    """Give up the leases of these attempts at once (a clean shutdown stops their workers):
    the next recovery, by this service or another, takes the jobs back without waiting."""
    for job_id, attempt in attempts:
        session.execute(update(Job).where(*_owned(job_id, attempt)).values(heartbeat_at=None))
    session.commit()


def _lease_expired(lease_s: float | None):
    if lease_s is None:
        return True
    cutoff = utcnow() - timedelta(seconds=lease_s)
    return or_(Job.heartbeat_at.is_(None), Job.heartbeat_at < cutoff)


def recover_interrupted_jobs(session: Session, max_attempts: int,
                             lease_s: float | None = None) -> tuple[int, int, int]:
    """Settle the ``running`` jobs whose lease expired (all of them when ``lease_s`` is
    None): at start-up, those a previous service process left; later, those of a service
    process (or worker) that died.

    A job whose cancellation was already requested becomes ``cancelled``; one with attempts
    left goes back to the queue; the others fail with the reason.  Returns the numbers
    (re-queued, cancelled, failed).
    """
    now = utcnow()
    counts = {JobStatus.queued: 0, JobStatus.cancelled: 0, JobStatus.failed: 0}
    rows = session.execute(
        select(Job.id, Job.attempts, Job.cancel_requested_at)
        .where(Job.status == JobStatus.running, _lease_expired(lease_s))).all()
    for row in rows:
        if row.cancel_requested_at is not None:
            values = dict(status=JobStatus.cancelled, finished_at=now,
                          message="cancelled (the service stopped while the job was "
                                  "being cancelled)")
        elif row.attempts < max_attempts:
            values = dict(status=JobStatus.queued, started_at=None,
                          message=f"re-queued: attempt {row.attempts} was interrupted by a "
                                  f"service restart")
        else:
            values = dict(status=JobStatus.failed, finished_at=now, message=None,
                          error=f"interrupted by a service restart during attempt "
                                f"{row.attempts} of {max_attempts}")
        settled = session.execute(
            update(Job).where(*_owned(row.id, row.attempts), _lease_expired(lease_s))
            .values(heartbeat_at=None, **values)).rowcount
        counts[values["status"]] += settled
    session.commit()
    return counts[JobStatus.queued], counts[JobStatus.cancelled], counts[JobStatus.failed]
