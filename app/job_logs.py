"""A job's convergence log as the API serves it: pages, a down-sampled view for plots, CSV,
and several jobs' logs side by side (the dashboard's comparison of solvers on one problem).

The queries are the query layer's (:mod:`app.crud.jobs`); this module shapes what they return.
Whole-log reads go ``READ_BATCH`` records at a time, each batch in its own short session, so
a long log never holds a transaction open.
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from collections.abc import Iterable, Iterator

from sqlalchemy.orm import Session

from app.core.principals import Principal
from app.crud import jobs as crud_jobs
from app.db.session import Sessions
from app.downsample import sample_rows
from app.schemas import JobLogPublic, JobLogSeries, JobLogsPublic, JobPublic, LogRecordPublic

READ_BATCH = 5000
"""Records read per query (and written per chunk of a CSV download)."""

CSV_COLUMNS = ("iteration", "elapsed", "objective", "optimality", "extras")


def page(session: Session, job_id: uuid.UUID, after: int, limit: int) -> JobLogPublic:
    """Up to ``limit`` records after iteration ``after``, oldest first."""
    rows, count, has_more = crud_jobs.log_page(session, job_id, after, limit)
    return JobLogPublic(data=[LogRecordPublic.from_row(r) for r in rows], count=count,
                        has_more=has_more)


def _all_rows(sessions: Sessions, job_id: uuid.UUID, after: int) -> list:
    return [row for batch in crud_jobs.log_batches(sessions, job_id, after, READ_BATCH)
            for row in batch]


def sampled(sessions: Sessions, job_id: uuid.UUID, after: int, points: int) -> JobLogPublic:
    """Every record after ``after`` down-sampled to at most ``points`` (``has_more`` false,
    ``count`` the records stored)."""
    rows = sample_rows(_all_rows(sessions, job_id, after), points)
    with sessions.read() as session:
        count = crud_jobs.log_count(session, job_id)
    return JobLogPublic(data=[LogRecordPublic.from_row(r) for r in rows], count=count,
                        has_more=False)


def csv_text(sessions: Sessions, job_id: uuid.UUID, after: int,
             points: int | None) -> Iterator[str]:
    """The log after ``after`` as CSV (down-sampled to ``points`` records when given), one
    chunk per batch of records."""
    if points is not None:
        batches: Iterable[list] = [sample_rows(_all_rows(sessions, job_id, after), points)]
    else:
        batches = crud_jobs.log_batches(sessions, job_id, after, READ_BATCH)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for rows in batches:
        for row in rows:
            writer.writerow((row.iteration, repr(row.elapsed), _number(row.objective),
                             _number(row.optimality), json.dumps(row.extras, sort_keys=True)))
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()


def _number(value: float | None) -> str:
    return "" if value is None else repr(value)


def compare(sessions: Sessions, job_ids: Iterable[uuid.UUID], points: int,
            principal: Principal) -> JobLogsPublic:
    """Several jobs' logs, each down-sampled to at most ``points`` records, with each job's
    lowest objective, the lowest of them all and whether they all solve one problem; a job
    that does not exist (for ``principal``) is an :class:`InvalidRequest` naming it."""
    series = []
    for job_id in dict.fromkeys(job_ids):
        with sessions.read() as session:
            job = crud_jobs.get(session, job_id, principal, field="job_id")
            public = JobPublic.from_row(job)
        rows = _all_rows(sessions, job_id, 0)
        objectives = [row.objective for row in rows if row.objective is not None]
        series.append(JobLogSeries(
            job=public, data=[LogRecordPublic.from_row(r) for r in sample_rows(rows, points)],
            count=len(rows), best_objective=min(objectives) if objectives else None))
    bests = [s.best_objective for s in series if s.best_objective is not None]
    keys = {s.job.problem_key for s in series}
    return JobLogsPublic(data=series, count=len(series),
                         best_objective=min(bests) if bests else None,
                         same_problem=len(keys) == 1 and None not in keys)
