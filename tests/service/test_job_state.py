"""The job state machine on a real database: claims, fencing by attempt, cancel, recovery."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from app.db.migrate import current_revision, head_revision, upgrade_database
from app.db.models import Dataset, Job, JobLogEntry, JobStatus, utcnow
from app.db.session import Sessions, create_db_engine
from app.jobs.state import (
    Signal,
    check_in,
    claim_next_job,
    finish_job,
    has_queued_jobs,
    record_progress,
    recover_interrupted_jobs,
    request_cancel,
    set_running_message,
)


@pytest.fixture
def sessions(backend, tmp_path):
    engine = create_db_engine(backend.database_url(tmp_path))
    assert current_revision(engine) is None
    assert upgrade_database(engine) == head_revision() == current_revision(engine)
    yield Sessions(engine)
    engine.dispose()


@pytest.fixture
def dataset_id(sessions):
    with sessions.write() as session:
        dataset = Dataset(name="d", sha256="0" * 64, n_samples=1, n_features=1, nnz=1,
                          density=1.0, class_counts={"1": 1}, has_qid=False,
                          has_sample_weight=False, upload_bytes=1, stored_bytes=1)
        session.add(dataset)
        session.commit()
        return dataset.id


def add_job(sessions, dataset_id, age_s: float = 0.0, **fields) -> Job:
    with sessions.write() as session:
        job = Job(dataset_id=dataset_id, solver="mfn", params={"solver": "mfn"},
                  created_at=utcnow() - timedelta(seconds=age_s), **fields)
        session.add(job)
        session.commit()
        return job


def reload(sessions, job: Job) -> Job:
    with sessions.read() as session:
        return session.get(Job, job.id)


def record(iteration: int) -> dict:
    return {"iteration": iteration, "elapsed": 0.1 * iteration, "objective": 10.0 / iteration,
            "optimality": None, "extras": {"k": iteration}}


def test_claims_take_the_oldest_queued_job_and_count_attempts(sessions, dataset_id):
    newer = add_job(sessions, dataset_id, age_s=1)
    older = add_job(sessions, dataset_id, age_s=5)
    with sessions.read() as session:
        assert has_queued_jobs(session)
    with sessions.write() as session:
        first = claim_next_job(session)
        second = claim_next_job(session)
        assert claim_next_job(session) is None
        assert not has_queued_jobs(session)
    assert (first.job_id, first.attempt) == (older.id, 1)
    assert second.job_id == newer.id
    claimed = reload(sessions, older)
    assert claimed.status == JobStatus.running and claimed.started_at is not None


def test_writes_are_fenced_by_the_attempt(sessions, dataset_id):
    job = add_job(sessions, dataset_id)
    with sessions.write() as session:
        claim = claim_next_job(session)
    with sessions.write() as session:
        assert record_progress(session, job.id, 1, [record(1), record(2)]) is Signal.proceed
    with sessions.write() as session:  # a restart re-queues the job; attempt 2 starts
        recover_interrupted_jobs(session, max_attempts=2)
        assert claim_next_job(session).attempt == 2
    with sessions.read() as session:
        assert session.scalar(select(func.count()).select_from(JobLogEntry)) == 0
        assert check_in(session, job.id, claim.attempt) is Signal.lost
    with sessions.write() as session:  # the first attempt's worker is an orphan now
        assert record_progress(session, job.id, 1, [record(3)]) is Signal.lost
        assert not finish_job(session, job.id, 1, JobStatus.succeeded, message="stale")
        assert record_progress(session, job.id, 2, [record(1)]) is Signal.proceed
        assert finish_job(session, job.id, 2, JobStatus.succeeded, message="done")
    done = reload(sessions, job)
    assert (done.status, done.message, done.iteration, done.attempts) == (
        JobStatus.succeeded, "done", 1, 2)


def test_cancel_a_queued_job_at_once_and_flag_a_running_one(sessions, dataset_id):
    queued = add_job(sessions, dataset_id, age_s=1)
    running = add_job(sessions, dataset_id, age_s=2)
    with sessions.write() as session:
        claim = claim_next_job(session)
        assert claim.job_id == running.id
        request_cancel(session, session.get(Job, queued.id))
        request_cancel(session, session.get(Job, running.id))
    assert reload(sessions, queued).status == JobStatus.cancelled
    assert reload(sessions, running).status == JobStatus.running
    with sessions.read() as session:
        assert check_in(session, running.id, claim.attempt) is Signal.cancel
    with sessions.write() as session:
        assert record_progress(session, running.id, claim.attempt, [record(1)]) is Signal.cancel
        assert claim_next_job(session) is None  # the cancelled job is never dispatched


def test_recovery_after_a_restart(sessions, dataset_id):
    first_attempt = add_job(sessions, dataset_id, status=JobStatus.running, attempts=1)
    last_attempt = add_job(sessions, dataset_id, status=JobStatus.running, attempts=2)
    being_cancelled = add_job(sessions, dataset_id, status=JobStatus.running, attempts=1,
                              cancel_requested_at=utcnow())
    queued = add_job(sessions, dataset_id)
    with sessions.write() as session:
        assert recover_interrupted_jobs(session, max_attempts=2) == (1, 1, 1)
    requeued = reload(sessions, first_attempt)
    assert requeued.status == JobStatus.queued
    assert requeued.message == "re-queued: attempt 1 was interrupted by a service restart"
    failed = reload(sessions, last_attempt)
    assert failed.status == JobStatus.failed
    assert failed.error == "interrupted by a service restart during attempt 2 of 2"
    assert reload(sessions, being_cancelled).status == JobStatus.cancelled
    assert reload(sessions, queued).status == JobStatus.queued


def test_a_requeued_job_does_not_keep_its_requeued_message(sessions, dataset_id):
    """Regression: a job re-queued by one restart and failed by the next (or by its worker)
    kept the stale "re-queued: ..." message."""
    interrupted = add_job(sessions, dataset_id, status=JobStatus.running, attempts=1)
    with sessions.write() as session:
        recover_interrupted_jobs(session, max_attempts=2)
    assert reload(sessions, interrupted).message.startswith("re-queued")
    with sessions.write() as session:
        claim = claim_next_job(session)
    assert reload(sessions, interrupted).message is None  # running again: no stale message
    with sessions.write() as session:
        recover_interrupted_jobs(session, max_attempts=2)  # interrupted again, no attempt left
    failed = reload(sessions, interrupted)
    assert claim.attempt == 2 and failed.status == JobStatus.failed
    assert failed.message is None
    assert failed.error == "interrupted by a service restart during attempt 2 of 2"


def test_recovery_takes_back_only_jobs_whose_lease_expired(sessions, dataset_id):
    """Two services on one database: a job whose lease its owner renews is not taken back."""
    from app.jobs.state import release_leases, renew_leases

    live = add_job(sessions, dataset_id, status=JobStatus.running, attempts=1,
                   heartbeat_at=utcnow() - timedelta(seconds=5))
    stale = add_job(sessions, dataset_id, status=JobStatus.running, attempts=1,
                    heartbeat_at=utcnow() - timedelta(seconds=60))
    never = add_job(sessions, dataset_id, status=JobStatus.running, attempts=1)
    released = add_job(sessions, dataset_id, status=JobStatus.running, attempts=1,
                       heartbeat_at=utcnow())
    with sessions.write() as session:
        release_leases(session, [(released.id, 1)])
        renew_leases(session, [(live.id, 1), (stale.id, 2)])  # attempt 2 does not own it
        assert recover_interrupted_jobs(session, max_attempts=2, lease_s=30) == (3, 0, 0)
    assert reload(sessions, live).status == JobStatus.running
    for job in (stale, never, released):
        assert reload(sessions, job).status == JobStatus.queued
        assert reload(sessions, job).heartbeat_at is None
    with sessions.write() as session:
        claim = claim_next_job(session)
    assert reload(sessions, Job(id=claim.job_id)).heartbeat_at is not None  # leased at claim
    with sessions.write() as session:
        record_progress(session, claim.job_id, claim.attempt, [record(1)])
    assert reload(sessions, Job(id=claim.job_id)).heartbeat_at > utcnow() - timedelta(seconds=5)


def test_a_running_attempt_says_what_it_does_before_its_solver_starts(sessions, dataset_id):
    """A worker compiling the solver's kernels says so in the job's message, fenced by the
    attempt like every write, and clears it when training starts."""
    job = add_job(sessions, dataset_id)
    with sessions.write() as session:
        claim_next_job(session)
    compiling = "compiling the kernels of alm (the first job on this machine)"
    with sessions.write() as session:
        set_running_message(session, job.id, 2, "a stale attempt")  # not the running one
        set_running_message(session, job.id, 1, compiling)
    assert reload(sessions, job).message == compiling
    with sessions.write() as session:
        set_running_message(session, job.id, 1, None)
    running = reload(sessions, job)
    assert running.status == JobStatus.running and running.message is None
