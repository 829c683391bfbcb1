"""Jobs on a Dask cluster: :class:`DaskExecutor`, the executor of ``SVMSVC_EXECUTOR=dask``.

The dispatcher (:mod:`app.jobs.dispatcher`) claims a job in the database exactly as for the local
pool and hands the claim to this executor, which submits :func:`run_dask_job` to the scheduler
at ``SVMSVC_DASK_SCHEDULER``.  On a Dask worker the task

* warms the kernels up once per worker process (:class:`SvmsvcWorkerPlugin`, registered on
  the scheduler so every worker, present or future, runs it when it starts; the task calls the
  same idempotent warm-up in case it runs first);
* records where the attempt started, once (:func:`app.jobs.state.mark_started`): Dask
  reschedules the task of a worker that died on another worker, and that second run must not
  start the attempt again -- it reports the first run lost and the dispatcher re-queues the
  job (within ``max_attempts``) or fails it with the reason;
* runs the job body the local worker runs, :func:`app.jobs.worker.run_job` -- dataset from
  the shared store, ``solvers.train`` with the database monitor (log batches, cancel flag,
  time limit), model and final state written under the attempt fence -- with its Numba
  threads set to the job's ``threads`` resource;
* for a job on a sharded dataset (:mod:`app.shards`), reads the shards on the cluster's
  workers (:func:`sharded_dataset`: one partition actor per shard, over every worker) and
  trains data-parallel on them with the same body, monitor and records (each iteration's
  ``reductions``, ``bytes_moved`` and ``communication_seconds`` in its extras).

A job asks for ``resources={"threads": k}`` (``SVMSVC_DASK_THREADS_PER_JOB``): a worker started
with ``--resources threads=N`` runs at most ``N // k`` jobs at once, so two parallel solvers
never share a core unknowingly; the executor offers as many slots as the workers' resources
allow.  A Dask task thread cannot be killed: cancellation and time limits are cooperative
through the monitor, and a task that does not stop within ``cancel_grace_s`` is abandoned --
the dispatcher writes the job's final state with that reason at once, no longer renews its
lease, and whatever the thread writes afterwards is refused by the attempt fence; its slot
stays counted until the thread ends.  The dispatcher renews the leases of the attempts whose
task is pending or running; a task the scheduler loses (its workers died, the scheduler
restarted, the connection dropped) is reported ended with ``retry``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import multiprocessing
import threading
import time
import uuid
from dataclasses import dataclass
from multiprocessing.connection import wait

from distributed import Client, WorkerPlugin

from app.core.config import Settings
from app.jobs.executors.interface import Assignment, Ended, Waitable, WorkerInfo
from app.jobs.state import Claim
from app.metrics import ServiceMetrics

logger = logging.getLogger("svmsvc.dask")

CONNECT_TIMEOUT_S = 10.0
"""How long one attempt to reach the scheduler may take."""

RECONNECT_S = 5.0
"""Pause between attempts to reach a scheduler that did not answer."""

INFO_INTERVAL_S = 1.0
"""How often the executor asks the scheduler for its workers and their resources."""

RESOURCE = "threads"
"""The Dask worker resource a job takes, one unit per Numba thread it uses."""


# -- the worker side -------------------------------------------------------------------------

@dataclass(frozen=True)
class DaskTask:
    """What a task needs to run one attempt (picklable: it travels to the worker)."""

    job_id: uuid.UUID
    attempt: int
    database_url: str
    datasets: str  # where the dataset files live (app.storage.open_store)
    threads: int
    max_model_bytes: int | None = None  # SVMSVC_MODEL_CACHE_BYTES (app.jobs.worker.run_job)
    shard_restarts: int | None = None  # SVMSVC_SHARD_RESTARTS (None: the library's default)
    chunk_rows: int | None = None  # SVMSVC_PREDICTION_CHUNK_ROWS (prediction jobs)
    owner_model_bytes: int | None = None  # SVMSVC_MAX_MODEL_BYTES_PER_OWNER (app.quotas)


_warm_lock = threading.Lock()
_warmed_up = False
_connections_lock = threading.Lock()
_connections: dict[tuple[str, str], tuple[object, object]] = {}


def warm_up_worker() -> float | None:
    """Compile (or load from Numba's cache) the kernels in this worker process, once;
    returns the seconds it took, None when it was already done."""
    global _warmed_up
    with _warm_lock:
        if _warmed_up:
            return None
        from solvers import warm_up

        seconds = warm_up()
        _warmed_up = True
        return seconds


def _worker_connections(database_url: str, datasets: str):
    """The database sessions and dataset store of this worker process for one service
    (created once, shared by the worker's task threads)."""
    from app.db.session import Sessions, create_db_engine
    from app.storage import open_store

    key = (database_url, datasets)
    with _connections_lock:
        if key not in _connections:
            engine = create_db_engine(database_url, pool_size=4)
            _connections[key] = (Sessions(engine), open_store(datasets))
        return _connections[key]


class SvmsvcWorkerPlugin(WorkerPlugin):
    """Warms the kernels up when a worker starts (in a thread: the worker's event loop keeps
    answering the scheduler meanwhile)."""

    name = "svmsvc"

    async def setup(self, worker) -> None:
        seconds = await asyncio.get_running_loop().run_in_executor(None, warm_up_worker)
        if seconds is not None:
            logger.info("worker %s: kernels warmed up in %.1f s", worker.address, seconds)


@contextlib.contextmanager
def sharded_dataset(source: dict, restarts: int | None = None):
    """A sharded dataset's rows read on this cluster's workers for one job
    (``solvers.distributed.read_svmlight``: a partition actor per shard, shards spread over
    every worker) and released when the job ends.  The task leaves its worker's thread pool
    meanwhile (``worker_client`` secedes): the partitions' actors are created on the workers'
    threads, this one's included, and the task only drives their rounds.  ``restarts``
    (``SVMSVC_SHARD_RESTARTS``): how often the solve resumes after a worker holding
    partitions is lost, the partitions read again from their shards on the workers left
    (the job's message says so: the result's warnings)."""
    from distributed import worker_client

    from solvers.distributed import read_svmlight

    with worker_client() as client:
        dataset = read_svmlight(client, source["shards"], n_features=source.get("n_features"),
                                zero_based=bool(source.get("zero_based", False)),
                                restarts=restarts)
        try:
            yield dataset
        finally:
            dataset.close()


def run_dask_job(task: DaskTask) -> dict:
    """The task of one attempt: returns ``{"status": final status written or None,
    "rerun_after": None, or the message of the run that already started this attempt}``."""
    import numba
    from distributed import get_worker
    from distributed.core import Status

    from app.jobs.state import mark_started
    from app.jobs.worker import run_job

    worker = get_worker()
    warm_up_worker()
    sessions, store = _worker_connections(task.database_url, task.datasets)
    with sessions.write() as session:
        first, previous = mark_started(session, task.job_id, task.attempt,
                                       f"running on Dask worker {worker.address}")
    if not first:
        return {"status": None, "rerun_after": previous}
    # Per thread in Numba: the job's kernels use its ``threads`` resource, at most what the
    # worker process was started with (NUMBA_NUM_THREADS).
    numba.set_num_threads(max(1, min(task.threads, numba.config.NUMBA_NUM_THREADS)))
    status = run_job(sessions, store, task.job_id, task.attempt,
                     lambda: worker.status in (Status.running, Status.paused),
                     task.max_model_bytes,
                     sharded=functools.partial(sharded_dataset, restarts=task.shard_restarts),
                     chunk_rows=task.chunk_rows,
                     owner_model_bytes=task.owner_model_bytes)
    return {"status": status, "rerun_after": None}


# -- the service side ------------------------------------------------------------------------

class DaskExecutor:
    """Attempts as tasks on a Dask cluster (see the module docstring)."""

    def __init__(self, settings: Settings, metrics: ServiceMetrics):
        self._settings = settings
        self._metrics = metrics
        self._threads = settings.job_threads
        self._client: Client | None = None
        self._scheduler_id: str | None = None
        self._workers: dict[str, dict] = {}
        self._next_connect = 0.0
        self._next_info = 0.0
        self._active: dict[str, tuple[Assignment, object]] = {}
        self._abandoned: dict[str, object] = {}
        self._ended: list[Ended] = []
        self._done: collections.deque[str] = collections.deque()
        self._done_reader, self._done_writer = multiprocessing.get_context("spawn").Pipe(
            duplex=False)
        self._lock = threading.Lock()
        self._warned_no_slots = False
        self._stopped = False

    # -- life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Nothing to start here: the dispatcher thread connects to the scheduler (and
        reconnects after it restarted) in :meth:`wait`, so a scheduler that is not up yet
        delays the jobs, not the service."""
        logger.info("Dask executor: scheduler %s, %d thread(s) per job",
                    self._settings.dask_scheduler, self._threads)

    def stop(self) -> list[Assignment]:
        self._stopped = True
        with self._lock:
            running = [assignment for assignment, _ in self._active.values()]
            self._active.clear()
            self._abandoned.clear()
        if self._client is not None:
            try:
                self._client.close(timeout=CONNECT_TIMEOUT_S)
            except Exception:  # the scheduler is gone: nothing to close cleanly
                logger.warning("Dask client did not close cleanly", exc_info=True)
            self._client = None
        self._done_reader.close()
        self._done_writer.close()
        return running

    # -- slots -----------------------------------------------------------------------------
    def _slots(self) -> int:
        return sum(int(info.get("resources", {}).get(RESOURCE, 0) // self._threads)
                   for info in self._workers.values())

    def idle(self) -> int:
        if self._client is None or self._client.status != "running":
            return 0  # not connected, or reconnecting after losing the scheduler
        slots = self._slots()
        if not slots and self._workers and not self._warned_no_slots:
            self._warned_no_slots = True
            logger.error("no Dask worker offers %d unit(s) of the resource %r a job needs: "
                         "start the workers with --resources %s=N (N >= %d)", self._threads,
                         RESOURCE, RESOURCE, self._threads)
        with self._lock:
            return max(0, slots - len(self._active) - len(self._abandoned))

    def submit(self, claim: Claim) -> None:
        assignment = Assignment(claim.job_id, claim.attempt, claim.time_limit_s)
        key = f"svmsvc-job-{claim.job_id}-{claim.attempt}"
        task = DaskTask(claim.job_id, claim.attempt, self._settings.sqlalchemy_url,
                        self._settings.dataset_location, self._threads,
                        self._settings.model_cache_bytes, self._settings.shard_restarts,
                        self._settings.prediction_chunk_rows,
                        self._settings.max_model_bytes_per_owner)
        try:
            future = self._client.submit(run_dask_job, task, key=key, pure=False, retries=0,
                                         resources={RESOURCE: self._threads})
        except Exception as exc:  # the scheduler just went away
            logger.warning("job %s attempt %d: submission failed: %s", claim.job_id,
                           claim.attempt, exc)
            with self._lock:
                self._ended.append(Ended(assignment, None, retry=True,
                                         reason=f"the Dask scheduler refused the task ({exc})"))
            return
        with self._lock:
            self._active[key] = (assignment, future)
        future.add_done_callback(lambda _, key=key: self._notify(key))
        logger.info("job %s attempt %d -> Dask task %s", claim.job_id, claim.attempt, key)

    def _notify(self, key: str) -> None:
        """A task ended (called on the client's event-loop thread)."""
        with self._lock:
            self._done.append(key)
        self._poke()

    def _poke(self) -> None:
        """Wake :meth:`wait` up."""
        try:
            self._done_writer.send_bytes(b"")
        except OSError:
            pass  # stopped

    def kill(self, assignment: Assignment) -> None:
        """Abandon the task (a Dask task thread cannot be killed): the dispatcher settles the
        job with the reason now; the thread's later writes are fenced off."""
        grace = self._settings.cancel_grace_s
        with self._lock:
            for key, (candidate, future) in list(self._active.items()):
                if candidate is assignment:
                    del self._active[key]
                    self._abandoned[key] = future
                    break
            else:
                return
        what = ("cancelled by request" if assignment.killed_for == "cancel" else
                f"time limit of {assignment.time_limit_s:g} s reached")
        logger.warning("job %s: Dask task %s did not stop within %g s; abandoned",
                       assignment.job_id, key, grace)
        with self._lock:
            self._ended.append(Ended(assignment, None, reason=(
                f"{what}; the Dask task did not stop within {grace:g} s and was abandoned "
                f"(its later writes are refused)")))
        self._poke()

    def running(self) -> list[Assignment]:
        with self._lock:
            return [assignment for assignment, _ in self._active.values()]

    def snapshot(self) -> list[WorkerInfo]:
        """One entry per slot (``threads // threads per job`` per Dask worker); the running
        jobs are listed on the first slots (the scheduler, not the executor, places them)."""
        with self._lock:
            jobs = [assignment.job_id for assignment, _ in self._active.values()]
        infos = []
        for address in sorted(self._workers):
            resource = self._workers[address].get("resources", {}).get(RESOURCE, 0)
            for _ in range(max(1, int(resource // self._threads))):
                ready = resource >= self._threads
                job = jobs.pop(0) if jobs and ready else None
                infos.append(WorkerInfo(len(infos), None, True, ready, job))
        return infos

    # -- waiting ---------------------------------------------------------------------------
    def wait(self, timeout: float, wake: Waitable) -> list[Ended]:
        if self._stopped:  # the dispatcher outlived stop() (it was connecting)
            return []
        self._maintain()
        ready = wait([wake, self._done_reader], timeout)
        if self._done_reader in ready:
            while self._done_reader.poll():
                self._done_reader.recv_bytes()
        with self._lock:
            ended, self._ended = self._ended, []
            done = list(self._done)
            self._done.clear()
        for key in done:
            ended += self._finished(key)
        return ended

    def _finished(self, key: str) -> list[Ended]:
        with self._lock:
            if self._abandoned.pop(key, None) is not None:
                return []  # its job was settled when it was abandoned
            entry = self._active.pop(key, None)
        if entry is None:
            return []
        assignment, future = entry
        if future.status == "finished":
            result = future.result()
            if result["rerun_after"] is not None:
                return [Ended(assignment, None, retry=True, reason=(
                    f"the Dask worker died during the attempt (it was "
                    f"{result['rerun_after']})"))]
            if result["status"] is not None:
                self._metrics.jobs_finished.labels(status=result["status"]).inc()
            return []
        if future.status == "error":
            exc = future.exception()
            if type(exc).__name__ == "KilledWorker":
                reason = "Dask workers died running the job (the scheduler gave up on it)"
            else:
                from app.jobs.state import describe_exception

                reason = f"the Dask task failed: {describe_exception(exc)}"
            return [Ended(assignment, None, retry=True, reason=reason)]
        # No new submissions until the scheduler describes its workers again: a job
        # re-queued now must not be lost to the same outage.
        self._workers = {}
        self._next_info = 0.0
        return [Ended(assignment, None, retry=True, reason=(
            f"the Dask scheduler lost the task ({future.status}: scheduler restart or lost "
            f"connection)"))]

    def _maintain(self) -> None:
        """Connect to the scheduler when not connected; refresh the workers' list; register
        the worker plugin on a scheduler that has not seen it (a new or restarted one)."""
        now = time.monotonic()
        if self._client is not None and self._client.status in ("closing", "closed"):
            logger.warning("lost the Dask scheduler; reconnecting")
            self._client = None
            self._workers = {}
        if self._client is None:
            if now < self._next_connect:
                return
            self._next_connect = now + RECONNECT_S
            try:
                self._client = Client(self._settings.dask_scheduler,
                                      timeout=CONNECT_TIMEOUT_S, set_as_default=False)
            except Exception as exc:
                logger.warning("Dask scheduler %s not reachable: %s",
                               self._settings.dask_scheduler, exc)
                return
            self._next_info = 0.0
        if now < self._next_info:
            return
        self._next_info = now + INFO_INTERVAL_S
        client = self._client
        try:
            identity = client.sync(client.scheduler.identity, n_workers=-1,
                                   callback_timeout=CONNECT_TIMEOUT_S)
        except Exception as exc:
            logger.warning("Dask scheduler did not describe its workers: %s", exc)
            self._workers = {}
            return
        self._workers = dict(identity.get("workers", {}))
        if identity.get("id") != self._scheduler_id:
            self._scheduler_id = identity.get("id")
            logger.info("Dask scheduler %s (%s): %d worker(s), %d job slot(s)",
                        self._settings.dask_scheduler, self._scheduler_id, len(self._workers),
                        self._slots())
            threading.Thread(target=self._register_plugin, args=(client,),
                             name="svmsvc-dask-plugin", daemon=True).start()

    @staticmethod
    def _register_plugin(client: Client) -> None:
        try:
            client.register_plugin(SvmsvcWorkerPlugin())
        except Exception:  # the task warms up by itself: only the head start is lost
            logger.warning("could not register the worker plugin", exc_info=True)
