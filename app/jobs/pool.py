"""The local worker pool: N spawned worker processes and the dispatcher thread that feeds them.

The dispatcher (one thread in the web process) loops on
``multiprocessing.connection.wait`` over the workers' pipes, their process sentinels and a
wake-up pipe (poked when a job is created or a cancel requested), and at least every
:data:`TICK_S` it

* claims the oldest ``queued`` job from the database for each idle, warmed-up worker;
* notices cancel requests of running jobs and gives their workers ``cancel_grace_s`` to stop
  cooperatively (the monitor sees the flag within 0.2 s), then kills them; a job past its
  time limit by more than the grace is killed the same way;
* notices workers that died: their job fails with the reason ("worker process died (exit code
  -9)") or, if it was being cancelled, is cancelled; a replacement worker is started;
* renews the leases of the jobs its live workers run (every third of ``lease_s``) and takes
  back the running jobs whose lease expired (every half), whichever service ran them.

The database stays the source of truth: the dispatcher holds only which worker runs which
attempt, and every write it makes is fenced by that attempt (``app.jobs.state``).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait

from sqlalchemy import select

from app.core.config import Settings
from app.db.models import Job, JobStatus
from app.db.session import Sessions
from app.jobs.state import (
    claim_next_job,
    finish_job,
    has_queued_jobs,
    recover_interrupted_jobs,
    release_leases,
    renew_leases,
)
from app.jobs.worker import WorkerConfig, worker_main
from app.metrics import ServiceMetrics

logger = logging.getLogger("svmsvc.pool")

TICK_S = 0.5
"""Longest the dispatcher sleeps between looks at the queue and the deadlines."""

RESPAWN_DELAY_S = 1.0
"""Pause before replacing a worker that died before it was ever ready; it doubles with each
such death in a row (a worker that cannot start), up to :data:`MAX_RESPAWN_DELAY_S`."""

MAX_RESPAWN_DELAY_S = 60.0

STOP_TIMEOUT_S = 5.0


@dataclass
class Assignment:
    """The job attempt a worker is running, as the dispatcher tracks it."""

    job_id: uuid.UUID
    attempt: int
    time_limit_s: float | None
    started: float = field(default_factory=time.monotonic)
    cancel_deadline: float | None = None
    killed_for: str | None = None  # "cancel" or "time_limit" once the dispatcher killed it


@dataclass
class WorkerHandle:
    """A worker process as the dispatcher tracks it."""

    index: int
    process: multiprocessing.process.BaseProcess
    connection: Connection
    ready: bool = False
    assignment: Assignment | None = None


@dataclass(frozen=True)
class WorkerInfo:
    """A snapshot of one worker for health checks and metrics."""

    index: int
    pid: int | None
    alive: bool
    ready: bool
    job_id: uuid.UUID | None


class WorkerPool:
    """N long-lived worker processes (spawned, never forked) and their dispatcher thread."""

    def __init__(self, settings: Settings, sessions: Sessions, metrics: ServiceMetrics):
        self._settings = settings
        self._sessions = sessions
        self._metrics = metrics
        self._context = multiprocessing.get_context("spawn")
        self._workers: list[WorkerHandle] = []
        self._respawn_at: dict[int, float] = {}
        self._failed_starts: dict[int, int] = {}  # deaths before ready, in a row, per slot
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._wake_reader, self._wake_writer = self._context.Pipe(duplex=False)
        self._wake_lock = threading.Lock()
        self._wake_pending = False
        self._thread: threading.Thread | None = None
        self._next_renewal = 0.0
        self._next_recovery = time.monotonic() + settings.lease_s / 2

    # -- life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Start the workers and the dispatcher thread."""
        for index in range(self._settings.workers):
            self._workers.append(self._spawn(index))
        self._thread = threading.Thread(target=self._run, name="svmsvc-dispatcher",
                                        daemon=True)
        self._thread.start()
        logger.info("worker pool started: %d workers, %d Numba threads each",
                    self._settings.workers, self._settings.worker_threads)

    def stop(self) -> None:
        """Stop the dispatcher and the workers (jobs still running are left ``running``;
        the next start re-queues them)."""
        self._stopping.set()
        self.wake()
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)
        with self._lock:
            workers = list(self._workers)
        running = [(w.assignment.job_id, w.assignment.attempt) for w in workers
                   if w.assignment is not None]
        if running:
            try:
                with self._sessions.write() as session:
                    release_leases(session, running)
            except Exception:  # the database is gone: the leases expire by themselves
                logger.exception("could not release the leases of %d job(s)", len(running))
        for worker in workers:
            if worker.assignment is None and worker.process.is_alive():
                try:
                    worker.connection.send(None)
                except OSError:
                    pass
            else:
                worker.process.terminate()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for worker in workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.connection.close()
        self._wake_reader.close()
        self._wake_writer.close()
        logger.info("worker pool stopped")

    def wake(self) -> None:
        """Make the dispatcher look at the database now (a job was queued or cancelled)."""
        with self._wake_lock:
            if self._wake_pending:
                return
            try:
                self._wake_writer.send_bytes(b"")
                self._wake_pending = True
            except OSError:
                pass  # stopped

    # -- inspection ------------------------------------------------------------------------
    def snapshot(self) -> list[WorkerInfo]:
        """The workers as they are now."""
        with self._lock:
            infos = []
            for w in self._workers:
                alive = w.process.is_alive()  # a dead worker is never ready, reaped or not
                infos.append(WorkerInfo(w.index, w.process.pid, alive, w.ready and alive,
                                        w.assignment.job_id if w.assignment else None))
            return infos

    @property
    def dispatching(self) -> bool:
        """Whether the dispatcher thread runs."""
        return self._thread is not None and self._thread.is_alive()

    # -- the dispatcher --------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._dispatch()
                self._wait(TICK_S)
                if self._stopping.is_set():
                    break
                self._enforce_deadlines()
                self._respawn()
                self._keep_leases()
            except Exception:  # the database may be briefly unreachable: keep dispatching
                logger.exception("dispatcher error; retrying")
                self._stopping.wait(TICK_S)

    def _spawn(self, index: int) -> WorkerHandle:
        config = WorkerConfig(
            index=index,
            database_url=self._settings.sqlalchemy_url,
            datasets_dir=self._settings.datasets_dir.resolve(),
            threads=self._settings.worker_threads,
            log_level=self._settings.log_level,
        )
        # A spawned worker imports NumPy (and so loads BLAS, which reads its thread count once)
        # while unpickling its arguments, before worker_main runs: the limit has to travel in
        # the environment the child inherits.  The web process's own BLAS is already loaded.
        for variable in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[variable] = str(config.threads)
        parent_end, child_end = self._context.Pipe()
        process = self._context.Process(target=worker_main, args=(config, child_end),
                                        name=f"svmsvc-worker-{index}", daemon=True)
        process.start()
        child_end.close()
        logger.info("worker %d started (pid %d)", index, process.pid)
        return WorkerHandle(index, process, parent_end)

    def _dispatch(self) -> None:
        idle = [w for w in self._workers
                if w.ready and w.assignment is None and w.process.is_alive()]
        if not idle:
            return
        with self._sessions.read() as session:
            if not has_queued_jobs(session):
                return
        for worker in idle:
            with self._sessions.write() as session:
                claim = claim_next_job(session)
            if claim is None:
                return
            with self._lock:
                worker.assignment = Assignment(claim.job_id, claim.attempt, claim.time_limit_s)
            try:
                worker.connection.send(("run", str(claim.job_id), claim.attempt))
            except OSError:
                pass  # it just died: _worker_exited fails the job
            logger.info("job %s attempt %d -> worker %d", claim.job_id, claim.attempt,
                        worker.index)

    def _wait(self, timeout: float) -> None:
        by_connection = {w.connection: w for w in self._workers}
        by_sentinel = {w.process.sentinel: w for w in self._workers}
        ready = wait([self._wake_reader, *by_connection, *by_sentinel], timeout)
        if self._wake_reader in ready:
            with self._wake_lock:
                self._wake_reader.recv_bytes()
                self._wake_pending = False
        for connection in ready:
            worker = by_connection.get(connection)
            if worker is not None:
                self._receive(worker)
        for sentinel in ready:
            worker = by_sentinel.get(sentinel)
            if worker is not None:
                self._worker_exited(worker)

    def _receive(self, worker: WorkerHandle) -> None:
        try:
            while worker.connection.poll():
                message = worker.connection.recv()
                if message[0] == "ready":
                    with self._lock:
                        worker.ready = True
                    self._failed_starts.pop(worker.index, None)
                    logger.info("worker %d ready (pid %d)", worker.index, message[1])
                elif message[0] == "done":
                    _, job_id, status = message
                    with self._lock:
                        worker.assignment = None
                    if status is not None:
                        self._metrics.jobs_finished.labels(status=status).inc()
        except (EOFError, OSError):
            pass  # the process ended; its sentinel reports it

    def _worker_exited(self, worker: WorkerHandle) -> None:
        worker.process.join()
        exit_code = worker.process.exitcode
        assignment = worker.assignment
        if assignment is not None:
            self._settle_killed_job(assignment, exit_code)
        reason = "killed" if assignment is not None and assignment.killed_for else "crashed"
        logger.warning("worker %d (pid %d) exited with code %s%s", worker.index,
                       worker.process.pid, exit_code,
                       f" while running job {assignment.job_id}" if assignment else "")
        self._metrics.worker_restarts.labels(reason=reason).inc()
        worker.connection.close()
        if worker.ready:
            delay = 0.0
        else:
            failures = self._failed_starts.get(worker.index, 0)
            self._failed_starts[worker.index] = failures + 1
            delay = min(MAX_RESPAWN_DELAY_S, RESPAWN_DELAY_S * 2**failures)
            logger.error("worker %d died before it was ready; next start in %g s",
                         worker.index, delay)
        with self._lock:
            self._workers.remove(worker)
        self._respawn_at[worker.index] = time.monotonic() + delay

    def _settle_killed_job(self, assignment: Assignment, exit_code: int | None) -> None:
        grace = self._settings.cancel_grace_s
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
                "error": f"worker process died (exit code {exit_code})"}
        with self._sessions.write() as session:
            written = finish_job(session, assignment.job_id, assignment.attempt, status,
                                 **fields)
        if written:
            self._metrics.jobs_finished.labels(status=str(status)).inc()

    def _respawn(self) -> None:
        now = time.monotonic()
        for index, when in sorted(self._respawn_at.items()):
            if when <= now and not self._stopping.is_set():
                del self._respawn_at[index]
                worker = self._spawn(index)
                with self._lock:
                    self._workers.append(worker)
                    self._workers.sort(key=lambda w: w.index)

    def _keep_leases(self) -> None:
        now = time.monotonic()
        lease_s = self._settings.lease_s
        if now >= self._next_renewal:
            self._next_renewal = now + lease_s / 3
            alive = [(w.assignment.job_id, w.assignment.attempt) for w in self._workers
                     if w.assignment is not None and w.assignment.killed_for is None
                     and w.process.is_alive()]
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
        busy = [w for w in self._workers if w.assignment is not None]
        if not busy:
            return
        now = time.monotonic()
        grace = self._settings.cancel_grace_s
        unflagged = [w.assignment.job_id for w in busy if w.assignment.cancel_deadline is None]
        if unflagged:
            with self._sessions.read() as session:
                flagged = set(session.scalars(
                    select(Job.id).where(Job.id.in_(unflagged),
                                         Job.cancel_requested_at.is_not(None))))
            for worker in busy:
                if worker.assignment.job_id in flagged:
                    worker.assignment.cancel_deadline = now + grace
        for worker in busy:
            assignment = worker.assignment
            if assignment.killed_for is not None:
                continue
            if assignment.cancel_deadline is not None and now > assignment.cancel_deadline:
                assignment.killed_for = "cancel"
            elif (assignment.time_limit_s is not None
                  and now > assignment.started + assignment.time_limit_s + grace):
                assignment.killed_for = "time_limit"
            else:
                continue
            logger.warning("job %s: worker %d (pid %d) did not stop within %g s; killing it",
                           assignment.job_id, worker.index, worker.process.pid, grace)
            worker.process.kill()
