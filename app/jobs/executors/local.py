"""The local executor: :class:`ProcessExecutor`, N long-lived worker processes on this
machine, spawned (never forked), one attempt each at a time (the default,
``SVMSVC_EXECUTOR=local``).  The interface it implements is
:class:`~app.jobs.executors.interface.Executor`.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait

from app.core.config import Settings
from app.jobs.executors.interface import Assignment, Ended, Waitable, WorkerInfo
from app.jobs.state import Claim
from app.jobs.worker import WorkerConfig, worker_main
from app.metrics import ServiceMetrics

logger = logging.getLogger("svmsvc.pool")

RESPAWN_DELAY_S = 1.0
"""Pause before replacing a worker that died before it was ever ready; it doubles with each
such death in a row (a worker that cannot start), up to :data:`MAX_RESPAWN_DELAY_S`."""

MAX_RESPAWN_DELAY_S = 60.0

STOP_TIMEOUT_S = 5.0


@dataclass
class _Worker:
    index: int
    process: multiprocessing.process.BaseProcess
    connection: Connection
    ready: bool = False
    assignment: Assignment | None = None
    started: float = field(default_factory=time.monotonic)
    heard: float = field(default_factory=time.monotonic)  # its warm-up's last progress report
    state: str | None = "starting"  # its warm-up's progress, until it is ready
    hung: bool = False  # killed for reporting no warm-up progress within the deadline
    warming: str | None = None  # the solver whose kernels it compiles while idle
    compiled: list[str] = field(default_factory=list)  # the solvers whose own kernels it has
    # its CPU seconds and when they were read, once past the warm-up deadline without a
    # report (a compiling worker uses CPU; one hung waits): None until then
    cpu_seen: tuple[float, float] | None = None


#: How long a worker past its warm-up deadline is watched for CPU use before it is judged, and
#: the share of a core it must use meanwhile to count as compiling.  A compile step on a loaded
#: 2-core machine got about 5% of a core (the core kernels: 50 CPU-s in 907 s at load 20); a
#: worker hung in a wait wakes a few times a second for microseconds (well under 0.1%).
CPU_WATCH_S = 10.0
CPU_BUSY_SHARE = 0.01


def process_cpu_seconds(pid: int) -> float | None:
    """The CPU seconds (user and system) process ``pid`` has used, from ``/proc``; None where
    there is no ``/proc`` or the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class ProcessExecutor:
    """N long-lived worker processes, spawned (never forked), one attempt each at a time;
    a worker that dies is replaced (after a growing delay if it never got ready)."""

    def __init__(self, settings: Settings, metrics: ServiceMetrics):
        self._settings = settings
        self._metrics = metrics
        self._context = multiprocessing.get_context("spawn")
        self._workers: list[_Worker] = []
        self._respawn_at: dict[int, float] = {}
        self._failed_starts: dict[int, int] = {}  # deaths before ready, in a row, per slot
        self._lock = threading.Lock()
        self._stopping = False

    def start(self) -> None:
        for index in range(self._settings.workers):
            self._workers.append(self._spawn(index))
        logger.info("worker pool started: %d workers, %d Numba threads each",
                    self._settings.workers, self._settings.worker_threads)

    def stop(self) -> list[Assignment]:
        self._stopping = True
        with self._lock:
            workers = list(self._workers)
        running = [w.assignment for w in workers if w.assignment is not None]
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
        return running

    def _idle_workers(self) -> list[_Worker]:
        return [w for w in self._workers
                if w.ready and w.assignment is None and w.warming is None
                and w.process.is_alive()]

    def idle(self) -> int:
        return len(self._idle_workers())

    def submit(self, claim: Claim) -> None:
        worker = self._idle_workers()[0]
        with self._lock:
            worker.assignment = Assignment(claim.job_id, claim.attempt, claim.time_limit_s)
        try:
            worker.connection.send(("run", str(claim.job_id), claim.attempt))
        except OSError:
            pass  # it just died: wait() reports the attempt as ended
        logger.info("job %s attempt %d -> worker %d", claim.job_id, claim.attempt,
                    worker.index)

    def kill(self, assignment: Assignment) -> None:
        for worker in self._workers:
            if worker.assignment is assignment:
                logger.warning("job %s: worker %d (pid %d) did not stop within %g s; "
                               "killing it", assignment.job_id, worker.index,
                               worker.process.pid, self._settings.cancel_grace_s)
                worker.process.kill()

    def running(self) -> list[Assignment]:
        return [w.assignment for w in self._workers if w.assignment is not None]

    def snapshot(self) -> list[WorkerInfo]:
        with self._lock:
            infos = []
            for w in self._workers:
                alive = w.process.is_alive()  # a dead worker is never ready, reaped or not
                state = w.state
                if w.ready:
                    state = (None if w.warming is None else
                             f"compiling solver {w.warming}'s kernels while idle")
                infos.append(WorkerInfo(w.index, w.process.pid, alive, w.ready and alive,
                                        w.assignment.job_id if w.assignment else None, state,
                                        tuple(w.compiled)))
            return infos

    def wait(self, timeout: float, wake: Waitable) -> list[Ended]:
        self._respawn()
        self._kill_hung()
        by_connection = {w.connection: w for w in self._workers}
        by_sentinel = {w.process.sentinel: w for w in self._workers}
        ready = wait([wake, *by_connection, *by_sentinel], timeout)
        for connection in ready:
            worker = by_connection.get(connection)
            if worker is not None:
                self._receive(worker)
        ended = []
        for sentinel in ready:
            worker = by_sentinel.get(sentinel)
            if worker is not None:
                ended += self._exited(worker)
        return ended

    def _kill_hung(self) -> None:
        """Kill the workers not ready that reported no warm-up progress for
        ``worker_warm_up_timeout_s`` and then, watched for ``CPU_WATCH_S``, used less than
        ``CPU_BUSY_SHARE`` of a core (hung in their imports or warm-up; a worker compiling, or
        waiting for another process's compilation, reports every step and every few seconds,
        and a step that compiles for longer uses CPU, so it is never killed for being slow);
        their exit replaces them like any death before ready."""
        limit = self._settings.worker_warm_up_timeout_s
        now = time.monotonic()
        for worker in self._workers:
            if worker.ready or worker.hung or now - worker.heard <= limit:
                continue
            self._receive(worker)  # a report or a "ready" that arrived just now
            if worker.ready or not worker.process.is_alive() or now - worker.heard <= limit:
                continue
            used = process_cpu_seconds(worker.process.pid)
            if used is not None:
                if worker.cpu_seen is None:  # past the deadline: watch it from now
                    worker.cpu_seen = (used, now)
                    continue
                seen, since = worker.cpu_seen
                if now - since < CPU_WATCH_S:
                    continue
                worker.cpu_seen = None
                if used - seen >= CPU_BUSY_SHARE * (now - since):
                    # one step compiling for longer than the limit on a loaded machine (the
                    # core kernels took 907 s at load 20 on 2 cores; issue 48's first
                    # measurement killed such a worker and started it over): it computes,
                    # so it is heard
                    worker.heard = now
                    continue
            worker.hung = True
            logger.error("worker %d (pid %d) reported no warm-up progress for %.0f s (%.0f s "
                         "after it started; last: %s): hung in its warm-up (limit "
                         "SVMSVC_WORKER_WARM_UP_TIMEOUT_S = %g s); killing and replacing it",
                         worker.index, worker.process.pid, now - worker.heard,
                         now - worker.started, worker.state, limit)
            worker.process.kill()

    def _spawn(self, index: int) -> _Worker:
        config = WorkerConfig(
            index=index,
            database_url=self._settings.sqlalchemy_url,
            datasets=self._settings.dataset_location,
            threads=self._settings.worker_threads,
            log_level=self._settings.log_level,
            max_model_bytes=self._settings.model_cache_bytes,
            chunk_rows=self._settings.prediction_chunk_rows,
            owner_model_bytes=self._settings.max_model_bytes_per_owner,
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
        return _Worker(index, process, parent_end)

    def _receive(self, worker: _Worker) -> None:
        try:
            while worker.connection.poll():
                message = worker.connection.recv()
                if message[0] == "progress":
                    _, done, total, what = message
                    with self._lock:
                        worker.heard = time.monotonic()
                        worker.state = (f"warming up kernels: {done} of {total} ({what})"
                                        if done else what)
                elif message[0] == "ready":
                    with self._lock:
                        first = not any(w.ready for w in self._workers)
                        worker.ready = True
                        worker.state = None
                    self._failed_starts.pop(worker.index, None)
                    logger.info("worker %d ready (pid %d)", worker.index, message[1])
                    if first:  # what /readyz says from now on (issue 48: the log and it agree)
                        logger.info("svmsvc ready: worker %d can run jobs (GET /readyz "
                                    "answers 200)", worker.index)
                elif message[0] == "warming":
                    with self._lock:
                        worker.warming = message[1]
                elif message[0] == "compiled":  # a solver's own kernels: /readyz lists it
                    with self._lock:
                        worker.compiled.append(message[1])
                elif message[0] == "idle":
                    with self._lock:
                        worker.warming = None
                elif message[0] == "training":
                    # the job's kernels are compiled: its time limit starts now
                    with self._lock:
                        if worker.assignment is not None \
                                and str(worker.assignment.job_id) == message[1]:
                            worker.assignment.started = time.monotonic()
                elif message[0] == "done":
                    _, job_id, status = message
                    with self._lock:
                        worker.assignment = None
                    if status is not None:
                        self._metrics.jobs_finished.labels(status=status).inc()
        except (EOFError, OSError):
            pass  # the process ended; its sentinel reports it

    def _exited(self, worker: _Worker) -> list[Ended]:
        worker.process.join()
        exit_code = worker.process.exitcode
        assignment = worker.assignment
        if worker.hung:
            reason = "hung"
        elif assignment is not None and assignment.killed_for:
            reason = "killed"
        else:
            reason = "crashed"
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
        return [] if assignment is None else [Ended(assignment, exit_code)]

    def _respawn(self) -> None:
        now = time.monotonic()
        for index, when in sorted(self._respawn_at.items()):
            if when <= now and not self._stopping:
                del self._respawn_at[index]
                worker = self._spawn(index)
                with self._lock:
                    self._workers.append(worker)
                    self._workers.sort(key=lambda w: w.index)
