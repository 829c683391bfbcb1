"""The dispatcher: one thread in the web process that feeds an executor
(:class:`~app.jobs.executors.interface.Executor`; by default the local process pool,
:class:`~app.jobs.executors.local.ProcessExecutor`).

It loops on the executor's ``wait`` (which also returns when the wake-up pipe is poked: a job
was created or a cancel requested) and at least every :data:`TICK_S`

* claims the oldest ``queued`` job from the database for each idle slot and submits it;
* notices cancel requests of running jobs and gives them ``cancel_grace_s`` to stop
  cooperatively (the monitor sees the flag within 0.2 s), then has the executor kill them; a
  job past its time limit by more than the grace is killed the same way;
* settles the jobs of attempts the executor reports ended (their worker died or was killed):
  failed with the reason ("worker process died (exit code -9)"), or cancelled; an attempt a
  cluster lost (``Ended.retry``: its Dask worker died) is re-queued while the job has attempts
  left;
* renews the leases of the jobs its executor runs (every third of ``lease_s``) and takes back
  the running jobs whose lease expired (every half), whichever service ran them.

The database stays the source of truth: the dispatcher holds only which slot runs which
attempt, and every write it makes is fenced by that attempt (``app.jobs.state``).
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from typing import Protocol

from sqlalchemy import select

from app.core.config import Settings
from app.db.models import Job, JobStatus
from app.db.session import Sessions
from app.jobs.executors import Assignment, Ended, Executor, WorkerInfo, create_executor
from app.jobs.state import (
    claim_next_job,
    finish_job,
    has_queued_jobs,
    recover_interrupted_jobs,
    release_leases,
    renew_leases,
    retry_or_fail,
)
from app.metrics import ServiceMetrics

logger = logging.getLogger("svmsvc.pool")

TICK_S = 0.5
"""Longest the dispatcher sleeps between looks at the queue and the deadlines."""

STOP_TIMEOUT_S = 5.0

__all__ = ["Dispatcher", "WorkerInfo", "TICK_S"]


class WakeSource(Protocol):
    """What the dispatcher waits on besides its executor (``fileno``), pokes to wake itself
    (``poke``: at most one pending) and drains after waking.  By default a pipe in its own
    process; several web processes use a socket the others can reach
    (:class:`app.web_processes.WakeSocket`)."""

    def fileno(self) -> int: ...

    def poke(self) -> None: ...

    def drain(self) -> None: ...

    def close(self) -> None: ...


class _PipeWake:
    """The wake of a dispatcher only its own process wakes."""

    def __init__(self):
        self._reader, self._writer = multiprocessing.get_context("spawn").Pipe(duplex=False)

    def fileno(self) -> int:
        return self._reader.fileno()

    def poke(self) -> None:
        self._writer.send_bytes(b"")

    def drain(self) -> None:
        if self._reader.poll():
            self._reader.recv_bytes()

    def close(self) -> None:
        self._reader.close()
        self._writer.close()


class Dispatcher:
    """The dispatcher thread and the executor it feeds (the routes' view of job execution:
    ``wake()``, ``snapshot()``, ``dispatching``)."""

    def __init__(self, settings: Settings, sessions: Sessions, metrics: ServiceMetrics,
                 executor: Executor | None = None, wake_socket: WakeSource | None = None):
        self._settings = settings
        self._sessions = sessions
        self._metrics = metrics
        self.executor = executor if executor is not None else create_executor(settings, metrics)
        self._stopping = threading.Event()
        self._wake = wake_socket if wake_socket is not None else _PipeWake()
        self._wake_lock = threading.Lock()
        self._wake_pending = False
        self._thread: threading.Thread | None = None
        self._next_renewal = 0.0
        self._next_recovery = time.monotonic() + settings.lease_s / 2

    # -- life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Start the executor and the dispatcher thread."""
        self.executor.start()
        self._thread = threading.Thread(target=self._run, name="svmsvc-dispatcher",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the dispatcher and the executor; the attempts still running release their
        leases, so the next start (or another service) takes their jobs back at once."""
        self._stopping.set()
        self.wake()
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)
        running = self.executor.stop()
        if running:
            try:
                with self._sessions.write() as session:
                    release_leases(session, [(a.job_id, a.attempt) for a in running])
            except Exception:  # the database is gone: the leases expire by themselves
                logger.exception("could not release the leases of %d job(s)", len(running))
        self._wake.close()
        logger.info("worker pool stopped")

    def wake(self) -> None:
        """Make the dispatcher look at the database now (a job was queued or cancelled)."""
        with self._wake_lock:
            if self._wake_pending:
                return
            try:
                self._wake.poke()
                self._wake_pending = True
            except OSError:
                pass  # stopped

    # -- inspection ------------------------------------------------------------------------
    def snapshot(self) -> list[WorkerInfo]:
        """The executor's slots as they are now."""
        return self.executor.snapshot()

    @property
    def dispatching(self) -> bool:
        """Whether the dispatcher thread runs."""
        return self._thread is not None and self._thread.is_alive()

    # -- the dispatcher --------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._dispatch()
                for ended in self.executor.wait(TICK_S, self._wake):
                    self._settle_ended(ended)
                self._drain_wake()
                if self._stopping.is_set():
                    break
                self._enforce_deadlines()
                self._keep_leases()
            except Exception:  # the database may be briefly unreachable: keep dispatching
                logger.exception("dispatcher error; retrying")
                self._stopping.wait(TICK_S)

    def _drain_wake(self) -> None:
        with self._wake_lock:
            self._wake.drain()
            self._wake_pending = False

    def _dispatch(self) -> None:
        idle = self.executor.idle()
        if not idle:
            return
        with self._sessions.read() as session:
            if not has_queued_jobs(session):
                return
        for _ in range(idle):
            with self._sessions.write() as session:
                claim = claim_next_job(session)
            if claim is None:
                return
            self.executor.submit(claim)

    def _settle_ended(self, ended: Ended) -> None:
        assignment, grace = ended.assignment, self._settings.cancel_grace_s
        if ended.retry:
            with self._sessions.write() as session:
                written = retry_or_fail(session, assignment.job_id, assignment.attempt,
                                        self._settings.max_attempts, ended.reason)
            logger.warning("job %s attempt %d: %s -> %s", assignment.job_id,
                           assignment.attempt, ended.reason, written or "lost")
            if written is JobStatus.queued:
                self.wake()
            elif written is not None:
                self._metrics.jobs_finished.labels(status=str(written)).inc()
            return
        if assignment.killed_for == "cancel":
            status, fields = JobStatus.cancelled, {
                "message": f"cancelled by request; the worker did not stop within {grace:g} s "
                           f"and was killed"}
        elif assignment.killed_for == "time_limit":
            status, fields = JobStatus.failed, {
                "error": f"time limit of {assignment.time_limit_s:g} s reached; the worker "
                         f"did not stop within {grace:g} s and was killed"}
        else:
            status, fields = JobStatus.failed, {
                "error": f"worker process died (exit code {ended.exit_code})"}
        if ended.reason is not None:
            fields = {key: ended.reason for key in fields}
        with self._sessions.write() as session:
            written = finish_job(session, assignment.job_id, assignment.attempt, status,
                                 **fields)
        if written:
            self._metrics.jobs_finished.labels(status=str(status)).inc()

    def _keep_leases(self) -> None:
        now = time.monotonic()
        lease_s = self._settings.lease_s
        if now >= self._next_renewal:
            self._next_renewal = now + lease_s / 3
            alive = [(a.job_id, a.attempt) for a in self.executor.running()
                     if a.killed_for is None]
            if alive:
                with self._sessions.write() as session:
                    renew_leases(session, alive)
        if now >= self._next_recovery:
            self._next_recovery = now + lease_s / 2
            with self._sessions.read() as session:
                if not session.scalar(select(Job.id).where(
                        Job.status == JobStatus.running).limit(1)):
                    return  # nothing running anywhere: no write lock needed
            with self._sessions.write() as session:
                counts = recover_interrupted_jobs(session, self._settings.max_attempts,
                                                  lease_s)
            if any(counts):
                logger.warning("jobs whose lease expired (their service or worker is gone): "
                               "%d re-queued, %d cancelled, %d failed", *counts)
                self.wake()

    def _enforce_deadlines(self) -> None:
        busy: list[Assignment] = self.executor.running()
        if not busy:
            return
        now = time.monotonic()
        grace = self._settings.cancel_grace_s
        unflagged = [a.job_id for a in busy if a.cancel_deadline is None]
        if unflagged:
            with self._sessions.read() as session:
                flagged = set(session.scalars(
                    select(Job.id).where(Job.id.in_(unflagged),
                                         Job.cancel_requested_at.is_not(None))))
            for assignment in busy:
                if assignment.job_id in flagged:
                    assignment.cancel_deadline = now + grace
        for assignment in busy:
            if assignment.killed_for is not None:
                continue
            if assignment.cancel_deadline is not None and now > assignment.cancel_deadline:
                assignment.killed_for = "cancel"
            elif (assignment.time_limit_s is not None
                  and now > assignment.started + assignment.time_limit_s + grace):
                assignment.killed_for = "time_limit"
            else:
                continue
            self.executor.kill(assignment)
